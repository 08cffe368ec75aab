"""scripts/runtime_wheel.py finds what must not be in botpsy-runtime's wheel."""

from __future__ import annotations

from pathlib import Path
import tomllib
import zipfile

from scripts import runtime_wheel


def _wheel(folder: Path, files: dict[str, str]) -> Path:
    version = tomllib.loads((runtime_wheel.RUNTIME / "pyproject.toml").read_text())["project"]["version"]
    path = folder / f"botpsy_runtime-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for module in (runtime_wheel.RUNTIME / "src" / "botpsy_runtime").glob("*.py"):
            archive.writestr(f"botpsy_runtime/{module.name}", files.pop(module.name, module.read_text()))
        archive.writestr("botpsy_runtime/py.typed", "")
        archive.writestr(f"botpsy_runtime-{version}.dist-info/METADATA", f"Name: botpsy-runtime\nVersion: {version}\n")
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_the_trees_modules_make_a_good_wheel(tmp_path: Path) -> None:
    assert runtime_wheel.problems(_wheel(tmp_path, {})) == []


def test_tests_and_home_assistant_imports_are_found(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path,
        {"errors.py": "from homeassistant.core import HomeAssistant\n", "tests/test_x.py": "import pytest\n"},
    )
    assert runtime_wheel.problems(wheel) == [
        "tests/test_x.py: not the package's",
        "tests/test_x.py: a test",
        "botpsy_runtime/errors.py imports homeassistant.core",
    ]
