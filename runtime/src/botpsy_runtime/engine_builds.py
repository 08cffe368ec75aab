"""Which llama.cpp build this machine needs, and whether a file is that build.

The embedded engine runs llama-cpp-python. PyPI has only its source, which needs a C++
compiler: fine on most Linux hosts and dev machines, absent on Home Assistant OS and the
HA container (Alpine Linux, musl). For those, the project publishes one wheel per platform
(scripts/build-engine), pinned here by name, size and SHA-256: a wheel is chosen by the tags
this Python accepts (packaging.tags, as pip and uv choose), so a wheel for another
architecture, libc or Python ABI is never installed. Pure logic: no Home Assistant import.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
import hashlib
import os
from pathlib import Path
import platform
import sys

from packaging.tags import Tag, parse_tag, sys_tags

from .errors import EngineUnavailableError

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
REQUIREMENT = f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}"
RELEASE_URL = f"https://github.com/botpsy/botpsy-ha/releases/download/engine-{LLAMA_CPP_PYTHON_VERSION}"
# A wheel placed here (in the configuration folder) is used instead of a download.
LOCAL_DIR = "botpsy/engine"


@dataclass(frozen=True, slots=True)
class EngineBuild:
    """One published wheel of llama-cpp-python with llama.cpp built in."""

    filename: str
    size: int
    sha256: str
    base_url: str = RELEASE_URL

    @property
    def url(self) -> str:
        """Where the release publishes the wheel."""
        return f"{self.base_url.rstrip('/')}/{self.filename}"

    @property
    def tags(self) -> frozenset[Tag]:
        """The platforms it runs on, from its file name (PEP 427)."""
        return parse_tag(self.filename.removesuffix(".whl").split("-", 2)[2])


# scripts/build-engine's output: llama.cpp for musl (HA OS, HA container), every CPU
# variant inside, the best chosen on the hub. Update with each engine release.
ENGINE_BUILDS: tuple[EngineBuild, ...] = (
    EngineBuild(
        f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}-py3-none-musllinux_1_2_aarch64.whl",
        5302702,
        "c46b165ebcbdcbb2d55b5d9e5a8c81bf6cec2dc969ce019735dd8e3a29b89234",
    ),
    EngineBuild(
        f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}-py3-none-musllinux_1_2_x86_64.whl",
        10012922,
        "afffe8465639b7f4b834ed543fe32c66fcce5837fce1d8b2d0a4f73bfb121a66",
    ),
)


class EngineInstallError(EngineUnavailableError):
    """The engine cannot be installed; `reason` names why (a translation key).

    An unavailable engine to its entry: set up again later, when the file may be there.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class HostPlatform:
    """What decides which build runs here."""

    system: str
    machine: str
    libc: str  # "glibc 2.41", "musl 1.2.5", or "" where unknown
    python: str
    tags: frozenset[Tag]

    @property
    def musl(self) -> bool:
        """Whether the C library is musl (HA OS, the HA container)."""
        return self.libc.startswith("musl")

    def __str__(self) -> str:
        libc = f", {self.libc}" if self.libc else ""
        return f"{self.system} {self.machine}{libc}, Python {self.python}"


def _libc() -> str:
    name, version = platform.libc_ver()
    if name:
        return f"{name} {version}".strip()
    # Python does not name musl; its loader does (/lib/ld-musl-<arch>.so.1).
    musl = sorted(Path("/lib").glob("ld-musl-*.so.1")) if sys.platform == "linux" else []
    return "musl" if musl else ""


def detect_platform() -> HostPlatform:
    """This machine: system, architecture, C library and the wheel tags it accepts."""
    tags = frozenset(sys_tags())
    libc = _libc()
    if not libc and any(tag.platform.startswith("musllinux_") for tag in tags):
        libc = "musl"
    if libc == "musl":
        versions = sorted(
            tuple(int(x) for x in tag.platform.split("_")[1:3]) for tag in tags if tag.platform.startswith("musllinux_")
        )
        libc = f"musl {'.'.join(map(str, versions[-1]))}" if versions else libc
    return HostPlatform(
        system=platform.system(),
        machine=platform.machine(),
        libc=libc,
        python=platform.python_version(),
        tags=tags,
    )


def choose_build(host: HostPlatform, builds: Iterable[EngineBuild] = ENGINE_BUILDS) -> EngineBuild | None:
    """The published build this Python installs, or None (then it is built from source)."""
    for build in builds:
        if build.tags & host.tags:
            return build
    return None


def has_compiler() -> bool:
    """Whether llama-cpp-python can be built from source here (HA OS and its container: no)."""
    paths = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    return any(os.access(os.path.join(d, name), os.X_OK) for d in paths for name in ("c++", "g++", "clang++"))


def sha256_of(path: Path) -> str:
    """The SHA-256 of the file at `path`, in hex, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, build: EngineBuild) -> None:
    """Raise EngineInstallError unless `path` is exactly `build` (size and SHA-256)."""
    try:
        size = path.stat().st_size
        digest = sha256_of(path) if size == build.size else ""
    except OSError as err:
        raise EngineInstallError("engine_unreadable", f"{path}: {err.strerror or err}") from err
    if size != build.size:
        raise EngineInstallError("engine_checksum", f"{path.name} has {size} bytes, the release {build.size}")
    if digest != build.sha256:
        raise EngineInstallError("engine_checksum", f"{path.name}: SHA-256 {digest}, the release {build.sha256}")
