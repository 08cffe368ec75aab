"""The embedded engine on real llama.cpp, with tiny generated models."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
import os
from pathlib import Path
import re
import signal
from typing import Any

import pytest

from botpsy_runtime import embedded
from botpsy_runtime.embedded import EmbeddedEngine, EmbeddedOptions
from botpsy_runtime.engine import Finished, GenerateEvent, GenerateRequest, TextDelta
from botpsy_runtime.errors import EngineError, EngineUnavailableError, ModelLoadError
from botpsy_runtime.worker import NICENESS

from .generation import queued_behind, run

CALL_GRAMMAR = r'root ::= "<tool_call>" [a-z]{3,8} "</tool_call>"'
# Cannot end before 300 tokens: generation runs until max_tokens, cancelled or killed.
ENDLESS_GRAMMAR = r"root ::= [a-z]{300,}"


@pytest.fixture(params=["qwen3", "gemma3", "qwen35"])
async def engine(request: pytest.FixtureRequest, tiny_models: dict[str, Path]) -> AsyncIterator[EmbeddedEngine]:
    engine = EmbeddedEngine(EmbeddedOptions(str(tiny_models[request.param]), n_ctx=512, n_threads=2, n_batch=64))
    await engine.async_load()
    yield engine
    await engine.async_unload()


async def test_load_reports_model(engine: EmbeddedEngine, tiny_models: dict[str, Path]) -> None:
    info = engine.model_info
    assert info is not None
    assert info.architecture in tiny_models
    assert info.context_length == 512
    assert info.chat_template and "<|im_start|>" in info.chat_template
    assert info.eos_token == "<|im_end|>"
    assert info.load_seconds is not None and info.load_seconds > 0
    assert engine.pid is not None
    # The model waits for a core before HA does.
    assert os.getpriority(os.PRIO_PROCESS, engine.pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICENESS)
    assert (engine.worker_rss_bytes() or 0) > 1 << 20
    assert (await engine.async_health()).ok


async def test_count_tokens(engine: EmbeddedEngine) -> None:
    assert await engine.async_count_tokens("<|im_start|>user") >= 2
    longer = await engine.async_count_tokens("hello there, kitchen light")
    assert longer > await engine.async_count_tokens("hello")


async def test_grammar_constrains_output(engine: EmbeddedEngine) -> None:
    text, finished = await run(engine, GenerateRequest(prompt="turn on", grammar=CALL_GRAMMAR, max_tokens=40, seed=1))
    assert re.fullmatch(r"<tool_call>[a-z]{3,8}</tool_call>", text), text
    assert finished.reason == "stop"
    timings = finished.timings
    assert timings.prompt_tokens == await engine.async_count_tokens("turn on")
    assert 0 < timings.decoded_tokens <= 40
    assert timings.prompt_seconds > 0 and timings.decode_seconds > 0


async def test_chat_messages_are_rendered_with_the_model_template(engine: EmbeddedEngine) -> None:
    messages = [{"role": "user", "content": "turn on the light"}]
    _text, finished = await run(engine, GenerateRequest(messages=messages, grammar=CALL_GRAMMAR, max_tokens=40))
    assert engine.chat_template is not None
    prompt = engine.chat_template.render(messages)
    assert prompt.startswith("<|im_start|>user\nturn on the light")
    assert finished.timings.prompt_tokens == await engine.async_count_tokens(prompt)


async def test_stop_string_cuts_and_is_not_streamed(engine: EmbeddedEngine) -> None:
    grammar = r'root ::= "abc" "STOP" [a-z]{2,5}'
    events = [
        e async for e in engine.generate(GenerateRequest(prompt="x", grammar=grammar, stop=("STOP",), max_tokens=30))
    ]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "abc"
    assert isinstance(events[-1], Finished) and events[-1].reason == "stop"


async def test_max_tokens_ends_with_length(engine: EmbeddedEngine) -> None:
    _text, finished = await run(engine, GenerateRequest(prompt="x", grammar=ENDLESS_GRAMMAR, max_tokens=5))
    assert finished.reason == "length"
    assert finished.timings.decoded_tokens == 5


async def test_prefix_is_reported_cached(engine: EmbeddedEngine) -> None:
    prefix = "<|im_start|>system\nYou control a home with many lights.<|im_end|>\n"
    await run(engine, GenerateRequest(prompt=prefix + "first", max_tokens=2))
    _text, finished = await run(engine, GenerateRequest(prompt=prefix + "second turn", max_tokens=2))
    timings = finished.timings
    assert timings.cached_tokens < timings.prompt_tokens
    info = engine.model_info
    assert info is not None
    if info.architecture != "qwen35":
        # A transformer's KV cache is cut back to the shared prefix; so is a sliding-window
        # one while it still holds the window before the cut (it does for prompts this short).
        assert timings.cached_tokens >= await engine.async_count_tokens(prefix) - 1
    else:
        # Recurrent state cannot be cut back: this request evaluates everything again
        # (the figures say so) and keeps a snapshot at the prefix the two requests share...
        assert timings.cached_tokens == 0
        _text, third = await run(engine, GenerateRequest(prompt=prefix + "third one", max_tokens=2))
        # ...which the next request restores instead of evaluating the prefix.
        assert third.timings.cached_tokens >= await engine.async_count_tokens(prefix) - 1
        health = await engine.async_health()
        # (beside the ends of the two generations, kept for their conversations' next turns)
        assert "3 state snapshots" in health.detail, health.detail


async def test_a_generation_says_how_long_it_waited_behind_another(engine: EmbeddedEngine) -> None:
    """One generation at a time: the second, sent while the first is read, waits for it
    and says so (the stress run reads these waits; a user's diagnostics show them)."""
    request = GenerateRequest(prompt="hello", grammar=CALL_GRAMMAR, max_tokens=16, temperature=0.0)
    first, second = await queued_behind(engine, request, request)
    assert first < 0.3 <= second


async def test_restored_snapshot_gives_the_same_answer(tiny_models: dict[str, Path]) -> None:
    """A hybrid model restored from a snapshot answers exactly as if it evaluated everything."""
    prefix = "<|im_start|>system\nYou control a home with many lights.<|im_end|>\n"
    request = GenerateRequest(prompt=prefix + "turn on the hall", max_tokens=12, temperature=0.0)
    answers = []
    for warm_up in ([], ["first", "second"]):
        engine = EmbeddedEngine(EmbeddedOptions(str(tiny_models["qwen35"]), n_ctx=512, n_threads=2))
        await engine.async_load()
        try:
            for text in warm_up:
                await run(engine, GenerateRequest(prompt=prefix + text, max_tokens=2))
            answer, finished = await run(engine, request)
            answers.append((answer, finished.timings.cached_tokens > 0))
        finally:
            await engine.async_unload()
    assert answers[0][0] == answers[1][0]
    assert answers == [(answers[0][0], False), (answers[0][0], True)]


async def test_closing_the_stream_cancels_and_the_next_request_works(engine: EmbeddedEngine) -> None:
    """Closed halfway, the generation is cancelled with it (not later, by a task of the
    garbage collector's, after the lock went to the next request)."""
    before = asyncio.all_tasks()
    stream = engine.generate(GenerateRequest(prompt="x", grammar=ENDLESS_GRAMMAR, max_tokens=400))
    received = 0
    async for event in stream:
        assert isinstance(event, TextDelta)
        received += 1
        if received == 3:
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.sleep(0)
    assert [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task()] == []
    text, finished = await run(engine, GenerateRequest(prompt="y", grammar=CALL_GRAMMAR, max_tokens=40))
    assert text.startswith("<tool_call>") and finished.reason == "stop"


async def test_invalid_grammar_is_an_error_and_the_worker_survives(engine: EmbeddedEngine) -> None:
    pid = engine.pid
    with pytest.raises(EngineError):
        await run(engine, GenerateRequest(prompt="x", grammar="root ::= ( unclosed", max_tokens=4))
    assert engine.pid == pid
    text, _finished = await run(engine, GenerateRequest(prompt="x", grammar=CALL_GRAMMAR, max_tokens=40))
    assert text.startswith("<tool_call>")


async def test_worker_killed_mid_request(tiny_model: Path) -> None:
    failures: list[str] = []
    engine = EmbeddedEngine(
        EmbeddedOptions(str(tiny_model), n_ctx=512, n_threads=2), on_repeated_failure=failures.append
    )
    await engine.async_load()
    try:
        for crash in range(3):
            pid = engine.pid
            assert pid is not None
            stream: AsyncIterator[GenerateEvent] = engine.generate(
                GenerateRequest(prompt="x", grammar=ENDLESS_GRAMMAR, max_tokens=400)
            )
            with pytest.raises(EngineUnavailableError, match="SIGKILL"):
                async for _event in stream:
                    os.kill(pid, signal.SIGKILL)
            assert engine.pid is None
            assert failures == ([] if crash < 2 else [failures[0]])
            # The next request starts a fresh worker and succeeds.
            text, finished = await run(engine, GenerateRequest(prompt="y", grammar=CALL_GRAMMAR, max_tokens=40))
            assert text.startswith("<tool_call>") and finished.reason == "stop"
            assert engine.pid not in (None, pid)
        assert "SIGKILL" in failures[0]
    finally:
        await engine.async_unload()


async def test_worker_killed_by_an_illegal_instruction(tiny_model: Path) -> None:
    """A llama.cpp build for another CPU dies of SIGILL in the worker, never in HA; the
    message says what it likely means."""
    engine = EmbeddedEngine(EmbeddedOptions(str(tiny_model), n_ctx=512, n_threads=2))
    await engine.async_load()
    try:
        pid = engine.pid
        assert pid is not None
        stream = engine.generate(GenerateRequest(prompt="x", grammar=ENDLESS_GRAMMAR, max_tokens=400))
        with pytest.raises(EngineUnavailableError, match=r"SIGILL .*an instruction this CPU lacks"):
            async for _event in stream:
                os.kill(pid, signal.SIGILL)
    finally:
        await engine.async_unload()


async def test_worker_hung_mid_request(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stopped (SIGSTOP) worker is a clear error within the watchdog's time, is killed,
    and the next request gets a fresh worker."""
    monkeypatch.setattr(embedded, "WATCHDOG_TIMEOUT", 2.0)
    failures: list[str] = []
    engine = EmbeddedEngine(
        EmbeddedOptions(str(tiny_model), n_ctx=512, n_threads=2), on_repeated_failure=failures.append
    )
    await engine.async_load()
    try:
        pid = engine.pid
        assert pid is not None
        stream = engine.generate(GenerateRequest(prompt="x", grammar=ENDLESS_GRAMMAR, max_tokens=400))
        async with asyncio.timeout(60):  # a bound for the test, far above the watchdog's
            with pytest.raises(EngineUnavailableError, match="stopped answering for 2 seconds"):
                async for _event in stream:
                    os.kill(pid, signal.SIGSTOP)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped, not left stopped
        assert engine.pid is None
        text, finished = await run(engine, GenerateRequest(prompt="y", grammar=CALL_GRAMMAR, max_tokens=40))
        assert text.startswith("<tool_call>") and finished.reason == "stop"
        assert engine.pid not in (None, pid)
    finally:
        await engine.async_unload()


async def test_worker_hung_while_idle_is_replaced(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that froze between requests never took the next one up: it is killed and
    the request served by a fresh worker."""
    monkeypatch.setattr(embedded, "WATCHDOG_TIMEOUT", 2.0)
    engine = EmbeddedEngine(EmbeddedOptions(str(tiny_model), n_ctx=512, n_threads=2))
    await engine.async_load()
    try:
        pid = engine.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        text, finished = await run(engine, GenerateRequest(prompt="y", grammar=CALL_GRAMMAR, max_tokens=40))
        assert text.startswith("<tool_call>") and finished.reason == "stop"
        assert engine.pid not in (None, pid)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        await engine.async_unload()


async def test_long_evaluation_is_not_a_hang(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt that takes longer than the watchdog to evaluate, with no output meanwhile,
    is kept alive by the worker's heartbeat."""
    # The worker beats 15 times per watchdog period: every 7 ms here, while the 3,960-token
    # prefill takes about 0.2 s (more than the watchdog) on this machine.
    monkeypatch.setattr(embedded, "WATCHDOG_TIMEOUT", 0.1)
    engine = EmbeddedEngine(EmbeddedOptions(str(tiny_model), n_ctx=4096, n_threads=2, n_batch=64))
    await engine.async_load()
    heard: list[dict[str, object]] = []
    next_reply = engine._next

    async def spy(*args: Any) -> dict[str, Any] | None:
        reply = await next_reply(*args)
        heard.append(reply or {})
        return reply

    monkeypatch.setattr(engine, "_next", spy)
    try:
        pid = engine.pid
        timings = await engine.async_prefill("hello world " * 360)
        assert timings.prompt_tokens > 3000
        assert engine.pid == pid
        # The evaluation outlasted a heartbeat (else this test shows nothing).
        assert any("alive" in reply for reply in heard), heard
    finally:
        await engine.async_unload()


async def test_unload_stops_the_worker(tiny_model: Path) -> None:
    engine = EmbeddedEngine(EmbeddedOptions(str(tiny_model), n_ctx=512, n_threads=2))
    await engine.async_load()
    pid = engine.pid
    assert pid is not None
    await engine.async_unload()
    assert engine.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(EngineUnavailableError):
        await run(engine, GenerateRequest(prompt="x", max_tokens=2))


async def test_file_llama_cpp_refuses(tiny_model: Path, tmp_path: Path) -> None:
    """A GGUF whose header reads fine but whose architecture llama.cpp does not know."""
    data = tiny_model.read_bytes().replace(b"qwen3", b"qxen3")
    path = tmp_path / "unknown-arch.gguf"
    path.write_bytes(data)
    engine = EmbeddedEngine(EmbeddedOptions(str(path), n_ctx=512, n_threads=2))
    with pytest.raises(ModelLoadError, match=r"could not load|failed to start"):
        await engine.async_load()
    assert engine.pid is None


async def test_broken_file_is_refused_before_starting(tmp_path: Path) -> None:
    path = tmp_path / "broken.gguf"
    path.write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    engine = EmbeddedEngine(EmbeddedOptions(str(path)))
    with pytest.raises(ModelLoadError):
        await engine.async_load()
    assert engine.pid is None
