"""Run the built engine wheels under musl: natively on x86_64, through qemu-user on aarch64.

For each wheel in out/engine/, its libraries are unpacked (the artefact itself, not the
build folder), scripts/engine/run_model.c is compiled against them with zig for that musl
target, and it loads the CPU backend as BotPsy's worker does, then a tiny generated GGUF
(scripts/testing/tiny_gguf.py: the transformer and the hybrid `qwen35`, BotPsy's own architecture) and
generates a few tokens. Each run is on a given CPU (qemu's `-cpu`): a baseline one without
SSE4.2 / without dot product proves that the variant selection falls back to a build that
runs there; newer ones that it picks a better build. Prints the variant each run chose.

Run through scripts/test-engine (after scripts/build-engine).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
import os
from pathlib import Path
import platform
import subprocess
import sys
import time
import zipfile

from scripts.engine.build import OUT, TARGETS, VERSION, default_cache
from scripts.testing.tiny_gguf import write_tiny_model

REPO = Path(__file__).resolve().parents[2]
WORK = REPO / "out" / "engine-test"
TOKENS = 8


@dataclass(frozen=True, slots=True)
class Run:
    """One run: on which CPU (None: this machine's, natively), and which variants may win."""

    arch: str
    cpu: str | None
    expected: tuple[str, ...]  # variant names (libggml-cpu-<name>.so); empty: any
    why: str


RUNS = (
    Run("x86_64", None, (), "this machine's CPU, natively"),
    Run("x86_64", "qemu64", ("x64",), "baseline x86-64: no SSE4.2, no AVX"),
    Run("x86_64", "Nehalem", ("sse42",), "SSE4.2, no AVX (old Celeron, Atom)"),
    Run("x86_64", "Haswell-noTSX", ("haswell",), "AVX2 + FMA"),
    Run("aarch64", "cortex-a72", ("armv8.0_1",), "Raspberry Pi 4: no dot product"),
    Run("aarch64", "cortex-a55", ("armv8.2_2",), "Home Assistant Green (RK3566): dotprod + fp16"),
    Run("aarch64", "cortex-a76", ("armv8.2_2",), "Raspberry Pi 5: dotprod + fp16"),
    Run("aarch64", "neoverse-n2", ("armv8.6_2", "armv8.6_1"), "a recent server: SVE2 + i8mm"),
    Run("aarch64", "max", ("armv8.6_2", "armv9.2_1", "armv9.2_2"), "everything qemu emulates"),
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def unpack(wheel: Path, dest: Path) -> Path:
    lib = dest / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("llama_cpp/lib/"):
                target = lib / Path(name).name
                target.write_bytes(archive.read(name))
                target.chmod(0o755)
    return lib


def compile_probe(zig: Path, arch: str, lib: Path, cache: Path) -> Path:
    source = cache / "src" / f"llama_cpp_python-{VERSION}" / "vendor" / "llama.cpp"
    binary = lib.parent / "run_model"
    zig_cache = str(cache / "zig-cache")
    env = {**os.environ, "ZIG_GLOBAL_CACHE_DIR": zig_cache, "ZIG_LOCAL_CACHE_DIR": zig_cache}
    subprocess.run(
        [
            str(zig), "cc", "-target", TARGETS[arch], "-O1",
            "-I", str(source / "include"), "-I", str(source / "ggml" / "include"),
            str(REPO / "scripts" / "engine" / "run_model.c"),
            "-L", str(lib), "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{lib}",
            "-o", str(binary),
        ],
        check=True,
        env=env,
    )  # fmt: skip
    return binary


def command(run: Run, binary: Path) -> list[str]:
    native = run.arch == platform.machine() and run.cpu is None
    if native:
        return [str(binary)]
    return [f"qemu-{run.arch}", *(["-cpu", run.cpu] if run.cpu else []), str(binary)]


def parse(output: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in output.splitlines() if ": " in line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arches", nargs="*", choices=list(TARGETS), metavar="ARCH")
    args = parser.parse_args()
    arches = args.arches or list(TARGETS)
    cache = default_cache()
    zig = next(cache.glob("zig-*/ziglang/zig"))
    models = WORK / "models"
    models.mkdir(parents=True, exist_ok=True)
    tiny = {arch: write_tiny_model(models / f"tiny-{arch}.gguf", arch) for arch in ("qwen3", "qwen35")}
    results: list[tuple[Run, str, str, float, str]] = []
    failures = 0
    for arch in arches:
        wheel = OUT / f"llama_cpp_python-{VERSION}-py3-none-musllinux_1_2_{arch}.whl"
        if not wheel.exists():
            log(f"{wheel.name} is missing: run scripts/build-engine {arch}")
            failures += 1
            continue
        lib = unpack(wheel, WORK / arch)
        binary = compile_probe(zig, arch, lib, cache)
        for run in (r for r in RUNS if r.arch == arch):
            for model_arch, model in tiny.items():
                started = time.monotonic()
                done = subprocess.run(
                    [*command(run, binary), str(lib), str(model), str(TOKENS)],
                    capture_output=True,
                    text=True,
                    timeout=900,
                    check=False,
                )
                seconds = time.monotonic() - started
                out = parse(done.stdout)
                variant = out.get("variant", "?").removeprefix("libggml-cpu-").removesuffix(".so")
                ok = (
                    done.returncode == 0
                    and out.get("generated") == f"{TOKENS} tokens"
                    and (not run.expected or variant in run.expected)
                )
                status = "ok" if ok else f"FAILED (exit {done.returncode})"
                if not ok:
                    failures += 1
                    log(f"{' '.join(command(run, binary))}:\n{done.stdout}\n{done.stderr[-3000:]}")
                results.append((run, model_arch, variant, seconds, status))
                log(f"{arch} cpu={run.cpu or 'host'} {model_arch}: variant {variant}, {status}")
    print(f"\n{'arch':<8} {'cpu':<14} {'model':<7} {'variant chosen':<15} {'time':>6}  result  ({'why'})")
    for run, model_arch, variant, seconds, status in results:
        cpu = run.cpu or "host"
        print(f"{run.arch:<8} {cpu:<14} {model_arch:<7} {variant:<15} {seconds:>5.1f}s  {status}  ({run.why})")
    passed = sum(1 for *_, status in results if status == "ok")
    print(f"\n{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
