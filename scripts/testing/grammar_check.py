"""Ask llama.cpp's own grammar sampler whether a text is accepted by a GBNF grammar.

Not a re-implementation: the text is tokenized with a real vocabulary and each token is
offered to llama.cpp's grammar sampler, exactly as during constrained decoding.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import llama_cpp


class GrammarChecker:
    def __init__(self, model: Path) -> None:
        self._llm = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)
        self._vocab = self._llm._model.vocab
        self._eos = self._llm.token_eos()

    def _sampler(self, grammar: str) -> ctypes.c_void_p:
        sampler = llama_cpp.llama_sampler_init_grammar(self._vocab, grammar.encode(), b"root")
        if not sampler:
            raise ValueError("llama.cpp cannot parse the grammar")
        return sampler  # type: ignore[no-any-return]

    def _allowed(self, sampler: ctypes.c_void_p, token: int) -> bool:
        data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
        array = llama_cpp.llama_token_data_array(data, 1, -1, False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        return bool(data[0].logit != float("-inf"))

    def check(self, grammar: str) -> None:
        """Raise ValueError if llama.cpp refuses the grammar."""
        llama_cpp.llama_sampler_free(self._sampler(grammar))

    def accepts(self, grammar: str, text: str, *, complete: bool = True) -> bool:
        """Whether llama.cpp lets a model write `text` (and then stop, if `complete`)."""
        sampler = self._sampler(grammar)
        try:
            for token in self._llm.tokenize(text.encode(), add_bos=False, special=True):
                if not self._allowed(sampler, token):
                    return False
                llama_cpp.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, self._eos) if complete else True
        finally:
            llama_cpp.llama_sampler_free(sampler)
