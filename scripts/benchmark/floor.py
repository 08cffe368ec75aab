"""The engine's floor: what llama.cpp alone needs for the warm request, without Home Assistant.

Same model, same load options as the embedded worker (context, batch, threads), in this
process through llama-cpp-python:

- prefill: the stable prefix is evaluated first (cached, not timed); then the user turn's
  tokens are evaluated on top of it and the first token sampled (timed);
- decode: free decoding continues from there, one token at a time (evaluate + sample with
  the request's own sampling settings); its median time per token, times the number of
  tokens of the call text the warm request produced, is the decode floor. That is what
  decoding exactly that text one token at a time costs, the honest baseline for a decoder
  that samples every token. (A grammar that fast-forwards forced text can beat it: the
  same tokens evaluated as one batch are reported too, as `batched_call_s`.)

engine_floor_s = prefill_s + call_tokens x decode_token_s.

The truer floor, for an engine that knew the call's fixed text and everything before the
user's words (`engine_floor_batched_s`): the utterance's own tokens (from its first word to
the end of the prompt) evaluated on top of the rest, the call's choice tokens (those the
warm request sampled) decoded one by one, and its fixed text (the others) evaluated as one
batch:

engine_floor_batched_s = words_prefill_s + choice_tokens x decode_token_s + fixed_batched_s.
"""

from __future__ import annotations

from dataclasses import dataclass
import itertools
import statistics
import time
from typing import Any

import llama_cpp

from botpsy_runtime import worker


@dataclass(frozen=True, slots=True)
class FloorInput:
    """The warm request the floor is measured for."""

    prompt: str
    user_turn_start: int  # character offset in `prompt` where the user's turn begins
    words_start: int  # character offset in `prompt` where the utterance's words begin
    call_text: str
    choice_tokens: int  # of the call's tokens, those the warm request sampled (not forced)
    temperature: float
    top_k: int
    top_p: float


class RawModel:
    """llama.cpp loaded exactly as the embedded worker loads it (`worker.Model`), driven
    directly: no snapshots, no grammar, no pipe."""

    def __init__(self, model_path: str, options: dict[str, int]) -> None:
        self.model = worker.Model({"model_path": model_path, **options})
        self.llm = self.model.llm

    def close(self) -> None:
        self.llm.close()

    def evaluated(self, tokens: list[int]) -> llama_cpp.LlamaState:
        """The state after evaluating `tokens` on an empty memory (restored before each run)."""
        self.model.clear()
        self.llm.eval(tokens)
        return self.llm.save_state()

    def split(self, prompt: str, cut: int) -> tuple[list[int], int]:
        """The prompt's tokens and how many of them belong to the prefix before `cut`."""
        tokens = self.model.tokenize(prompt)
        prefix = self.model.tokenize(prompt[:cut])
        shared = 0
        for a, b in zip(tokens, prefix, strict=False):
            if a != b:
                break
            shared += 1
        return tokens, min(shared, len(tokens) - 1)

    def prefill_seconds(self, state: llama_cpp.LlamaState, rest: list[int], task: FloorInput) -> float:
        """`rest` evaluated on `state` until the first token is sampled."""
        self.llm.load_state(state)
        started = time.perf_counter()
        for _token in self.llm.generate(rest, reset=False, temp=task.temperature, top_k=task.top_k, top_p=task.top_p):
            break
        return time.perf_counter() - started

    def batch_seconds(self, state: llama_cpp.LlamaState, tokens: list[int]) -> float:
        """`tokens` evaluated as one batch on `state`."""
        self.llm.load_state(state)
        started = time.perf_counter()
        self.llm.eval(tokens)
        return time.perf_counter() - started


class Floor:
    """The floor of one warm request, on llama.cpp loaded once and measured a few runs at a
    time: the bench alternates them with the warm requests they are the floor of, so both
    see the machine alike (on a shared 2-core machine its speed drifts by a fifth within
    minutes, and a ratio of two figures taken minutes apart drifts with it).

    Every call must come from one thread: llama.cpp's CPU backend runs on OpenMP, whose
    threads belong to the thread that calls it. Called from another one, llama.cpp got a
    second set of threads while the first still spun, and a decoding step took 40 % longer
    (40 ms instead of 26) from then on.
    """

    def __init__(self, model_path: str, options: dict[str, int], task: FloorInput) -> None:
        self.task = task
        self.raw = raw = RawModel(model_path, options)
        self.tokens, self.cached = raw.split(task.prompt, task.user_turn_start)
        _tokens, self.before_words = raw.split(task.prompt, task.words_start)
        self.call_tokens = (
            raw.llm.tokenize(task.call_text.encode(), add_bos=False, special=True) if task.call_text else []
        )
        self.choices = min(task.choice_tokens, len(self.call_tokens))
        self.fixed = self.call_tokens[: len(self.call_tokens) - self.choices]
        self._prefix_state = raw.evaluated(self.tokens[: self.cached])
        self._before_words_state = raw.evaluated(self.tokens[: self.before_words])
        self._prompt_state = raw.evaluated(self.tokens) if self.call_tokens else None
        self._samples: dict[str, list[float]] = {}
        # Once, not counted: the first pass after loading pays for paging the weights in.
        self.measure(1)
        self._samples = {}

    def close(self) -> None:
        self.raw.close()

    def measure(self, runs: int) -> None:
        """`runs` more measurements of every part (blocking: run it outside the event loop)."""
        raw, task, tokens, samples = self.raw, self.task, self.tokens, self._samples
        # Free decoding long enough for a stable per-token median.
        steps = max(len(self.call_tokens), 24)
        for _ in range(runs):
            raw.llm.load_state(self._prefix_state)
            stamps = []
            started = time.perf_counter()
            for _token in raw.llm.generate(
                tokens[self.cached :], reset=False, temp=task.temperature, top_k=task.top_k, top_p=task.top_p
            ):
                stamps.append(time.perf_counter())
                if len(stamps) > steps:
                    break
            samples.setdefault("prefill", []).append(stamps[0] - started)
            samples.setdefault("per_token", []).append(statistics.median(b - a for a, b in itertools.pairwise(stamps)))
            samples.setdefault("words_prefill", []).append(
                raw.prefill_seconds(self._before_words_state, tokens[self.before_words :], task)
            )
            if self._prompt_state is not None:
                # The call's tokens evaluated as one batch on the prompt (what forced text could cost).
                samples.setdefault("batched", []).append(raw.batch_seconds(self._prompt_state, self.call_tokens))
                samples.setdefault("fixed_batched", []).append(
                    raw.batch_seconds(self._prompt_state, self.fixed) if self.fixed else 0.0
                )

    def figures(self) -> dict[str, Any]:
        """Medians of every measurement so far."""
        samples = self._samples
        prefill_s = statistics.median(samples["prefill"])
        token_s = statistics.median(samples["per_token"])
        words_prefill_s = statistics.median(samples["words_prefill"])
        fixed_s = statistics.median(samples["fixed_batched"]) if samples.get("fixed_batched") else 0.0
        calls = len(self.call_tokens)
        return {
            "prompt_tokens": len(self.tokens),
            "stable_prefix_tokens": self.cached,
            "user_turn_tokens": len(self.tokens) - self.cached,
            "call_tokens": calls,
            "runs": len(samples["prefill"]),
            "prefill_s": round(prefill_s, 4),
            "decode_token_s": round(token_s, 5),
            "decode_s": round(calls * token_s, 4),
            "batched_call_s": round(statistics.median(samples["batched"]), 4) if samples.get("batched") else None,
            "engine_floor_s": round(prefill_s + calls * token_s, 4),
            "words_tokens": len(self.tokens) - self.before_words,
            "words_prefill_s": round(words_prefill_s, 4),
            "choice_tokens": self.choices,
            "fixed_tokens": len(self.fixed),
            "fixed_batched_s": round(fixed_s, 4),
            "engine_floor_batched_s": round(words_prefill_s + self.choices * token_s + fixed_s, 4),
        }


def measure_floor(model_path: str, options: dict[str, int], task: FloorInput, runs: int) -> dict[str, Any]:
    """The floor of `task`, `runs` times at a go (blocking: run it outside the event loop)."""
    floor = Floor(model_path, options, task)
    try:
        floor.measure(runs)
        return floor.figures()
    finally:
        floor.close()
