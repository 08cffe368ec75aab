"""Read a GGUF file's metadata without loading the model.

Used before anything is started: the config flow refuses a file that is not a usable
GGUF with a clear reason, and the engines learn the architecture, context length and chat
template. Only the header is parsed; tensor data is never read.
"""

from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path
import struct
from typing import BinaryIO

from .errors import ModelLoadError

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
_SCALARS: dict[int, str] = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip
_STRING = 8
_ARRAY = 9
# Arrays this long (token lists, merges) are skipped instead of kept.
_KEEP_ARRAY_MAX = 64
_MAX_STRING = 16 << 20


@dataclass(frozen=True, slots=True)
class GGUFMetadata:
    """The parts of a GGUF header BotPsy uses."""

    architecture: str
    name: str
    context_length: int
    chat_template: str | None
    tensor_count: int
    file_size: int
    values: dict[str, object]

    def kv_cache_bytes(self, n_ctx: int) -> int:
        """Bytes of the K and V cache llama.cpp allocates for `n_ctx` cells (f16, its default
        type) over the attention layers: what a loaded model takes beside its weights. A
        hybrid model's recurrent layers hold a state of fixed size instead, not counted."""
        arch = self.architecture
        layers = self._int(f"{arch}.block_count")
        heads = self._int(f"{arch}.attention.head_count") or 1
        key = self._int(f"{arch}.attention.key_length") or self._int(f"{arch}.embedding_length") // heads
        value = self._int(f"{arch}.attention.value_length") or key
        kv_heads = self.values.get(f"{arch}.attention.head_count_kv", heads)
        per_layer = kv_heads if isinstance(kv_heads, list) else [kv_heads] * layers
        interval = self._int(f"{arch}.full_attention_interval")
        attention = [int(h) for i, h in enumerate(per_layer) if not interval or (i + 1) % interval == 0]
        return n_ctx * sum(h * (key + value) for h in attention) * 2

    def _int(self, key: str) -> int:
        value = self.values.get(key)
        return value if isinstance(value, int) else 0


class _Reader:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def exact(self, size: int) -> bytes:
        data = self._stream.read(size)
        if len(data) != size:
            raise ModelLoadError("The file ends inside its header (truncated download?)")
        return data

    def scalar(self, fmt: str) -> object:
        value: object = struct.unpack(fmt, self.exact(struct.calcsize(fmt)))[0]
        return value

    def u32(self) -> int:
        return int.from_bytes(self.exact(4), "little")

    def u64(self) -> int:
        return int.from_bytes(self.exact(8), "little")

    def string(self) -> str:
        size = self.u64()
        if size > _MAX_STRING:
            raise ModelLoadError("The file's header is corrupt (string too long)")
        return self.exact(size).decode("utf-8", errors="replace")

    def value(self, kind: int) -> object:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind = self.u32()
            count = self.u64()
            items = [self.value(item_kind) for _ in range(count)]
            return items if count <= _KEEP_ARRAY_MAX else None
        raise ModelLoadError(f"The file's header is corrupt (unknown value type {kind})")


def read_gguf_metadata(path: str | os.PathLike[str]) -> GGUFMetadata:
    """Parse the header of `path`; raise ModelLoadError saying why it is unusable."""
    file = Path(path)
    try:
        size = file.stat().st_size
        stream = file.open("rb")
    except FileNotFoundError as err:
        raise ModelLoadError(f"Model file not found: {file}") from err
    except OSError as err:
        raise ModelLoadError(f"Model file cannot be read: {err.strerror}") from err
    with stream:
        reader = _Reader(stream)
        if stream.read(4) != MAGIC:
            raise ModelLoadError(f"{file.name} is not a GGUF model file")
        version = reader.u32()
        if version not in SUPPORTED_VERSIONS:
            raise ModelLoadError(f"{file.name} uses GGUF version {version}, not 2 or 3")
        tensor_count = reader.u64()
        kv_count = reader.u64()
        values: dict[str, object] = {}
        for _ in range(kv_count):
            key = reader.string()
            values[key] = reader.value(reader.u32())
        last_offset = 0
        for _ in range(tensor_count):
            reader.string()
            dims = reader.u32()
            reader.exact(8 * dims)
            reader.u32()
            last_offset = max(last_offset, reader.u64())
        alignment = int(values.get("general.alignment", 32))  # type: ignore[call-overload]
        data_start = -(-stream.tell() // alignment) * alignment
    if data_start + last_offset > size:
        raise ModelLoadError(f"{file.name} is truncated: its tensor data ends past the file")
    architecture = values.get("general.architecture")
    if not isinstance(architecture, str) or tensor_count == 0:
        raise ModelLoadError(f"{file.name} has no model architecture or weights")
    context = values.get(f"{architecture}.context_length")
    template = values.get("tokenizer.chat_template")
    name = values.get("general.name")
    return GGUFMetadata(
        architecture=architecture,
        name=name if isinstance(name, str) else file.stem,
        context_length=context if isinstance(context, int) else 0,
        chat_template=template if isinstance(template, str) else None,
        tensor_count=tensor_count,
        file_size=size,
        values=values,
    )
