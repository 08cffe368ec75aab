"""Which engine build a machine gets, and the check that a file is that build."""

from __future__ import annotations

import hashlib
from pathlib import Path
import platform

from packaging.tags import Tag, parse_tag
import pytest

from botpsy_runtime import worker
from botpsy_runtime.engine_builds import (
    ENGINE_BUILDS,
    LLAMA_CPP_PYTHON_VERSION,
    RELEASE_URL,
    EngineBuild,
    EngineInstallError,
    HostPlatform,
    choose_build,
    detect_platform,
    has_compiler,
    verify,
)
from botpsy_runtime.errors import EngineUnavailableError

ALPINE_PI = HostPlatform(
    "Linux",
    "aarch64",
    "musl 1.2.5",
    "3.14.2",
    frozenset(parse_tag("cp314-cp314-musllinux_1_2_aarch64") | parse_tag("py3-none-musllinux_1_2_aarch64")),
)
ALPINE_PC = HostPlatform(
    "Linux", "x86_64", "musl 1.2.5", "3.14.2", frozenset(parse_tag("py3-none-musllinux_1_1_x86_64"))
)
DEBIAN_PC = HostPlatform(
    "Linux", "x86_64", "glibc 2.41", "3.14.2", frozenset(parse_tag("py3-none-manylinux_2_41_x86_64"))
)


def test_published_builds_are_one_per_architecture_for_musl() -> None:
    names = [build.filename for build in ENGINE_BUILDS]
    assert sorted(names) == sorted(
        f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}-py3-none-musllinux_1_2_{arch}.whl"
        for arch in ("x86_64", "aarch64")
    )
    for build in ENGINE_BUILDS:
        assert build.size > 0
        assert len(build.sha256) == 64
        assert int(build.sha256, 16) > 0
        assert build.url == f"{RELEASE_URL}/{build.filename}"
        assert RELEASE_URL.startswith("https://github.com/botpsy/botpsy-ha/releases/download/engine-")


def test_a_build_goes_to_the_platform_its_tags_name() -> None:
    pi = choose_build(ALPINE_PI)
    assert pi is not None
    assert pi.filename.endswith("musllinux_1_2_aarch64.whl")
    assert Tag("py3", "none", "musllinux_1_2_aarch64") in pi.tags
    # musl 1.1 cannot run a musllinux_1_2 build; glibc has none: it builds from source.
    assert choose_build(ALPINE_PC) is None
    assert choose_build(DEBIAN_PC) is None
    assert choose_build(ALPINE_PI, ()) is None


def test_platform_says_what_decides_the_build() -> None:
    assert str(ALPINE_PI) == "Linux aarch64, musl 1.2.5, Python 3.14.2"
    assert ALPINE_PI.musl
    assert not DEBIAN_PC.musl
    host = detect_platform()  # this machine: glibc Linux
    assert host.machine == platform.machine()
    assert host.libc.startswith("glibc ")
    assert not host.musl
    assert Tag("py3", "none", "any") in host.tags
    assert choose_build(host) is None


def test_compiler_is_looked_up_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not has_compiler()
    (tmp_path / "g++").write_text("#!/bin/sh\n")
    (tmp_path / "g++").chmod(0o755)
    assert has_compiler()


def test_only_the_exact_file_passes(tmp_path: Path) -> None:
    data = b"wheel bytes"
    build = EngineBuild("x.whl", len(data), hashlib.sha256(data).hexdigest())
    path = tmp_path / "x.whl"
    path.write_bytes(data)
    verify(path, build)
    path.write_bytes(b"WHEEL BYTES")
    with pytest.raises(EngineInstallError, match="SHA-256") as err:
        verify(path, build)
    assert err.value.reason == "engine_checksum"
    # An install error is an unavailable engine: its entry is set up again later.
    assert isinstance(err.value, EngineUnavailableError)
    path.write_bytes(data + b"!")
    with pytest.raises(EngineInstallError, match="12 bytes") as err:
        verify(path, build)
    assert err.value.reason == "engine_checksum"
    with pytest.raises(EngineInstallError) as err:
        verify(tmp_path / "missing.whl", build)
    assert err.value.reason == "engine_unreadable"


def test_worker_names_the_cpu_backend_it_loaded() -> None:
    """scripts/setup's build has the CPU backend linked in: nothing to load, its library named.

    (The musl builds' variant selection runs in scripts/test-engine.)"""
    assert worker.load_cpu_backend().startswith("libggml-cpu.so")
