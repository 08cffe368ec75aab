"""Background prefill: a stable prefix evaluated ahead, reused by the requests that start
with it, on a plain transformer and on a hybrid (recurrent) model alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
import contextlib
from pathlib import Path

import llama_cpp
import numpy as np
import numpy.typing as npt
import pytest

from botpsy_runtime import worker
from botpsy_runtime.embedded import EmbeddedEngine, EmbeddedOptions
from botpsy_runtime.engine import GenerateRequest, Preemptible, Timings
from botpsy_runtime.errors import PrefillInterruptedError

from .generation import run

PREFIX = "<|im_start|>system\nYou control a home. Lights: kitchen, hall, desk.<|im_end|>\n"
OTHER = "<|im_start|>system\nSomething else entirely.<|im_end|>\n"


def turn(text: str) -> str:
    return f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(params=["qwen3", "gemma3", "qwen35"])
async def engine(request: pytest.FixtureRequest, tiny_models: dict[str, Path]) -> AsyncIterator[EmbeddedEngine]:
    engine = EmbeddedEngine(EmbeddedOptions(str(tiny_models[request.param]), n_ctx=512, n_threads=1, n_batch=64))
    await engine.async_load()
    yield engine
    await engine.async_unload()


async def test_a_request_after_prefill_evaluates_only_its_suffix(engine: EmbeddedEngine) -> None:
    prefix_tokens = await engine.async_count_tokens(PREFIX)
    prefilled = await engine.async_prefill(PREFIX)
    assert (prefilled.prompt_tokens, prefilled.cached_tokens) == (prefix_tokens, 0)
    assert prefilled.prompt_seconds > 0
    for text in ("turn on the kitchen", "turn off the hall"):
        prompt = PREFIX + turn(text)
        _text, finished = await run(engine, GenerateRequest(prompt=prompt, max_tokens=3))
        # At least the prefix (a transformer also keeps what the last turn shares).
        assert finished.timings.cached_tokens >= prefix_tokens
        assert finished.timings.evaluated_tokens == await engine.async_count_tokens(prompt) - (
            finished.timings.cached_tokens
        )
        if text.startswith("turn on"):
            assert finished.timings.cached_tokens == prefix_tokens
    # A request with another prefix in between: the snapshot still serves the prefix (a
    # transformer's, also the user turn's start, from the last generation's end kept then).
    await run(engine, GenerateRequest(prompt=OTHER + turn("hello"), max_tokens=3))
    _text, finished = await run(engine, GenerateRequest(prompt=PREFIX + turn("dim the desk"), max_tokens=3))
    assert finished.timings.cached_tokens >= prefix_tokens
    # Prefilling the same prefix again evaluates nothing.
    again = await engine.async_prefill(PREFIX)
    assert again.cached_tokens == prefix_tokens
    health = await engine.async_health()
    assert "state snapshots" in health.detail and not health.detail.startswith("worker 0")
    memory = await engine.async_snapshot_memory()
    assert memory["snapshots"] >= 1 and memory["snapshot_bytes"] > 0


async def test_prefilled_state_gives_the_same_answer(engine: EmbeddedEngine) -> None:
    request = GenerateRequest(prompt=PREFIX + turn("turn on the hall"), max_tokens=12, temperature=0.0)
    cold, cold_finished = await run(engine, request)
    assert cold_finished.timings.cached_tokens == 0
    await run(engine, GenerateRequest(prompt=OTHER + turn("x"), max_tokens=3))
    await engine.async_prefill(PREFIX)
    await run(engine, GenerateRequest(prompt=OTHER + turn("y"), max_tokens=3))
    warm, warm_finished = await run(engine, request)
    # The prefix's snapshot, or (more) the cold request's own end, kept when it was overwritten.
    assert warm_finished.timings.cached_tokens >= await engine.async_count_tokens(PREFIX)
    assert warm == cold


async def test_a_follow_up_starts_where_its_conversation_ended(engine: EmbeddedEngine) -> None:
    """A conversation's next turn extends its last prompt and output: after other requests
    and a prefill in between, it evaluates its own words (and what the model's output
    retokenizes differently), and answers as a cold evaluation does."""
    first = PREFIX + turn("turn on the hall")
    output, _finished = await run(engine, GenerateRequest(prompt=first, max_tokens=8, temperature=0.0))
    await run(engine, GenerateRequest(prompt=OTHER + turn("hello"), max_tokens=3))
    await engine.async_prefill(PREFIX)
    follow_up = GenerateRequest(
        prompt=first + output + "<|im_end|>\n" + turn("and the desk"), max_tokens=6, temperature=0.0
    )
    warm, finished = await run(engine, follow_up)
    assert finished.timings.cached_tokens >= await engine.async_count_tokens(first) - 1
    info = engine.model_info
    assert info is not None
    if info.architecture != "qwen35":  # a transformer also keeps the output it can cut back to
        assert finished.timings.evaluated_tokens <= await engine.async_count_tokens(output + turn("and the desk")) + 2
    await run(engine, GenerateRequest(prompt=OTHER + turn("reset"), max_tokens=3))
    cold_engine = EmbeddedEngine(EmbeddedOptions(engine.options.model_path, n_ctx=512, n_threads=1, n_batch=64))
    await cold_engine.async_load()
    try:
        cold, cold_finished = await run(cold_engine, follow_up)
    finally:
        await cold_engine.async_unload()
    assert cold_finished.timings.cached_tokens == 0
    assert warm == cold


def test_snapshots_are_bounded_by_count_and_bytes(
    tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = worker.Model({"model_path": str(tiny_models["qwen35"]), "n_ctx": 512, "n_batch": 64, "n_threads": 1})
    # No two share a first token (a shared start would be snapshotted on its own).
    names = ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Hotel", "India", "Juliett", "Kilo")
    prefixes = [f"{name} home, a system prompt.\n" for name in names]
    assert len(prefixes) == worker.MAX_SNAPSHOTS + 2
    for prefix in prefixes:
        model.prefill(prefix)
    memory = model.snapshot_memory()
    assert memory["snapshots"] == worker.MAX_SNAPSHOTS
    one = memory["snapshot_bytes"] // memory["snapshots"]
    assert one > 0
    # Room for two and a half: the least recently used go.
    monkeypatch.setattr(worker, "MAX_SNAPSHOT_BYTES", one * 5 // 2)
    model.prefill(prefixes[0])
    memory = model.snapshot_memory()
    assert memory["snapshots"] == 2
    assert memory["snapshot_bytes"] <= worker.MAX_SNAPSHOT_BYTES
    assert model.prefill(prefixes[0])["cached_tokens"] == len(model.tokenize(prefixes[0]))
    assert model.prefill(prefixes[-1])["cached_tokens"] > 0  # the most recent but one is kept
    assert model.prefill(prefixes[1])["cached_tokens"] == 0  # evicted
    # A snapshot larger than the whole budget is not kept at all.
    monkeypatch.setattr(worker, "MAX_SNAPSHOT_BYTES", one // 2)
    model.prefill("Golf home, a system prompt.\n")
    assert model.snapshot_memory()["snapshot_bytes"] <= one // 2


async def test_cancelled_prefill_leaves_the_engine_usable(engine: EmbeddedEngine) -> None:
    long_prefix = PREFIX * 6
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(0.002):
            await engine.async_prefill(long_prefix)
    _text, finished = await run(engine, GenerateRequest(prompt=PREFIX + turn("hi"), max_tokens=3))
    assert finished.reason == "length"


def test_prefill_stops_when_cancelled(tiny_models: dict[str, Path]) -> None:
    model = worker.Model({"model_path": str(tiny_models["qwen3"]), "n_ctx": 512, "n_batch": 16, "n_threads": 1})
    result = model.prefill(PREFIX, lambda: True)
    assert result["cached_tokens"] == 0
    assert model.snapshot_memory()["snapshots"] == 0
    assert model.prefill(PREFIX)["cached_tokens"] == 0
    assert model.snapshot_memory()["snapshots"] == 1


def test_a_prefill_looks_for_requests_between_small_chunks(tiny_models: dict[str, Path]) -> None:
    """A request waits for one chunk of a background prefill at most, however long it is."""
    model = worker.Model({"model_path": str(tiny_models["qwen3"]), "n_ctx": 512, "n_batch": 256, "n_threads": 1})
    looks = iter([False, False, True])
    result = model.prefill(PREFIX * 4, lambda: next(looks))
    assert len(model.tokenize(PREFIX * 4)) > 3 * worker.PREFILL_CHUNK
    assert model.llm.n_tokens == 2 * worker.PREFILL_CHUNK  # two chunks, then it stopped
    assert model.snapshot_memory()["snapshots"] == 0
    assert result["cached_tokens"] == 0


async def test_a_quiet_prefill_waits_for_quiet_and_yields_to_a_request() -> None:
    guard = Preemptible()
    ran: list[str] = []

    async def work(name: str) -> Timings:
        ran.append(name)
        return Timings(prompt_tokens=1)

    waiting = asyncio.ensure_future(guard.run(work("first"), quiet=0.05))
    await asyncio.sleep(0.01)
    guard.interrupt()  # a request arrived during the quiet moment
    with pytest.raises(PrefillInterruptedError):
        await waiting
    assert ran == []
    assert (await guard.run(work("second"), quiet=0.01)).prompt_tokens == 1
    assert ran == ["second"]


async def test_a_request_never_waits_for_a_prefill(engine: EmbeddedEngine) -> None:
    """A prefill waiting for the engine (here: held by the test) is interrupted by a request."""
    async with engine._lock:
        prefill = asyncio.ensure_future(engine.async_prefill(PREFIX))
        await asyncio.sleep(0.01)
        assert not prefill.done()
        request = asyncio.ensure_future(run(engine, GenerateRequest(prompt=PREFIX + turn("hi"), max_tokens=2)))
        with pytest.raises(PrefillInterruptedError):
            async with asyncio.timeout(10):  # without the interruption it would wait for the lock
                await prefill
    _text, finished = await request
    assert finished.timings.cached_tokens == 0  # nothing was prefilled
    # The engine is still fine for the next prefill.
    assert (await engine.async_prefill(PREFIX)).prompt_tokens == await engine.async_count_tokens(PREFIX)


async def test_cancelling_the_caller_of_a_prefill_still_cancels_it() -> None:
    """Preemptible tells an interruption apart from the caller being cancelled."""
    guard = Preemptible()
    started = asyncio.Event()

    async def slow() -> Timings:
        started.set()
        await asyncio.sleep(10)
        return Timings()

    caller = asyncio.ensure_future(guard.run(slow()))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    interrupted = asyncio.ensure_future(guard.run(slow()))
    await asyncio.sleep(0)
    guard.interrupt()
    with pytest.raises(PrefillInterruptedError):
        await interrupted


@pytest.mark.parametrize("arch", ["qwen3", "gemma3", "qwen35"])
def test_reused_state_gives_the_cold_logits(tiny_models: dict[str, Path], arch: str) -> None:
    """Whatever a request reuses (a cut-back cache, a snapshot), the model sees what a cold
    evaluation gives it, also once a sliding window's cache has dropped what a cut-back needs."""
    home = PREFIX + "".join(f"Light {n}: on, brightness {n * 7 % 100}.\n" for n in range(24))
    # The first turn outgrows the window's cache (the 16-token window plus a batch, padded).
    prompts = [home + turn("turn on the hall" + ", the porch" * 40), home + turn("hi"), home + turn("dim the desk")]
    warm = _model(tiny_models[arch])
    for prompt in prompts:
        reused, warm_logits = _evaluate(warm, prompt)
        cold_reused, cold_logits = _evaluate(_model(tiny_models[arch]), prompt)
        assert cold_reused == 0
        # Batches split differently, so only float rounding may differ (a lost window: ~0.1).
        np.testing.assert_allclose(warm_logits, cold_logits, rtol=0, atol=1e-3)
    assert reused >= len(warm.tokenize(home)) - 1  # the last request started after the home


def _model(path: Path) -> worker.Model:
    return worker.Model({"model_path": str(path), "n_ctx": 2048, "n_batch": 32, "n_threads": 1})


def _evaluate(model: worker.Model, prompt: str) -> tuple[int, npt.NDArray[np.float32]]:
    """Evaluate prompt as a request does: the tokens reused, and the next token's logits."""
    tokens = model.tokenize(prompt)
    _kept, reused = model._reuse_prefix(tokens)
    model.llm.eval(tokens[model.llm.n_tokens :])
    logits = llama_cpp.llama_get_logits_ith(model.llm._ctx.ctx, -1)
    return reused, np.ctypeslib.as_array(logits, shape=(model.llm.n_vocab(),)).copy()
