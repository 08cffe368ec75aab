"""Grammar-constrained sampling on llama.cpp's own samplers, for the model worker.

Two things make a constrained call cost what its choices cost, not what its text costs:

- Grammar last: the token is sampled by llama.cpp's chain (top-k, top-p, min-p,
  temperature, seeded dist) without the grammar, then offered alone to llama.cpp's grammar
  sampler. Only if the grammar refuses it is the grammar applied to the whole vocabulary and
  the token sampled again (llama-server's `common_sampler_sample` does the same). Greedy
  decoding picks exactly the token it would pick with the grammar first.
- Forced text: where the grammar allows exactly one next byte, that byte is forced.
  `Decoder.forced_bytes` finds the run of forced bytes by offering llama.cpp's grammar
  sampler every single-byte token (and an end-of-generation token) and advancing a clone of
  it byte by byte. llama.cpp stays the only judge of the grammar: there is no second GBNF
  implementation here that could disagree with it.

Imports only the standard library, numpy and llama_cpp (the worker runs outside HA).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
import time
from typing import Any

import llama_cpp
import numpy as np

# llama-server's and llama-cpp-python's default min-p.
MIN_P = 0.05
# Forced text is looked for this many bytes ahead at most.
MAX_FORCED_BYTES = 512
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class Vocabulary:
    """Token pieces and the single-byte tokens of a model's vocabulary."""

    def __init__(self, model: Any) -> None:
        self.vocab = model.vocab
        self.size = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        eos = int(llama_cpp.llama_vocab_eos(self.vocab))
        self.eog = eos if eos >= 0 else int(llama_cpp.llama_vocab_eot(self.vocab))
        self._buffer = ctypes.create_string_buffer(256)
        # One token per byte value whose piece is exactly that byte (the NUL byte, which no
        # grammar admits, is not needed). Without all of them forced text is not looked for.
        found: dict[int, int] = {}
        for token in range(self.size):
            if llama_cpp.llama_token_to_piece(self.vocab, token, self._buffer, 8, 0, False) == 1:
                found.setdefault(self._buffer.raw[0], token)
        self.byte_tokens: list[int] | None = (
            [found[b] for b in range(1, 256)] if set(range(1, 256)) <= set(found) else None
        )

    def piece(self, token: int, *, special: bool = False) -> bytes:
        """The bytes `token` stands for (control tokens are empty unless `special`)."""
        size = llama_cpp.llama_token_to_piece(self.vocab, token, self._buffer, len(self._buffer), 0, special)
        if size < 0:
            buffer = ctypes.create_string_buffer(-size)
            size = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, -size, 0, special)
            return buffer.raw[:size]
        return self._buffer.raw[:size]

    def is_eog(self, token: int) -> bool:
        """Whether `token` ends a generation (end of sequence or of turn)."""
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))


def parse_grammar(vocab: Vocabulary, text: str) -> Any:
    """A grammar sampler for `text`, to be cloned per generation; ValueError if unparsable."""
    sampler = llama_cpp.llama_sampler_init_grammar(vocab.vocab, text.encode(), b"root")
    if not sampler:
        raise ValueError("llama.cpp cannot parse the grammar")
    return sampler


@dataclass(frozen=True, slots=True)
class Sampling:
    """How a token is drawn: top-k, top-p, min-p, temperature, then a seeded draw."""

    temperature: float
    top_k: int
    top_p: float
    seed: int


# The most likely token, always (temperature 0: the rest is not used).
GREEDY = Sampling(temperature=0.0, top_k=40, top_p=0.95, seed=0)


def _add_sampling(chain: Any, sampling: Sampling) -> None:
    if sampling.temperature <= 0:
        llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
        return
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_top_k(sampling.top_k))
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_top_p(sampling.top_p, 1))
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_min_p(MIN_P, 1))
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_temp(sampling.temperature))
    llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_dist(sampling.seed & 0xFFFFFFFF))


class Decoder:
    """The samplers of one generation: a plain chain, and the grammar (if any) after it.

    Not thread-safe; `close` frees the llama.cpp samplers.
    """

    def __init__(self, vocab: Vocabulary, ctx: Any, grammar: Any | None, sampling: Sampling = GREEDY) -> None:
        self._vocab = vocab
        self._ctx = ctx
        params = llama_cpp.llama_sampler_chain_default_params()
        self._chain = llama_cpp.llama_sampler_chain_init(params)
        _add_sampling(self._chain, sampling)
        self._grammar_chain: Any = None
        self._grammar: Any = None
        # Seconds spent on the grammar (checks, forced text, resampling), and resamples.
        self.grammar_seconds = 0.0
        self.resampled = 0
        if grammar is not None:
            # The grammar sampler, then the same sampling: used when the grammar refuses the
            # plain chain's choice. The chain owns the (cloned, fresh) grammar sampler.
            self._grammar_chain = llama_cpp.llama_sampler_chain_init(params)
            llama_cpp.llama_sampler_chain_add(self._grammar_chain, llama_cpp.llama_sampler_clone(grammar))
            _add_sampling(self._grammar_chain, sampling)
            self._grammar = llama_cpp.llama_sampler_chain_get(self._grammar_chain, 0)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(self._one, 1, -1, False)
        self._probe: tuple[Any, Any, np.ndarray[Any, Any]] | None = None
        if grammar is not None and vocab.byte_tokens is not None:
            tokens = [*vocab.byte_tokens, vocab.eog]
            data = (llama_cpp.llama_token_data * len(tokens))(
                *(llama_cpp.llama_token_data(t, 0.0, 0.0) for t in tokens)
            )
            array = llama_cpp.llama_token_data_array(data, len(tokens), -1, False)
            self._probe = (data, array, np.frombuffer(data, dtype=_TOKEN_DATA)["logit"])

    @property
    def constrained(self) -> bool:
        """Whether a grammar constrains this generation."""
        return self._grammar is not None

    def close(self) -> None:
        """Free the llama.cpp samplers; the decoder samples no more after it."""
        for sampler in (self._chain, self._grammar_chain):
            if sampler is not None:
                llama_cpp.llama_sampler_free(sampler)
        self._chain = self._grammar_chain = self._grammar = None

    def sample(self) -> int:
        """The next token from the last logits; a grammar is advanced past it."""
        token = int(llama_cpp.llama_sampler_sample(self._chain, self._ctx, -1))
        if self._grammar is None:
            return token
        started = time.perf_counter()
        if self.allowed(token):
            if not self._vocab.is_eog(token):
                llama_cpp.llama_sampler_accept(self._grammar, token)
        else:
            # The grammar first over the whole vocabulary, then the same sampling; the chain
            # accepts the token into the grammar.
            self.resampled += 1
            token = int(llama_cpp.llama_sampler_sample(self._grammar_chain, self._ctx, -1))
        self.grammar_seconds += time.perf_counter() - started
        return token

    def allowed(self, token: int) -> bool:
        """Whether the grammar lets `token` come next (True without a grammar)."""
        if self._grammar is None:
            return True
        self._one[0] = llama_cpp.llama_token_data(token, 0.0, 0.0)
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(self._one_array))
        return bool(self._one[0].logit != float("-inf"))

    def accept(self, token: int) -> None:
        """Advance the grammar past `token`, which must be `allowed`."""
        if self._grammar is not None:
            llama_cpp.llama_sampler_accept(self._grammar, token)

    def _allowed_bytes(self, sampler: Any) -> tuple[list[int], bool]:
        """Byte values the grammar allows next, and whether it allows the end."""
        assert self._probe is not None
        _data, array, logits = self._probe
        logits[:] = 0.0
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        allowed = np.flatnonzero(logits != -np.inf).tolist()
        end = bool(allowed) and allowed[-1] == len(logits) - 1
        return [index + 1 for index in (allowed[:-1] if end else allowed)], end

    def forced_bytes(self, limit: int = MAX_FORCED_BYTES) -> tuple[bytes, bool]:
        """The bytes the grammar forces next, and whether it must end right after them.

        Empty where the next byte is a choice (or the vocabulary lacks single-byte tokens).
        The grammar itself is not advanced.
        """
        if self._probe is None or self._grammar is None:
            return b"", False
        assert self._vocab.byte_tokens is not None
        started = time.perf_counter()
        forced = bytearray()
        sampler = self._grammar
        clone: Any = None
        try:
            while True:
                allowed, end = self._allowed_bytes(sampler)
                if end or len(allowed) != 1 or len(forced) >= limit:
                    return bytes(forced), end and not allowed
                forced.append(allowed[0])
                if clone is None:
                    sampler = clone = llama_cpp.llama_sampler_clone(self._grammar)
                llama_cpp.llama_sampler_accept(clone, self._vocab.byte_tokens[allowed[0] - 1])
        finally:
            if clone is not None:
                llama_cpp.llama_sampler_free(clone)
            self.grammar_seconds += time.perf_counter() - started
