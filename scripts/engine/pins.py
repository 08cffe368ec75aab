"""Write the engine wheels of out/engine/ into the pins the integration checks.

The integration installs a published wheel only if its name, size and SHA-256 are the ones
in `ENGINE_BUILDS` (runtime/src/botpsy_runtime/engine_builds.py). After
scripts/build-engine, this rewrites that tuple from the wheels and their SHA256SUMS (the
release workflow runs it, then proposes the change), so pins and release cannot drift.

`python -m scripts.engine.pins [DIR]`; `--tag` prints the release tag the pins point at.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import re

from botpsy_runtime.engine_builds import LLAMA_CPP_PYTHON_VERSION, RELEASE_URL, sha256_of

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "runtime" / "src" / "botpsy_runtime" / "engine_builds.py"
OUT = REPO / "out" / "engine"
# The tuple, from its annotation to its closing parenthesis at the start of a line.
_PINS = re.compile(r"^ENGINE_BUILDS: tuple\[EngineBuild, \.\.\.\] = \(\n.*?^\)\n", re.MULTILINE | re.DOTALL)


def release_tag() -> str:
    """The release the pinned URLs point at (the last part of RELEASE_URL)."""
    return RELEASE_URL.rstrip("/").rsplit("/", 1)[1]


def read_wheels(folder: Path) -> list[tuple[str, int, str]]:
    """(file name, size, sha256) of each wheel SHA256SUMS lists, checked against the file."""
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        raise SystemExit(f"{sums} is missing: run scripts/build-engine first")
    wheels = []
    for line in sums.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        path = folder / name
        if not name.startswith(f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}-"):
            raise SystemExit(f"{name} is not a build of llama-cpp-python {LLAMA_CPP_PYTHON_VERSION}")
        if not path.is_file() or sha256_of(path) != digest:
            raise SystemExit(f"{path} does not match its SHA256SUMS line")
        wheels.append((name, path.stat().st_size, digest))
    if not wheels:
        raise SystemExit(f"{sums} lists no wheel")
    return wheels


def pins_source(wheels: list[tuple[str, int, str]]) -> str:
    """The ENGINE_BUILDS tuple as engine_builds.py writes it."""
    lines = ["ENGINE_BUILDS: tuple[EngineBuild, ...] = ("]
    for name, size, digest in sorted(wheels):
        tail = name.removeprefix(f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}-")
        lines += [
            "    EngineBuild(",
            f'        f"llama_cpp_python-{{LLAMA_CPP_PYTHON_VERSION}}-{tail}",',
            f"        {size},",
            f'        "{digest}",',
            "    ),",
        ]
    return "\n".join([*lines, ")", ""])


def write_pins(folder: Path, package: Path = PACKAGE) -> bool:
    """Rewrite the pins in `package` from the wheels in `folder`; True if they changed."""
    source = package.read_text()
    if len(_PINS.findall(source)) != 1:
        raise SystemExit(f"{package}: no single ENGINE_BUILDS tuple to rewrite")
    updated = _PINS.sub(lambda _: pins_source(read_wheels(folder)), source)
    package.write_text(updated)
    return updated != source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=OUT)
    parser.add_argument("--tag", action="store_true", help="print the release tag and stop")
    args = parser.parse_args()
    if args.tag:
        print(release_tag())
        return
    changed = write_pins(args.folder)
    print(f"{PACKAGE.relative_to(REPO)}: pins {'updated' if changed else 'unchanged'}")


if __name__ == "__main__":
    main()
