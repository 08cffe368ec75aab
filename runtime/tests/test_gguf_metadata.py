"""The GGUF header reader: real files in, clear refusals for unusable ones."""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import pytest

from botpsy_runtime.errors import ModelLoadError
from botpsy_runtime.gguf_metadata import read_gguf_metadata


@pytest.mark.parametrize("arch", ["qwen3", "gemma3", "qwen35"])
def test_reads_tiny_models(tiny_models: dict[str, Path], arch: str) -> None:
    meta = read_gguf_metadata(tiny_models[arch])
    assert meta.architecture == arch
    assert meta.context_length == 4096
    assert meta.chat_template is not None and "<tool_call>" in meta.chat_template
    assert meta.tensor_count > 0
    assert meta.file_size == tiny_models[arch].stat().st_size


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not found"):
        read_gguf_metadata(tmp_path / "nope.gguf")


def test_not_a_gguf(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"<html>Not found</html>")
    with pytest.raises(ModelLoadError, match="not a GGUF"):
        read_gguf_metadata(path)


def test_truncated_in_tensor_data(tiny_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "cut.gguf"
    path.write_bytes(tiny_model.read_bytes()[: tiny_model.stat().st_size // 2])
    with pytest.raises(ModelLoadError, match="truncated"):
        read_gguf_metadata(path)


def test_truncated_in_header(tiny_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "cut.gguf"
    path.write_bytes(tiny_model.read_bytes()[:200])
    with pytest.raises(ModelLoadError, match="header"):
        read_gguf_metadata(path)


def test_unknown_version(tiny_model: Path, tmp_path: Path) -> None:
    data = bytearray(tiny_model.read_bytes())
    data[4:8] = (99).to_bytes(4, "little")
    path = tmp_path / "v99.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match="version 99"):
        read_gguf_metadata(path)


@pytest.mark.parametrize("arch", ["qwen3", "qwen35"])
def test_kv_cache_bytes_is_what_llama_cpp_keeps_per_cell(tiny_models: dict[str, Path], arch: str) -> None:
    """Each evaluated token grows the sequence's saved state by one cell of K and V (and the
    cell's position and sequence ids, a few bytes)."""
    meta = read_gguf_metadata(tiny_models[arch])
    llm = llama_cpp.Llama(model_path=str(tiny_models[arch]), n_ctx=256, n_threads=1, verbose=False)
    try:
        sizes = []
        for count in (8, 40):
            llm.reset()
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
            llm.eval(list(range(10, 10 + count)))
            sizes.append(llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0))
    finally:
        llm.close()
    cells = meta.kv_cache_bytes(40) - meta.kv_cache_bytes(8)
    assert 0 < cells <= sizes[1] - sizes[0] <= cells + 32 * 32
    assert meta.kv_cache_bytes(256) == 256 * meta.kv_cache_bytes(1)
