"""The embedded engine's child process: llama.cpp (llama-cpp-python) behind a pipe.

Runs as `python -I worker.py '<load options as JSON>'`, started and supervised by
`embedded.EmbeddedEngine`. A crash or out-of-memory kill here never takes Home Assistant
down. It imports nothing but the standard library and llama_cpp, so it can run from any
path.

Protocol: JSON lines. Requests on stdin carry an `id` and an `op` (`tokenize`, `generate`,
`ping`, `cancel`); replies on the original stdout carry the same `id`. Requests run one
at a time (a llama.cpp context is not thread-safe); only `cancel` is acted on while a
generation runs. The worker exits when stdin closes, so it never outlives its parent.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
import ctypes
import json
import os
import queue
import sys
import threading
import time
from typing import Any

import llama_cpp
from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

# State snapshots kept (each holds the recurrent state and the prefix's KV cache).
MAX_SNAPSHOTS = 2


class Protocol:
    """Line I/O with the parent, safe from llama.cpp writing to fd 1."""

    def __init__(self) -> None:
        self._out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)  # anything native code prints goes to stderr, not the protocol
        self._lock = threading.Lock()
        self.requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.cancelled: set[int] = set()
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        with self._lock:
            self._out.write(json.dumps(message) + "\n")

    def _read(self) -> None:
        for line in sys.stdin:
            message = json.loads(line)
            if message.get("op") == "cancel":
                self.cancelled.add(message["id"])
            else:
                self.requests.put(message)
        self.requests.put(None)


class Model:
    """One llama.cpp model and context, with prefix reuse between requests."""

    def __init__(self, options: dict[str, Any]) -> None:
        started = time.monotonic()
        self.llm = llama_cpp.Llama(
            model_path=options["model_path"],
            n_ctx=options["n_ctx"],
            n_batch=options["n_batch"],
            n_ubatch=options["n_batch"],
            n_threads=options["n_threads"],
            n_threads_batch=options["n_threads"],
            verbose=False,
        )
        self.load_seconds = time.monotonic() - started
        self.bos_text = self._token_text(self.llm.token_bos())
        self.eos_text = self._token_text(self.llm.token_eos())
        self._grammars: dict[str, LlamaGrammar] = {}
        # Prefix tokens -> sequence state, for models whose memory cannot be cut back.
        self._snapshots: OrderedDict[tuple[int, ...], ctypes.Array[ctypes.c_uint8]] = OrderedDict()

    def _token_text(self, token: int) -> str:
        return self.llm.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

    def tokenize(self, text: str) -> list[int]:
        add_bos = not (self.bos_text and text.startswith(self.bos_text))
        return self.llm.tokenize(text.encode(), add_bos=add_bos, special=True)

    def grammar(self, text: str) -> LlamaGrammar:
        if text not in self._grammars:
            # The binding would dereference the NULL sampler llama.cpp returns for a grammar
            # it cannot parse: try it here first and refuse it cleanly.
            sampler = llama_cpp.llama_sampler_init_grammar(self.llm._model.vocab, text.encode(), b"root")
            if not sampler:
                raise ValueError("llama.cpp cannot parse the grammar")
            llama_cpp.llama_sampler_free(sampler)
            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def _reuse_prefix(self, tokens: list[int]) -> tuple[int, int]:
        """Keep the evaluated prefix shared with `tokens`.

        Returns how many of `tokens` are in the model's memory now, and how many of those
        were reused rather than evaluated for this request.

        At least the last prompt token is evaluated again, so the sampler has fresh
        logits. Transformers cut their KV cache back to the shared prefix. Recurrent and
        hybrid models (Qwen3.5) cannot: they restore a snapshot of the state taken at the
        prefix a previous request shared, and take one now if there is none yet.
        """
        llm = self.llm
        shared = 0
        for old, new in zip(llm._input_ids, tokens, strict=False):
            if old != new:
                break
            shared += 1
        shared = min(shared, len(tokens) - 1)
        if shared > 0 and llm._ctx.kv_cache_seq_rm(-1, shared, -1):
            llm.n_tokens = shared
            return shared, shared
        prefix = max(
            (p for p in self._snapshots if len(p) < len(tokens) and tuple(tokens[: len(p)]) == p), key=len, default=None
        )
        llm.reset()  # type: ignore[no-untyped-call]
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        if prefix is not None:
            state = self._snapshots[prefix]
            self._snapshots.move_to_end(prefix)
            if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, state, len(state), 0):
                llm.input_ids[: len(prefix)] = prefix
                llm.n_tokens = len(prefix)
                return len(prefix), len(prefix)
            llm.reset()  # type: ignore[no-untyped-call]
        if shared > 0:
            # The prefix this request shares with the last one is likely stable: evaluate it
            # first and keep the state, so the next request starts there.
            llm.eval(tokens[:shared])
            self._snapshot(tuple(tokens[:shared]))
        return llm.n_tokens, 0

    def snapshot_memory(self) -> dict[str, int]:
        """What the kept state snapshots hold, for health and diagnostics."""
        return {"snapshots": len(self._snapshots), "snapshot_bytes": sum(len(s) for s in self._snapshots.values())}

    def _snapshot(self, prefix: tuple[int, ...]) -> None:
        ctx = self.llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        state = (ctypes.c_uint8 * size)()
        if llama_cpp.llama_state_seq_get_data(ctx, state, size, 0) != size:
            return
        self._snapshots[prefix] = state
        while len(self._snapshots) > MAX_SNAPSHOTS:
            self._snapshots.popitem(last=False)

    def generate(self, request: dict[str, Any], cancelled: set[int]) -> Iterator[dict[str, Any]]:
        llm = self.llm
        started = time.monotonic()
        tokens = self.tokenize(request["prompt"])
        if len(tokens) + 1 > llm.n_ctx():
            raise ValueError(f"The prompt takes {len(tokens)} tokens; the context holds {llm.n_ctx()}")
        start, cached = self._reuse_prefix(tokens)
        # Same prompt, same answer: sampling is seeded (0 unless the request says otherwise).
        llm.set_seed(request["seed"] if request.get("seed") is not None else 0)
        grammar_text = request.get("grammar")
        if request.get("json_schema") is not None:
            # llama.cpp's own JSON-schema converter, run here so HA never loads llama.cpp.
            grammar_text = json_schema_to_gbnf(json.dumps(request["json_schema"]))
        grammar = self.grammar(grammar_text) if grammar_text else None
        stops: list[str] = request.get("stop") or []
        max_tokens = min(request["max_tokens"], llm.n_ctx() - len(tokens))
        timings: dict[str, float] = {"prompt_tokens": len(tokens), "cached_tokens": cached, "decoded_tokens": 0}
        first_token_at = 0.0
        generated: list[int] = []
        text = ""
        sent = 0
        reason = "length"
        for token in llm.generate(
            tokens[start:],
            reset=False,
            temp=request["temperature"],
            top_p=request["top_p"],
            top_k=request["top_k"],
            grammar=grammar,
        ):
            if not generated and not first_token_at:
                first_token_at = time.monotonic()
            if request["id"] in cancelled:
                reason = "cancelled"
                break
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                reason = "stop"
                break
            previous = generated[:]
            generated.append(token)
            text += llm.detokenize([token], prev_tokens=previous).decode("utf-8", "ignore")
            hit = min((i for i in (text.find(s, sent) for s in stops) if i >= 0), default=-1)
            if hit >= 0:
                text = text[:hit]
                reason = "stop"
            # Hold back a tail that may still become a stop string.
            safe = len(text) if reason == "stop" else _safe_length(text, stops)
            if safe > sent:
                yield {"text": text[sent:safe]}
                sent = safe
            if reason == "stop" or len(generated) >= max_tokens:
                break
        if sent < len(text) and reason != "cancelled":
            yield {"text": text[sent:]}
        ended = time.monotonic()
        first_token_at = first_token_at or ended
        timings["decoded_tokens"] = len(generated)
        timings["prompt_seconds"] = first_token_at - started
        timings["decode_seconds"] = ended - first_token_at
        yield {"done": {"reason": reason, "timings": timings}}


def _safe_length(text: str, stops: list[str]) -> int:
    """Length of `text` that cannot be the start of a stop string."""
    for start in range(max(0, len(text) - max((len(s) for s in stops), default=0)), len(text)):
        if any(s.startswith(text[start:]) for s in stops):
            return start
    return len(text)


def serve(options: dict[str, Any]) -> None:
    io = Protocol()
    try:
        model = Model(options)
    except (ValueError, RuntimeError, OSError) as err:
        io.send({"event": "load_failed", "error": str(err) or type(err).__name__})
        return
    llm = model.llm
    io.send(
        {
            "event": "ready",
            "load_seconds": model.load_seconds,
            "n_ctx": llm.n_ctx(),
            "bos_token": model.bos_text,
            "eos_token": model.eos_text,
            "pid": os.getpid(),
        }
    )
    while (request := io.requests.get()) is not None:
        rid = request["id"]
        try:
            if request["op"] == "ping":
                io.send({"id": rid, "result": model.snapshot_memory()})
            elif request["op"] == "tokenize":
                io.send({"id": rid, "result": len(model.tokenize(request["text"]))})
            elif request["op"] == "generate":
                for event in model.generate(request, io.cancelled):
                    io.send({"id": rid, **event})
            else:
                io.send({"id": rid, "error": f"unknown op {request['op']!r}"})
        except (ValueError, RuntimeError) as err:
            io.send({"id": rid, "error": str(err) or type(err).__name__})
        io.cancelled.discard(rid)


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]))
