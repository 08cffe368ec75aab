"""Build botpsy-runtime's wheel (runtime/) and check what it holds.

``python scripts/runtime_wheel.py [OUT_DIR]`` builds the wheel (with ``python -m build``
where it is installed, else ``pip wheel --no-deps``) into OUT_DIR (out/runtime by default)
and checks it: named for runtime/pyproject.toml's version, holding every module of the
package and its py.typed, no tests, and no module that imports Home Assistant or the
integration. scripts/test runs it; the release workflow publishes the wheel it builds.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
import shutil
import subprocess
import sys
import tomllib
import zipfile

REPO = Path(__file__).resolve().parent.parent
RUNTIME = REPO / "runtime"
PACKAGE = "botpsy_runtime"
FORBIDDEN = ("homeassistant", "custom_components")


def build(out: Path) -> Path:
    """Build the wheel into `out` (emptied first); its path."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    # setuptools keeps build/lib between builds: a module deleted since would be packed again.
    shutil.rmtree(RUNTIME / "build", ignore_errors=True)
    if importlib.util.find_spec("build") is not None:
        command = [sys.executable, "-m", "build", "-q", "--wheel", "--outdir", str(out), str(RUNTIME)]
    else:
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(RUNTIME)]
    subprocess.run(command, check=True)
    wheels = list(out.glob("*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {out}, found {wheels}")
    return wheels[0]


def _imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return names


def problems(wheel: Path) -> list[str]:
    """What is wrong with the wheel (nothing: an empty list)."""
    project = tomllib.loads((RUNTIME / "pyproject.toml").read_text())["project"]
    found = []
    expected = f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"
    if wheel.name != expected:
        found.append(f"named {wheel.name}, not {expected}")
    modules = {f"{PACKAGE}/{p.name}" for p in (RUNTIME / "src" / PACKAGE).glob("*.py")}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        found += [f"{m} missing" for m in sorted(modules - names)]
        if f"{PACKAGE}/py.typed" not in names:
            found.append("py.typed missing")
        found += [
            f"{n}: not the package's" for n in sorted(names) if not n.startswith((f"{PACKAGE}/", "botpsy_runtime-"))
        ]
        found += [f"{n}: a test" for n in sorted(names) if "/tests/" in n or n.split("/")[-1].startswith("test_")]
        for name in sorted(n for n in names if n.endswith(".py")):
            bad = {i for i in _imports(archive.read(name).decode()) if i.split(".")[0] in FORBIDDEN}
            found += [f"{name} imports {i}" for i in sorted(bad)]
        metadata = archive.read(f"botpsy_runtime-{project['version']}.dist-info/METADATA").decode()
        if f"Version: {project['version']}" not in metadata:
            found.append("METADATA names another version")
    return found


def main() -> None:
    """Build the wheel, check it, print its path."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "out" / "runtime"
    wheel = build(out)
    if found := problems(wheel):
        raise SystemExit("botpsy-runtime wheel: " + "; ".join(found))
    print(wheel)


if __name__ == "__main__":
    main()
