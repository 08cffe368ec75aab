"""Tiny random-weight GGUF models, so tests exercise real llama.cpp in milliseconds.

The weights are noise: the models load, tokenize, generate, follow grammars and keep
state exactly like real Qwen3, Gemma 3 (sliding-window attention) and Qwen3.5 (hybrid
recurrent) models, but their text is gibberish. The files
are deterministic for the same arguments and well under 2 MB.

Run ``python scripts/testing/tiny_gguf.py OUT_DIR`` to write ``tiny-qwen3.gguf``,
``tiny-gemma3.gguf`` and ``tiny-qwen35.gguf`` into OUT_DIR.
"""

from __future__ import annotations

from collections.abc import Callable
import os
from pathlib import Path
import sys
from typing import Literal

import gguf
import numpy as np

__all__ = ["QWEN35_CHAT_TEMPLATE", "Arch", "main", "write_tiny_model"]

Arch = Literal["qwen3", "gemma3", "qwen35"]

# A compact Qwen3.5 chat template: the real one's structure (ChatML turns, XML tool
# calls, grouped tool responses, <think> blocks after the last user turn) without its
# vision parts and with a shorter tool preamble, since this tokenizer spends one token
# per byte. Thinking is off unless the caller passes enable_thinking=true. Every tag
# trims whitespace, so it renders the same with or without trim_blocks/lstrip_blocks.
QWEN35_CHAT_TEMPLATE = r"""{%- macro render_content(content) %}
    {%- if content is string %}
        {{- content }}
    {%- elif content is iterable and content is not mapping %}
        {%- for item in content %}
            {%- if 'text' in item %}
                {{- item.text }}
            {%- endif %}
        {%- endfor %}
    {%- endif %}
{%- endmacro %}
{%- if tools %}
    {{- '<|im_start|>system\n# Tools\n\n' }}
    {{- 'You have access to the following functions:\n\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- '\n</tools>\n\nIf you choose to call a function ONLY reply in the following' }}
    {{- ' format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n' }}
    {{- '<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n' }}
    {{- '</tool_call>' }}
    {%- if messages[0].role == 'system' %}
        {%- set content = render_content(messages[0].content) | trim %}
        {%- if content %}
            {{- '\n\n' + content }}
        {%- endif %}
    {%- endif %}
    {{- '<|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
    {%- set content = render_content(messages[0].content) | trim %}
    {{- '<|im_start|>system\n' + content + '<|im_end|>\n' }}
{%- endif %}
{%- set ns = namespace(last_query_index=messages | length - 1) %}
{%- for message in messages %}
    {%- if message.role == 'user' %}
        {%- set ns.last_query_index = loop.index0 %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- set content = render_content(message.content) | trim %}
    {%- if message.role == 'system' %}
        {%- if not loop.first %}
            {{- raise_exception('System message must be at the beginning.') }}
        {%- endif %}
    {%- elif message.role == 'user' %}
        {{- '<|im_start|>user\n' + content + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {%- set reasoning = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning = message.reasoning_content %}
        {%- elif '</think>' in content %}
            {%- set reasoning = content.split('</think>')[0].split('<think>')[-1] %}
            {%- set content = content.split('</think>')[-1] | trim %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {{- '<|im_start|>assistant\n<think>\n' + reasoning | trim }}
            {{- '\n</think>\n\n' + content }}
        {%- else %}
            {{- '<|im_start|>assistant\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if tool_call.function is defined %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {%- if not loop.first %}
                    {{- '\n' }}
                {%- elif content %}
                    {{- '\n\n' }}
                {%- endif %}
                {{- '<tool_call>\n<function=' + tool_call.name + '>\n' }}
                {%- if tool_call.arguments is defined %}
                    {%- for name, value in tool_call.arguments | items %}
                        {{- '<parameter=' + name + '>\n' }}
                        {{- value if value is string else value | tojson }}
                        {{- '\n</parameter>\n' }}
                    {%- endfor %}
                {%- endif %}
                {{- '</function>\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or loop.previtem.role != 'tool' %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' + content + '\n</tool_response>' }}
        {%- if loop.last or loop.nextitem.role != 'tool' %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- else %}
        {{- raise_exception('Unexpected message role.') }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking %}
        {{- '<think>\n' }}
    {%- else %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""

# Control tokens are only parsed/rendered when the caller asks for special tokens;
# the XML-style markers are user-defined (always parsed and rendered), as in Qwen's
# own tokenizer, so generated tool calls show up in plain detokenized text.
_CONTROL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
_USER_DEFINED_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<tool_response>",
    "</tool_response>",
)
# llama.cpp refuses a BPE vocabulary without merges; a few real ones suffice.
_MERGES = ("Ġ t", "h e", "i n", "Ġt he")

_N_EMBD = 64
_N_FF = 128
_N_HEAD = 4
_N_HEAD_KV = 2
_HEAD_DIM = 16
_WEIGHT_STD = 0.05
# Feature 0 of every token embedding is a constant that survives the layers; the
# output head weighs it against tokens that are not printable ASCII, so the models
# only ever write valid UTF-8. (A model that emits lone UTF-8 lead bytes makes
# llama-cpp-python ignore max_tokens until the context is full.)
_BIAS_FEATURE = 1.0
_SUPPRESSED_LOGIT_WEIGHT = -4.0
# With `favor_long_tokens`, merged and user-defined tokens get this weight on the same
# feature: greedy decoding then prefers the longest token that fits, as BPE would split the
# text (the tests of fast-forwarded text compare with token-by-token decoding on it).
_FAVORED_LOGIT_WEIGHT = 1.0

_QWEN3_LAYERS = 2

# Gemma 3: local (sliding-window) attention layers with a global one every
# _GEMMA3_SWA_PATTERN-th; a window this short makes every test prompt outgrow it.
_GEMMA3_LAYERS = 2
_GEMMA3_SWA_PATTERN = 2
_GEMMA3_SLIDING_WINDOW = 16

# Qwen3.5: Gated DeltaNet layers with a full-attention layer every 4th (the layout
# llama.cpp assumes), partial interleaved M-RoPE, and fewer K than V heads.
_QWEN35_LAYERS = 4
_FULL_ATTENTION_INTERVAL = 4
_ROPE_DIM = 8
_ROPE_SECTIONS = (2, 1, 1, 0)  # sums to _ROPE_DIM / 2
_SSM_CONV_KERNEL = 4
_SSM_HEAD_DIM = 16  # ssm.state_size: the K and V head size
_SSM_K_HEADS = 2  # ssm.group_count
_SSM_V_HEADS = 4  # ssm.time_step_rank


def _byte_tokens() -> list[str]:
    """Return the 256 byte tokens in GPT-2's byte-to-unicode form, by byte value."""
    printable = {
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    }
    tokens = []
    shifted = 0
    for byte in range(256):
        if byte in printable:
            tokens.append(chr(byte))
        else:
            tokens.append(chr(256 + shifted))
            shifted += 1
    return tokens


def _vocabulary() -> tuple[list[str], list[gguf.TokenType]]:
    """Return the token texts and types: bytes, merge results, then special tokens."""
    normal = _byte_tokens() + [merge.replace(" ", "") for merge in _MERGES]
    tokens = normal + list(_CONTROL_TOKENS) + list(_USER_DEFINED_TOKENS)
    types = (
        [gguf.TokenType.NORMAL] * len(normal)
        + [gguf.TokenType.CONTROL] * len(_CONTROL_TOKENS)
        + [gguf.TokenType.USER_DEFINED] * len(_USER_DEFINED_TOKENS)
    )
    return tokens, types


def _add_tokenizer(writer: gguf.GGUFWriter, tokens: list[str], types: list[gguf.TokenType]) -> None:
    """Write a byte-level BPE tokenizer that adds no BOS and ends turns at <|im_end|>."""
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(list(_MERGES))
    writer.add_bos_token_id(tokens.index("<|endoftext|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_pad_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(QWEN35_CHAT_TEMPLATE)


class _Weights:
    """Adds seeded f32 tensors; shapes are given in llama.cpp's (ne0, ne1) order."""

    def __init__(self, writer: gguf.GGUFWriter, seed: int) -> None:
        self.writer = writer
        self._rng = np.random.default_rng(seed)

    def draw(self, *ne: int) -> np.ndarray[tuple[int, ...], np.dtype[np.float32]]:
        """Return small normally distributed weights (numpy's shape is ne reversed)."""
        return self._rng.standard_normal(ne[::-1], dtype=np.float32) * _WEIGHT_STD

    def normal(self, name: str, *ne: int) -> None:
        """Add a tensor of small normally distributed weights."""
        self.writer.add_tensor(name, self.draw(*ne))

    def uniform(self, name: str, low: float, high: float, n: int) -> None:
        """Add a vector drawn uniformly from [low, high)."""
        self.writer.add_tensor(name, self._rng.uniform(low, high, n).astype(np.float32))

    def ones(self, name: str, n: int) -> None:
        """Add a vector of ones: an RMS norm weight that leaves activations as they are."""
        self.writer.add_tensor(name, np.ones(n, dtype=np.float32))


def _add_embeddings(w: _Weights, types: list[gguf.TokenType], *, favor_long_tokens: bool = False) -> None:
    """Add the token embeddings and an output head that only writes printable text.

    The byte tokens (the first 256 ids) other than printable ASCII, tab and newline
    are suppressed; merged, control and user-defined tokens are not (and merged and
    user-defined ones are favored if asked).
    """
    n_vocab = len(types)
    allowed = {byte for byte in range(0x80) if chr(byte).isprintable()} | {9, 10}
    suppressed = [token < 256 and token not in allowed for token in range(n_vocab)]
    favored = [
        favor_long_tokens and token >= 256 and types[token] != gguf.TokenType.CONTROL for token in range(n_vocab)
    ]
    embeddings = w.draw(_N_EMBD, n_vocab)
    embeddings[:, 0] = _BIAS_FEATURE
    output = embeddings.copy()
    output[:, 0] = np.where(suppressed, _SUPPRESSED_LOGIT_WEIGHT, np.where(favored, _FAVORED_LOGIT_WEIGHT, 0.0))
    w.writer.add_tensor("token_embd.weight", embeddings)
    w.writer.add_tensor("output.weight", output)


def _add_common(w: _Weights, n_layer: int) -> None:
    """Add the hparams and tensors all architectures share."""
    w.writer.add_embedding_length(_N_EMBD)
    w.writer.add_block_count(n_layer)
    w.writer.add_feed_forward_length(_N_FF)
    w.writer.add_head_count(_N_HEAD)
    w.writer.add_head_count_kv(_N_HEAD_KV)
    w.writer.add_key_length(_HEAD_DIM)
    w.writer.add_value_length(_HEAD_DIM)
    w.writer.add_layer_norm_rms_eps(1e-6)
    w.writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.ones("output_norm.weight", _N_EMBD)
    for il in range(n_layer):
        w.ones(f"blk.{il}.attn_norm.weight", _N_EMBD)
        w.normal(f"blk.{il}.ffn_gate.weight", _N_EMBD, _N_FF)
        w.normal(f"blk.{il}.ffn_up.weight", _N_EMBD, _N_FF)
        w.normal(f"blk.{il}.ffn_down.weight", _N_FF, _N_EMBD)


def _add_attention(w: _Weights, il: int, *, gated: bool) -> None:
    """Add attention with Q/K norms (Qwen3, Gemma 3); Qwen3.5's Q projection also yields a gate."""
    q_width = _N_HEAD * _HEAD_DIM * (2 if gated else 1)
    w.normal(f"blk.{il}.attn_q.weight", _N_EMBD, q_width)
    w.normal(f"blk.{il}.attn_k.weight", _N_EMBD, _N_HEAD_KV * _HEAD_DIM)
    w.normal(f"blk.{il}.attn_v.weight", _N_EMBD, _N_HEAD_KV * _HEAD_DIM)
    w.normal(f"blk.{il}.attn_output.weight", _N_HEAD * _HEAD_DIM, _N_EMBD)
    w.ones(f"blk.{il}.attn_q_norm.weight", _HEAD_DIM)
    w.ones(f"blk.{il}.attn_k_norm.weight", _HEAD_DIM)


def _add_qwen3(w: _Weights) -> None:
    """Plain Qwen3: pre-norm attention and a SwiGLU FFN in every layer."""
    _add_common(w, _QWEN3_LAYERS)
    w.writer.add_rope_freq_base(1_000_000.0)
    for il in range(_QWEN3_LAYERS):
        _add_attention(w, il, gated=False)
        w.ones(f"blk.{il}.ffn_norm.weight", _N_EMBD)


def _add_gemma3(w: _Weights) -> None:
    """Gemma 3: sliding-window and global attention, each sublayer norm before and after."""
    _add_common(w, _GEMMA3_LAYERS)
    writer = w.writer
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_sliding_window(_GEMMA3_SLIDING_WINDOW)
    writer.add_uint32(f"{writer.arch}.attention.sliding_window_pattern", _GEMMA3_SWA_PATTERN)
    for il in range(_GEMMA3_LAYERS):
        _add_attention(w, il, gated=False)
        w.ones(f"blk.{il}.post_attention_norm.weight", _N_EMBD)
        w.ones(f"blk.{il}.ffn_norm.weight", _N_EMBD)
        w.ones(f"blk.{il}.post_ffw_norm.weight", _N_EMBD)


def _add_qwen35(w: _Weights) -> None:
    """Qwen3.5 hybrid: Gated DeltaNet (recurrent) layers and gated full attention."""
    _add_common(w, _QWEN35_LAYERS)
    writer = w.writer
    writer.add_rope_freq_base(10_000_000.0)
    writer.add_rope_dimension_count(_ROPE_DIM)
    writer.add_rope_dimension_sections(list(_ROPE_SECTIONS))
    writer.add_full_attention_interval(_FULL_ATTENTION_INTERVAL)
    writer.add_ssm_conv_kernel(_SSM_CONV_KERNEL)
    writer.add_ssm_state_size(_SSM_HEAD_DIM)
    writer.add_ssm_group_count(_SSM_K_HEADS)
    writer.add_ssm_time_step_rank(_SSM_V_HEADS)
    writer.add_ssm_inner_size(_SSM_HEAD_DIM * _SSM_V_HEADS)

    key_dim = _SSM_HEAD_DIM * _SSM_K_HEADS
    value_dim = _SSM_HEAD_DIM * _SSM_V_HEADS
    conv_dim = 2 * key_dim + value_dim
    for il in range(_QWEN35_LAYERS):
        w.ones(f"blk.{il}.post_attention_norm.weight", _N_EMBD)
        if (il + 1) % _FULL_ATTENTION_INTERVAL == 0:
            _add_attention(w, il, gated=True)
            continue
        w.normal(f"blk.{il}.attn_qkv.weight", _N_EMBD, conv_dim)
        w.normal(f"blk.{il}.attn_gate.weight", _N_EMBD, value_dim)
        w.normal(f"blk.{il}.ssm_conv1d.weight", _SSM_CONV_KERNEL, conv_dim)
        w.uniform(f"blk.{il}.ssm_dt.bias", -1.0, 1.0, _SSM_V_HEADS)
        # llama.cpp stores A as -exp(A_log); negative values keep the state decaying.
        w.uniform(f"blk.{il}.ssm_a", -16.0, -1.0, _SSM_V_HEADS)
        w.normal(f"blk.{il}.ssm_beta.weight", _N_EMBD, _SSM_V_HEADS)
        w.normal(f"blk.{il}.ssm_alpha.weight", _N_EMBD, _SSM_V_HEADS)
        w.ones(f"blk.{il}.ssm_norm.weight", _SSM_HEAD_DIM)
        w.normal(f"blk.{il}.ssm_out.weight", value_dim, _N_EMBD)


_BUILDERS: dict[Arch, Callable[[_Weights], None]] = {
    "qwen3": _add_qwen3,
    "gemma3": _add_gemma3,
    "qwen35": _add_qwen35,
}


def write_tiny_model(
    path: str | os.PathLike[str],
    arch: Arch = "qwen3",
    *,
    seed: int = 0,
    context_length: int = 4096,
    favor_long_tokens: bool = False,
) -> Path:
    """Write a tiny random-weight model of the given architecture to path.

    The file is written next to path and renamed into place, so tests running in
    parallel never load a half-written model.
    """
    if arch not in _BUILDERS:
        raise ValueError(f"unknown architecture {arch!r}, expected one of {list(_BUILDERS)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")

    writer = gguf.GGUFWriter(partial, arch)
    writer.add_name(f"tiny-{arch}")
    writer.add_context_length(context_length)
    tokens, types = _vocabulary()
    _add_tokenizer(writer, tokens, types)
    weights = _Weights(writer, seed)
    _add_embeddings(weights, types, favor_long_tokens=favor_long_tokens)
    _BUILDERS[arch](weights)
    try:
        try:
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
        finally:
            writer.close()
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def main(argv: list[str] | None = None) -> int:
    """Write one tiny model of each architecture into the directory given."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python scripts/testing/tiny_gguf.py OUT_DIR", file=sys.stderr)
        return 2
    for arch in _BUILDERS:
        path = write_tiny_model(Path(args[0]) / f"tiny-{arch}.gguf", arch)
        print(f"{path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
