"""scripts/engine/pins.py: the release's wheels become the pins the integration checks."""

from __future__ import annotations

import hashlib
from pathlib import Path
import shutil

import pytest

from botpsy_runtime.engine_builds import ENGINE_BUILDS, LLAMA_CPP_PYTHON_VERSION, RELEASE_URL
from scripts.engine.pins import PACKAGE, pins_source, release_tag, write_pins

NAME = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}-py3-none-musllinux_1_2_riscv64.whl"


def built(folder: Path, blob: bytes, listed: bytes | None = None) -> None:
    """A wheel in `folder` and the SHA256SUMS line build-engine writes for it."""
    (folder / NAME).write_bytes(blob)
    digest = hashlib.sha256(listed if listed is not None else blob).hexdigest()
    (folder / "SHA256SUMS").write_text(f"{digest}  {NAME}\n")


def test_the_pins_are_written_as_the_package_has_them() -> None:
    wheels = [(build.filename, build.size, build.sha256) for build in ENGINE_BUILDS]
    assert pins_source(wheels) in PACKAGE.read_text()


def test_a_new_build_replaces_the_pins(tmp_path: Path) -> None:
    package = tmp_path / "engine_builds.py"
    shutil.copy(PACKAGE, package)
    built(tmp_path, b"wheel" * 100)
    assert write_pins(tmp_path, package)
    source = package.read_text()
    assert "musllinux_1_2_riscv64.whl" in source
    assert hashlib.sha256(b"wheel" * 100).hexdigest() in source
    assert "        500,\n" in source
    assert ENGINE_BUILDS[0].sha256 not in source
    assert not write_pins(tmp_path, package)


def test_a_wheel_that_is_not_its_listed_file_is_refused(tmp_path: Path) -> None:
    package = tmp_path / "engine_builds.py"
    shutil.copy(PACKAGE, package)
    built(tmp_path, b"wheel", listed=b"another wheel")
    with pytest.raises(SystemExit, match="does not match"):
        write_pins(tmp_path, package)
    assert package.read_text() == PACKAGE.read_text()


def test_the_tag_is_the_one_the_pinned_urls_name() -> None:
    assert release_tag() == f"engine-{LLAMA_CPP_PYTHON_VERSION}"
    assert RELEASE_URL.endswith(release_tag())
