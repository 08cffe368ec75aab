"""Build llama.cpp for Home Assistant OS and its container (Alpine Linux, musl).

One wheel per platform, `llama_cpp_python-<version>-py3-none-musllinux_1_2_<arch>.whl`, into
out/engine/: llama-cpp-python's own, unchanged Python files plus llama.cpp built from the
sources vendored in its sdist (so the model architectures it knows are the ones the glibc
build from scripts/setup knows). The CPU backend is built once per instruction-set level
(GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS): on the hub, ggml scores each variant against the
CPU and loads the best that it can run, so an AVX-less Celeron and a Raspberry Pi 4 get a
baseline build and newer CPUs a faster one. The worker loads them (worker.py,
`load_cpu_backend`), as llama-cpp-python itself never does.

The cross compiler is zig (`ziglang` from PyPI): one self-contained package that targets
x86_64-linux-musl and aarch64-linux-musl from any Linux machine, with its C++ library linked
into each library, so the libraries need nothing on the hub but musl itself.

Reproducible: a pinned sdist (sha256) and zig version, fixed SOURCE_DATE_EPOCH, source paths
mapped away, stripped libraries and zip entries written sorted with fixed times and modes.

Run through scripts/build-engine; `python -m scripts.engine.build --help`.
"""

from __future__ import annotations

import argparse
import base64
from dataclasses import dataclass
import hashlib
import io
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

from botpsy_runtime.engine_builds import sha256_of

VERSION = "0.3.36"
SDIST = f"llama_cpp_python-{VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
ZIG_VERSION = "0.17.0"
# 2026-01-01T00:00:00Z: every zip entry's time, and SOURCE_DATE_EPOCH for the compilers.
SOURCE_DATE_EPOCH = 1767225600
MUSLLINUX = "musllinux_1_2"
TARGETS = {"x86_64": "x86_64-linux-musl", "aarch64": "aarch64-linux-musl"}
# Libraries the wheel holds besides the CPU variants (libggml-cpu-<variant>.so).
CORE_LIBS = ("libllama.so", "libggml.so", "libggml-base.so")

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "out" / "engine"


def default_cache() -> Path:
    if os.environ.get("BOTPSY_ENGINE_CACHE"):
        return Path(os.environ["BOTPSY_ENGINE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "botpsy" / "engine"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs: object) -> None:
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class Tools:
    cache: Path
    zig: Path
    source: Path  # the extracted sdist

    @property
    def llama_cpp(self) -> Path:
        return self.source / "vendor" / "llama.cpp"


def fetch_sdist(cache: Path) -> Path:
    sdist = cache / SDIST
    if not sdist.exists():
        log(f"downloading the llama-cpp-python {VERSION} sdist")
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             f"llama-cpp-python=={VERSION}", "-d", str(cache)])  # fmt: skip
    if (got := sha256_of(sdist)) != SDIST_SHA256:
        raise SystemExit(f"{sdist}: sha256 {got}, expected {SDIST_SHA256}")
    return sdist


def extract(sdist: Path, cache: Path) -> Path:
    source = cache / "src" / f"llama_cpp_python-{VERSION}"
    if not (source / "vendor" / "llama.cpp" / "CMakeLists.txt").exists():
        shutil.rmtree(source, ignore_errors=True)
        source.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as tar:
            tar.extractall(source.parent, filter="data")
    return source


def fetch_zig(cache: Path) -> Path:
    target = cache / f"zig-{ZIG_VERSION}"
    zig = target / "ziglang" / "zig"
    if not zig.exists():
        log(f"installing zig {ZIG_VERSION} (PyPI: ziglang)")
        run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target), f"ziglang=={ZIG_VERSION}"])
    return zig


# ggml asks for ARM variants as -march=armv8.2-a+dotprod+fp16; zig takes a CPU and features
# (-mcpu=generic+v8_2a+dotprod+fullfp16) and rejects -march for aarch64.
_MARCH_TO_MCPU = r"""for a do
  shift
  case "$a" in
    -march=armv*)
      spec=${a#-march=}; base=${spec%%+*}; feats=${spec#"$base"}
      ver=$(echo "$base" | sed 's/^armv\([0-9]\)\.\([0-9]\)-a$/v\1_\2a/; s/^armv\([0-9]\)-a$/v\1a/')
      feats=$(echo "$feats" | sed 's/+fp16/+fullfp16/g')
      set -- "$@" "-mcpu=generic+$ver$feats" ;;
    *) set -- "$@" "$a" ;;
  esac
done
"""


def toolchain(tools: Tools, arch: str, build: Path) -> Path:
    """Compiler wrappers and a CMake toolchain file for `arch`-linux-musl."""
    target = TARGETS[arch]
    bindir = build / "toolchain"
    bindir.mkdir(parents=True, exist_ok=True)
    for name, command in (("cc", "cc"), ("c++", "c++"), ("ar", "ar"), ("ranlib", "ranlib")):
        wrapper = bindir / name
        flags = f" -target {target}" if command in ("cc", "c++") else ""
        translate = _MARCH_TO_MCPU if arch == "aarch64" and command in ("cc", "c++") else ""
        wrapper.write_text(f'#!/bin/sh\n{translate}exec "{tools.zig}" {command}{flags} "$@"\n')
        wrapper.chmod(0o755)
    file = build / "toolchain.cmake"
    file.write_text(
        "\n".join(
            (
                "set(CMAKE_SYSTEM_NAME Linux)",
                f"set(CMAKE_SYSTEM_PROCESSOR {arch})",
                f'set(CMAKE_C_COMPILER "{bindir}/cc")',
                f'set(CMAKE_CXX_COMPILER "{bindir}/c++")',
                f'set(CMAKE_AR "{bindir}/ar" CACHE FILEPATH "")',
                f'set(CMAKE_RANLIB "{bindir}/ranlib" CACHE FILEPATH "")',
                "set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)",
                "set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)",
                "set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)",
                "",
            )
        )
    )
    return file


def build_arch(tools: Tools, arch: str, jobs: int) -> tuple[Path, float]:
    """Configure and build llama.cpp for `arch`; returns the folder of its libraries."""
    build = tools.cache / f"build-{arch}"
    build.mkdir(parents=True, exist_ok=True)
    toolchain_file = toolchain(tools, arch, build)
    env = {
        **os.environ,
        "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH),
        "ZIG_GLOBAL_CACHE_DIR": str(tools.cache / "zig-cache"),
        "ZIG_LOCAL_CACHE_DIR": str(tools.cache / "zig-cache"),
    }
    # Paths of this machine must not end up in the libraries (assert messages, debug info).
    prefix_map = f"-ffile-prefix-map={tools.source}=llama-cpp-python-{VERSION}"
    started = time.monotonic()
    cmake = build / "cmake"
    if not (cmake / "build.ninja").exists():
        run(
            [
                "cmake", "-G", "Ninja", "-S", str(tools.llama_cpp), "-B", str(cmake),
                f"-DCMAKE_TOOLCHAIN_FILE={toolchain_file}",
                "-DCMAKE_BUILD_TYPE=Release",
                f"-DCMAKE_C_FLAGS={prefix_map}",
                f"-DCMAKE_CXX_FLAGS={prefix_map}",
                "-DCMAKE_SHARED_LINKER_FLAGS=-s",
                "-DCMAKE_MODULE_LINKER_FLAGS=-s",
                # Plain file names (libllama.so, never .so.0): a wheel holds no symlinks.
                "-DCMAKE_PLATFORM_NO_VERSIONED_SONAME=ON",
                "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
                "-DCMAKE_INSTALL_RPATH=$ORIGIN",
                "-DBUILD_SHARED_LIBS=ON",
                "-DGGML_BACKEND_DL=ON",
                "-DGGML_CPU_ALL_VARIANTS=ON",
                "-DGGML_NATIVE=OFF",
                "-DGGML_OPENMP=OFF",  # ggml's own thread pool; zig has no libgomp
                "-DLLAMA_BUILD_COMMON=OFF",
                "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_TOOLS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF",
                "-DLLAMA_BUILD_SERVER=OFF",
                "-DLLAMA_BUILD_APP=OFF",
                "-DLLAMA_CURL=OFF",
                "-DLLAMA_OPENSSL=OFF",
                "-DLLAMA_BUILD_NUMBER=0",
                f"-DLLAMA_BUILD_COMMIT=llama-cpp-python-{VERSION}",
            ],
            env=env,
        )  # fmt: skip
    run(["nice", "-n", "19", "cmake", "--build", str(cmake), "-j", str(jobs)], env=env)
    return cmake / "bin", time.monotonic() - started


def libraries(bindir: Path) -> list[Path]:
    """The libraries the wheel ships: the core ones and every CPU variant."""
    variants = sorted(bindir.glob("libggml-cpu-*.so"))
    missing = [name for name in CORE_LIBS if not (bindir / name).is_file()]
    if missing or not variants:
        raise SystemExit(f"{bindir}: missing {missing or 'CPU variants'}")
    return [bindir / name for name in CORE_LIBS] + variants


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _zip_entry(name: str, executable: bool = False) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=time.gmtime(SOURCE_DATE_EPOCH)[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    info.create_system = 3  # Unix, whatever the building machine
    return info


def wheel(tools: Tools, arch: str, libs: list[Path], out: Path) -> Path:
    """The wheel: llama-cpp-python's Python files, its metadata, and `libs` in llama_cpp/lib/."""
    tag = f"py3-none-{MUSLLINUX}_{arch}"
    dist_info = f"llama_cpp_python-{VERSION}.dist-info"
    files: dict[str, tuple[bytes, bool]] = {}
    package = tools.source / "llama_cpp"
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(tools.source).as_posix()
        if path.is_file() and "__pycache__" not in path.parts and not relative.startswith("llama_cpp/lib/"):
            files[relative] = (path.read_bytes(), False)
    for lib in libs:
        files[f"llama_cpp/lib/{lib.name}"] = (lib.read_bytes(), True)
    files[f"{dist_info}/METADATA"] = ((tools.source / "PKG-INFO").read_bytes(), False)
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: botpsy-build-engine\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
        False,
    )
    files[f"{dist_info}/licenses/LICENSE.md"] = ((tools.source / "LICENSE.md").read_bytes(), False)
    files[f"{dist_info}/licenses/llama.cpp-LICENSE"] = ((tools.llama_cpp / "LICENSE").read_bytes(), False)
    build_info = {
        "llama_cpp_python": VERSION,
        "sdist_sha256": SDIST_SHA256,
        "compiler": f"zig {ZIG_VERSION}",
        "target": TARGETS[arch],
        "cpu_variants": [
            lib.name.removeprefix("libggml-cpu-").removesuffix(".so") for lib in libs if "-cpu-" in lib.name
        ],
    }
    files[f"{dist_info}/botpsy_engine.json"] = (
        json.dumps(build_info, indent=1, sort_keys=True).encode() + b"\n",
        False,
    )
    record = f"{dist_info}/RECORD"
    lines = [f"{name},{_record_hash(data)},{len(data)}" for name, (data, _) in sorted(files.items())]
    files[record] = ("\n".join([*lines, f"{record},,"]).encode() + b"\n", False)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"llama_cpp_python-{VERSION}-{tag}.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        # RECORD last, as installers expect; everything else sorted.
        for name in [*sorted(n for n in files if n != record), record]:
            data, executable = files[name]
            archive.writestr(_zip_entry(name, executable), data, compresslevel=9)
    path.write_bytes(buffer.getvalue())
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arches", nargs="*", default=list(TARGETS), choices=list(TARGETS), metavar="ARCH")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=default_cache())
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    cache: Path = args.cache
    cache.mkdir(parents=True, exist_ok=True)
    tools = Tools(cache, fetch_zig(cache), extract(fetch_sdist(cache), cache))
    summary = {}
    for arch in args.arches or list(TARGETS):
        log(f"building llama.cpp for {TARGETS[arch]}")
        bindir, seconds = build_arch(tools, arch, args.jobs)
        path = wheel(tools, arch, libraries(bindir), args.out)
        summary[path.name] = {
            "arch": arch,
            "libc": "musl",
            "size": path.stat().st_size,
            "sha256": sha256_of(path),
            "build_seconds": round(seconds),
        }
    # Every wheel built so far, this run's or an earlier one's, with its hash.
    sums = {p.name: sha256_of(p) for p in sorted(args.out.glob(f"llama_cpp_python-{VERSION}-*.whl"))}
    (args.out / "SHA256SUMS").write_text("".join(f"{digest}  {name}\n" for name, digest in sums.items()))
    print(f"\n{'file':<58} {'size':>10}  {'build':>6}  sha256")
    for name, item in summary.items():
        print(f"{name:<58} {item['size']:>10}  {item['build_seconds']:>5}s  {item['sha256']}")


if __name__ == "__main__":
    main()
