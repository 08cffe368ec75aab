"""The embedded engine's child process: llama.cpp (llama-cpp-python) behind a pipe.

Runs as `python -I -m botpsy_runtime.worker '<load options as JSON>'`, started and
supervised by `embedded.EmbeddedEngine`. A crash or out-of-memory kill here never takes Home
Assistant down. It imports nothing but the standard library, llama_cpp and this package's
`constrained` and `lru_cache` (the package's `__init__` imports nothing).

Protocol: JSON lines. Requests on stdin carry an `id` and an `op` (`tokenize`, `generate`,
`prefill`, `ping`, `cancel`); replies on the original stdout carry the same `id`. Requests
run one at a time (a llama.cpp context is not thread-safe); only `cancel` is acted on while
a generation runs. While a request runs, `{"id": ..., "alive": true}` comes every
`HEARTBEAT` seconds, so the parent can tell a long evaluation from a hung process. The
worker exits when stdin closes, so it never outlives its parent.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Generator, Iterator, Sequence
import ctypes
import functools
import json
import os
from pathlib import Path
import queue
import signal
import sys
import threading
import time
from typing import Any

import llama_cpp
from llama_cpp.llama_grammar import json_schema_to_gbnf

from .constrained import Decoder, Sampling, Vocabulary, parse_grammar
from .forcing import forced_count, whole_characters
from .holdback import releasable_length
from .lru_cache import LruCache

# State snapshots kept (each holds a prefix's KV cache and, for hybrid models, the
# recurrent state), bounded by count and by bytes: least recently used go first. The
# stable prefix and the states block take two; conversations' last turns the rest.
MAX_SNAPSHOTS = 8
MAX_SNAPSHOT_BYTES = 256 << 20
# Tokens a background prefill evaluates between looks at whether a request arrived: the
# longest a request waits for one (about 0.3 s on a hub's two cores with a 0.5B; whole
# batches of 256 took 1.6-2.5 s), at a sixth less throughput for the prefill itself.
PREFILL_CHUNK = 32
# Parsed grammars kept, to be cloned per request instead of parsed again.
MAX_GRAMMARS = 8
# Seconds between signs of life while a request runs (see `Protocol._beat`), unless the
# parent asks for another pace (its watchdog's timeout over 15).
HEARTBEAT = 1.0
# How much lower than Home Assistant's the model's CPU priority is. Inference takes every
# core it is given; at the same priority, HA's event loop waited up to ~40 ms for a core
# while the model decoded on a 2-core machine (~17 ms at this niceness). Idle cores are
# still the model's: niceness only decides who waits when both want one.
NICENESS = 10


def load_cpu_backend() -> str:
    """Load llama.cpp's CPU backend where it is a loadable module; returns the one in use.

    The musl builds (scripts/build-engine) hold one CPU backend per instruction-set level,
    `libggml-cpu-<variant>.so` beside libllama (GGML_BACKEND_DL): ggml scores each against
    this CPU and loads the best it can run. llama-cpp-python never asks it to, so the model
    would find no backend. A build with the backend linked in (scripts/setup's, from source)
    has no such files and needs nothing. Either way, the library the CPU backend lives in
    is returned, for the log and diagnostics (`haswell` for libggml-cpu-haswell.so).
    """
    base = Path(getattr(llama_cpp.llama_cpp, "_base_path", Path(llama_cpp.__file__).parent / "lib"))
    ggml = ctypes.CDLL(str(base / "libggml.so"))
    ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
    if any(base.glob("libggml-cpu-*.so")):
        ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        ggml.ggml_backend_load_all_from_path(os.fsencode(base))
    ggml.ggml_backend_reg_get.restype = ctypes.c_void_p
    ggml.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]
    ggml.ggml_backend_reg_name.restype = ctypes.c_char_p
    ggml.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
    ggml.ggml_backend_reg_get_proc_address.restype = ctypes.c_void_p
    ggml.ggml_backend_reg_get_proc_address.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    for index in range(ggml.ggml_backend_reg_count()):
        reg = ggml.ggml_backend_reg_get(index)
        if ggml.ggml_backend_reg_name(reg) != b"CPU":
            continue
        # The library a CPU backend function lives in names the variant ggml chose.
        function = ggml.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_get_features")
        return _library_of(function) or "built in"
    raise RuntimeError(f"None of llama.cpp's CPU backends in {base} can run on this CPU")


class _DlInfo(ctypes.Structure):
    _fields_ = (
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    )


def _library_of(address: int | None) -> str | None:
    """`haswell` for an address in libggml-cpu-haswell.so, or the library's file name."""
    if not address:
        return None
    info = _DlInfo()
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except AttributeError:
        return None
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    name = os.path.basename(os.fsdecode(info.dli_fname))
    variant = name.removeprefix("libggml-cpu-").removesuffix(".so")
    return variant if variant != name else name


class Protocol:
    """Line I/O with the parent, safe from llama.cpp writing to fd 1."""

    def __init__(self, heartbeat: float = HEARTBEAT) -> None:
        self.heartbeat = heartbeat
        self._out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)  # anything native code prints goes to stderr, not the protocol
        self._lock = threading.Lock()
        self.requests: queue.Queue[dict[str, Any]] = queue.Queue()
        self.cancelled: set[int] = set()
        self.serving = 0  # id of the request being served; 0 while idle
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._beat, daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        """Write one message to the parent (from any thread)."""
        with self._lock:
            self._out.write(json.dumps(message) + "\n")

    def _beat(self) -> None:
        """Say that the request being served is still being worked on.

        From its own thread, which runs while llama.cpp computes (ctypes releases the GIL
        around native calls): only a process that is stopped, frozen or starved of CPU
        falls silent, however long a prompt takes to evaluate.
        """
        while True:
            time.sleep(self.heartbeat)
            if rid := self.serving:
                self.send({"id": rid, "alive": True})

    def _read(self) -> None:
        for line in sys.stdin:
            message = json.loads(line)
            if message.get("op") == "cancel":
                self.cancelled.add(message["id"])
            else:
                self.requests.put(message)
        # The parent closed the pipe or died: nobody reads what a running generation would
        # still write, so stop now instead of finishing it. As a SIGTERM, not os._exit, so
        # that a process-wide handler (the tests' coverage) still runs; such a handler runs
        # in the main thread, which the stop request wakes if it waits for work.
        self.requests.put({"id": 0, "op": "stop"})
        signal.raise_signal(signal.SIGTERM)


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
            # Sliding-window layers keep only their window, as llama-server does: the
            # prefix snapshots stand in where a cut-back would need what the window dropped.
            swa_full=False,
            verbose=False,
        )
        self.vocab = Vocabulary(self.llm._model)
        self.load_seconds = time.monotonic() - started
        self.bos_text = self._token_text(self.llm.token_bos())
        self.eos_text = self._token_text(self.llm.token_eos())
        self._n_swa = max(1, int(llama_cpp.llama_model_n_swa(self.llm._model.model)))
        self._grammars: LruCache[str, Any] = LruCache(MAX_GRAMMARS, on_evict=llama_cpp.llama_sampler_free)
        # Prefix tokens -> sequence state, restored by requests that start with the prefix.
        self._snapshots: LruCache[tuple[int, ...], ctypes.Array[ctypes.c_uint8]] = LruCache(
            MAX_SNAPSHOTS, weight=len, budget=MAX_SNAPSHOT_BYTES
        )
        # Whether the memory ends with a generation (worth a snapshot before it is overwritten).
        self._generated = False
        # Whether a snapshot may be restored and cut back (not where the model cannot cut).
        self._partial_restores = True
        # The last generation's output: (token, whether it was forced), for its timings and tests.
        self.last_output: list[tuple[int, bool]] = []

    def _token_text(self, token: int) -> str:
        return self.llm.detokenize([token], special=True).decode("utf-8", "replace") if token >= 0 else ""

    def tokenize(self, text: str) -> list[int]:
        """The tokens of `text`, special tokens read as such; BOS added unless the text starts with it."""
        add_bos = not (self.bos_text and text.startswith(self.bos_text))
        return self.llm.tokenize(text.encode(), add_bos=add_bos, special=True)

    def grammar(self, text: str) -> Any:
        """The parsed grammar sampler for `text` (ValueError if llama.cpp refuses it)."""
        if text not in self._grammars:
            self._grammars[text] = parse_grammar(self.vocab, text)
        return self._grammars[text]

    def _reuse_prefix(self, tokens: list[int], *, keep_last: bool = True) -> tuple[int, int]:
        """Bring the model's memory to the longest known prefix of `tokens`.

        Returns how many of `tokens` are in the model's memory now, and how many of those
        were reused rather than evaluated for this request.

        With `keep_last` at least the last token is evaluated again, so the sampler has
        fresh logits. The memory left by the last request is cut back to the prefix it
        shares, where the model can (a transformer can; a recurrent or hybrid model such as
        Qwen3.5 cannot, nor a sliding-window cache that dropped what the prefix needs). A
        state snapshot that shares more wins, or stands in where cutting back fails; if
        there is none, the shared prefix is evaluated first and snapshotted, as it is likely
        stable and the next request can start there. A generation's end is snapshotted
        before another prompt overwrites it: the conversation's next turn starts there.
        """
        llm = self.llm
        limit = len(tokens) - 1 if keep_last else len(tokens)
        memory: list[int] = llm._input_ids[: llm.n_tokens].tolist()
        shared = min(_shared_length(memory, tokens), limit)
        if self._generated and shared < llm.n_tokens:
            self._snapshot(tuple(memory))
        self._generated = False
        full = max(
            (p for p in self._snapshots if len(p) <= limit and tuple(tokens[: len(p)]) == p), key=len, default=()
        )
        if full:
            self._snapshots[full]  # in use (now the most recent), even where the memory serves
        memory_kept = True
        if self._partial_restores:
            # A snapshot that shares more than the memory and any whole snapshot, cut back
            # to what it shares (a conversation's last turn, retokenized differently).
            partial = max(((min(_shared_length(p, tokens), limit), p) for p in self._snapshots), default=(0, ()))
            length, prefix = partial
            if length > max(shared, len(full)):
                memory_kept = False
                if self._restore(prefix) and self._cut_back(length):
                    self._snapshots[prefix]  # in use: now the most recent
                    return length, length
                self._partial_restores = False  # the model cannot cut back: never again
        if memory_kept and shared > 0 and shared >= len(full) and self._cut_back(shared):
            return shared, shared
        if full and self._restore(full):
            return len(full), len(full)
        self.clear()
        if shared > 0:
            llm.eval(tokens[:shared])
            self._snapshot(tuple(tokens[:shared]))
        return llm.n_tokens, 0

    def _restore(self, prefix: tuple[int, ...]) -> bool:
        """Replace the memory by the snapshot of `prefix`."""
        self.clear()
        state = self._snapshots.peek(prefix)  # the caller marks it in use once it serves
        if state is None or not llama_cpp.llama_state_seq_set_data(self.llm._ctx.ctx, state, len(state), 0):
            self.clear()
            return False
        self.llm.input_ids[: len(prefix)] = prefix
        self.llm.n_tokens = len(prefix)
        return True

    def _cut_back(self, shared: int) -> bool:
        """Drop the memory after the first `shared` tokens, if the model can."""
        llm = self.llm
        if shared < llm.n_tokens:
            # A sliding-window cache (or a recurrent state) may no longer hold what the
            # positions before `shared` need; llama-server makes the same check.
            memory = llama_cpp.llama_get_memory(llm._ctx.ctx)
            if llama_cpp.llama_memory_seq_pos_min(memory, 0) > max(0, shared - self._n_swa):
                return False
            if not llm._ctx.kv_cache_seq_rm(0, shared, -1):
                return False
        llm.n_tokens = shared
        return True

    def clear(self) -> None:
        """Empty the model's memory (its snapshots stay)."""
        self.llm.reset()  # type: ignore[no-untyped-call]
        self.llm._ctx.kv_cache_seq_rm(-1, 0, -1)

    def snapshot_memory(self) -> dict[str, int]:
        """What the kept state snapshots hold, for health and diagnostics."""
        return {"snapshots": len(self._snapshots), "snapshot_bytes": self._snapshots.weight}

    def _snapshot(self, prefix: tuple[int, ...]) -> None:
        # The byte bound as it stands when a snapshot is taken (a test lowers it on a
        # loaded model): the least recently used go until the kept ones are within it.
        self._snapshots.budget = MAX_SNAPSHOT_BYTES
        ctx = self.llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        if size <= MAX_SNAPSHOT_BYTES:
            state = (ctypes.c_uint8 * size)()
            if llama_cpp.llama_state_seq_get_data(ctx, state, size, 0) == size:
                self._snapshots[prefix] = state  # the least recently used go past either bound

    def prefill(self, prompt: str, cancelled: Callable[[], bool] = lambda: False) -> dict[str, float]:
        """Evaluate `prompt` and keep its state, for requests that start with it.

        Evaluated PREFILL_CHUNK tokens at a time; once `cancelled`, no further chunk and
        no snapshot.
        """
        started = time.monotonic()
        llm = self.llm
        tokens = self.tokenize(prompt)
        if len(tokens) + 1 > llm.n_ctx():
            raise ValueError(f"The prompt takes {len(tokens)} tokens; the context holds {llm.n_ctx()}")
        start, cached = self._reuse_prefix(tokens, keep_last=False)
        for chunk in range(start, len(tokens), PREFILL_CHUNK):
            if cancelled():
                break
            llm.eval(tokens[chunk : chunk + PREFILL_CHUNK])
        if llm.n_tokens == len(tokens) and tuple(tokens) not in self._snapshots:
            self._snapshot(tuple(tokens))
        return {"prompt_tokens": len(tokens), "cached_tokens": cached, "prompt_seconds": time.monotonic() - started}

    def generate(self, request: dict[str, Any], cancelled: set[int]) -> Iterator[dict[str, Any]]:
        """Run one generation: text events as it decodes, then `done` with why it ended and its timings."""
        llm = self.llm
        started = time.monotonic()
        tokens = self.tokenize(request["prompt"])
        if len(tokens) + 1 > llm.n_ctx():
            raise ValueError(f"The prompt takes {len(tokens)} tokens; the context holds {llm.n_ctx()}")
        grammar_text = request.get("grammar")
        if request.get("json_schema") is not None:
            # llama.cpp's own JSON-schema converter, run here so HA never loads llama.cpp.
            grammar_text = json_schema_to_gbnf(json.dumps(request["json_schema"]))
        grammar = self.grammar(grammar_text) if grammar_text else None
        start, cached = self._reuse_prefix(tokens)
        # Same prompt, same answer: sampling is seeded (0 unless the request says otherwise).
        sampling = Sampling(
            temperature=request["temperature"],
            top_k=request["top_k"],
            top_p=request["top_p"],
            seed=request["seed"] if request.get("seed") is not None else 0,
        )
        decoder = Decoder(self.vocab, llm._ctx.ctx, grammar, sampling)
        try:
            llm.eval(tokens[start:])
            self._generated = True
            reason, first_token_at = yield from self._decode(request, decoder, tokens, cancelled)
            ended = time.monotonic()
            first_token_at = first_token_at or ended
            forced = sum(was_forced for _, was_forced in self.last_output)
            timings = {
                "prompt_tokens": len(tokens),
                "cached_tokens": cached,
                "decoded_tokens": len(self.last_output) - forced,
                "forced_tokens": forced,
                "prompt_seconds": first_token_at - started,
                "decode_seconds": ended - first_token_at,
                "grammar_seconds": decoder.grammar_seconds,
            }
            yield {"done": {"reason": reason, "timings": timings}}
        finally:
            decoder.close()

    def _decode(
        self, request: dict[str, Any], decoder: Decoder, tokens: list[int], cancelled: set[int]
    ) -> Generator[dict[str, Any], None, tuple[str, float]]:
        """Yield the text of the output after `tokens`; returns why it ended and when its first token came."""
        llm = self.llm
        stops: list[str] = request.get("stop") or []
        fast_forward = decoder.constrained and request.get("fast_forward", True)
        max_tokens = min(request["max_tokens"], llm.n_ctx() - len(tokens))
        output = self.last_output = []
        utf8 = codecs.getincrementaldecoder("utf-8")("ignore")
        text = ""
        sent = 0
        first_token_at = 0.0
        reason = "length"
        pending: list[int] = []  # output tokens the model has not evaluated yet
        forced = False
        while True:
            new: list[int] = []
            complete = False
            # Right after forced text comes a choice (what is left of it is the token left
            # to sampling), so forced text is looked for after sampled tokens only.
            if fast_forward and not forced:
                previous = output[-1][0] if output else tokens[-1]
                new, complete = self._forced_tokens(decoder, previous, max_tokens - len(output))
            forced = bool(new)
            if not new and not complete:
                if len(output) >= max_tokens:
                    break
                if request["id"] in cancelled:
                    reason = "cancelled"
                    break
                if pending:
                    llm.eval(pending)
                    pending = []
                token = decoder.sample()
                if self.vocab.is_eog(token):
                    reason = "stop"
                    break
                new = [token]
            first_token_at = first_token_at or time.monotonic()
            output += [(t, forced) for t in new]
            pending += new
            text += utf8.decode(b"".join(self.vocab.piece(t) for t in new))
            # The text ends at a stop string, or where the grammar does.
            hit = min((i for i in (text.find(s, sent) for s in stops) if i >= 0), default=len(text) if complete else -1)
            if hit >= 0:
                text = text[:hit]
                reason = "stop"
            # Hold back a tail that may still become a stop string.
            safe = len(text) if reason == "stop" else releasable_length(text, stops)
            if safe > sent:
                yield {"text": text[sent:safe]}
                sent = safe
            if reason == "stop":
                break
        if sent < len(text) and reason != "cancelled":
            yield {"text": text[sent:]}
        return reason, first_token_at

    def _forced_tokens(self, decoder: Decoder, previous: int, budget: int) -> tuple[list[int], bool]:
        """Tokens of the text the grammar forces next, accepted into the grammar; and
        whether the grammar must end after them.

        The forced text is tokenized after the piece of the token before it, as the model's
        own tokenizer would split the whole. Nothing is forced if that re-tokenization does
        not keep `previous` as it is (the seam would be one the tokenizer never makes), and
        the last token is left to sampling unless the grammar ends there (it might merge
        with what follows). llama.cpp's grammar sampler vouches for every token.
        """
        data, end = decoder.forced_bytes()
        if not data:
            return [], end
        cut = whole_characters(data)
        if cut == 0:
            return [], False
        head = self.vocab.piece(previous, special=True)
        text = head + data[:cut]
        tokens = self.llm.tokenize(text, add_bos=False, special=True)
        whole = end and cut == len(data)
        split = [(t, self.vocab.piece(t, special=True)) for t in tokens]
        take = forced_count(split, previous, text, ends=whole, budget=budget)
        accepted: list[int] = []
        for token in tokens[1 : 1 + take]:
            if not decoder.allowed(token):
                break
            decoder.accept(token)
            accepted.append(token)
        return accepted, whole and 0 < take == len(tokens) - 1 == len(accepted)


def _shared_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens `a` and `b` share from their start."""
    shared = 0
    for old, new in zip(a, b, strict=False):
        if old != new:
            break
        shared += 1
    return shared


def serve(options: dict[str, Any]) -> None:
    """Load the model, say it is ready, then serve requests one at a time until told to stop."""
    # Before llama.cpp starts its threads: they inherit it.
    os.nice(int(options.get("niceness", NICENESS)))
    io = Protocol(float(options.get("heartbeat", HEARTBEAT)))
    try:
        cpu_backend = load_cpu_backend()
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
            "cpu_backend": cpu_backend,
        }
    )
    while True:
        request = io.requests.get()
        rid = request["id"]
        if request["op"] == "stop":
            return
        io.serving = rid
        try:
            if request["op"] == "ping":
                io.send({"id": rid, "result": model.snapshot_memory()})
            elif request["op"] == "tokenize":
                io.send({"id": rid, "result": len(model.tokenize(request["text"]))})
            elif request["op"] == "prefill":
                result = model.prefill(request["prompt"], functools.partial(io.cancelled.__contains__, rid))
                io.send({"id": rid, "result": result})
            elif request["op"] == "generate":
                for event in model.generate(request, io.cancelled):
                    io.send({"id": rid, **event})
            else:
                io.send({"id": rid, "error": f"unknown op {request['op']!r}"})
        except (ValueError, RuntimeError) as err:
            io.send({"id": rid, "error": str(err) or type(err).__name__})
        io.serving = 0
        io.cancelled.discard(rid)


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]))
