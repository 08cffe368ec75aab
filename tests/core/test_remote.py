"""The remote engine against a real llama-server on loopback, and against dead servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
import json
import re

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer
import pytest

from custom_components.botpsy.core import remote
from custom_components.botpsy.core.engine import Finished, GenerateRequest, TextDelta, Timings
from custom_components.botpsy.core.errors import EngineError, EngineUnavailableError, ModelLoadError
from custom_components.botpsy.core.remote import RemoteEngine, RemoteOptions
from tests.fault_proxy import FaultProxy, Mode

from .generation import run


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_llama_server_raw_prompt_with_grammar(llama_server: str, session: aiohttp.ClientSession) -> None:
    engine = RemoteEngine(RemoteOptions(llama_server + "/v1"), session)
    info = await engine.async_load()
    assert engine.supports_grammar
    assert info.chat_template and "<tool_call>" in info.chat_template
    assert info.context_length == 2048
    assert await engine.async_count_tokens("hello there") > 0
    prompt = "<|im_start|>user\nturn on the light<|im_end|>\n<|im_start|>assistant\n"
    grammar = r'root ::= "<tool_call>" [a-z]{3,8} "</tool_call>"'
    text, finished = await run(engine, GenerateRequest(prompt=prompt, grammar=grammar, max_tokens=40, seed=3))
    assert re.fullmatch(r"<tool_call>[a-z]{3,8}</tool_call>", text), text
    assert finished.reason == "stop"
    assert finished.timings.decoded_tokens > 0
    assert finished.timings.prompt_tokens >= await engine.async_count_tokens(prompt) - 1
    # The same prompt again: the server reuses its cached prefix and says so.
    _text, again = await run(engine, GenerateRequest(prompt=prompt, grammar=grammar, max_tokens=40, seed=3))
    assert again.timings.cached_tokens > 0
    assert (await engine.async_health()).ok


async def test_llama_server_prefill_caches_the_prefix(llama_server: str, session: aiohttp.ClientSession) -> None:
    engine = RemoteEngine(RemoteOptions(llama_server), session)
    await engine.async_load()
    prefix = "<|im_start|>system\nYou are a prefill test; the lights are all off.<|im_end|>\n"
    prefilled = await engine.async_prefill(prefix)
    assert prefilled.prompt_tokens == await engine.async_count_tokens(prefix)
    prompt = prefix + "<|im_start|>user\nturn on the light<|im_end|>\n<|im_start|>assistant\n"
    _text, finished = await run(engine, GenerateRequest(prompt=prompt, max_tokens=4, seed=1))
    assert finished.timings.cached_tokens >= prefilled.prompt_tokens - 1
    assert finished.timings.forced_tokens == 0


async def test_llama_server_chat_messages(llama_server: str, session: aiohttp.ClientSession) -> None:
    engine = RemoteEngine(RemoteOptions(llama_server), session)
    await engine.async_load()
    events = [
        e
        async for e in engine.generate(
            GenerateRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=6, temperature=0.0)
        )
    ]
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.reason in ("stop", "length")
    assert finished.timings.prompt_tokens > 0
    assert 0 < finished.timings.decoded_tokens <= 6


async def test_unknown_model_is_refused(llama_server: str, session: aiohttp.ClientSession) -> None:
    engine = RemoteEngine(RemoteOptions(llama_server, model="no-such-model"), session)
    with pytest.raises(ModelLoadError, match="no model 'no-such-model'"):
        await engine.async_load()


async def test_unreachable_server(session: aiohttp.ClientSession) -> None:
    engine = RemoteEngine(RemoteOptions("http://127.0.0.1:9"), session)
    with pytest.raises(EngineUnavailableError, match="Cannot reach"):
        await engine.async_load()
    assert not (await engine.async_health()).ok


async def _fake_openai_server(handlers: dict[str, web.StreamResponse | object]) -> TestServer:
    app = web.Application()
    for path, handler in handlers.items():
        app.router.add_route("*", path, handler)  # type: ignore[arg-type]
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


async def test_plain_openai_server_takes_messages_only(session: aiohttp.ClientSession) -> None:
    """A server without llama-server's /props (Ollama, vLLM): chat only, no grammar."""

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "qwen3.5:0.8b"}]})

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        assert body["model"] == "qwen3.5:0.8b" and body["stream"] is True
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunks = [
            {"choices": [{"delta": {"role": "assistant", "content": "Hel"}}]},
            {"choices": [{"delta": {"content": "lo"}}]},
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "id": "c1", "function": {"name": "light_on", "arguments": '{"a"'}}
                            ]
                        }
                    }
                ]
            },
            {
                "choices": [
                    {
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
                        "finish_reason": "tool_calls",
                    }
                ]
            },
            {
                "choices": [],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 8}},
            },
        ]
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response

    server = await _fake_openai_server({"/v1/models": models, "/v1/chat/completions": chat})
    try:
        engine = RemoteEngine(RemoteOptions(str(server.make_url("/v1"))), session)
        await engine.async_load()
        assert not engine.supports_grammar
        with pytest.raises(EngineError, match="raw prompt"):
            await run(engine, GenerateRequest(prompt="x"))
        with pytest.raises(EngineError, match="count tokens"):
            await engine.async_count_tokens("x")
        assert await engine.async_prefill("x") == Timings()
        events = [e async for e in engine.generate(GenerateRequest(messages=[{"role": "user", "content": "hi"}]))]
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo"]
        call = events[-2]
        assert (getattr(call, "name", None), getattr(call, "arguments", None)) == ("light_on", '{"a": 1}')
        finished = events[-1]
        assert isinstance(finished, Finished)
        assert (finished.timings.prompt_tokens, finished.timings.cached_tokens, finished.timings.decoded_tokens) == (
            12,
            8,
            5,
        )
    finally:
        await server.close()


async def test_server_dying_mid_stream_is_an_error(session: aiohttp.ClientSession) -> None:
    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "m"}]})

    async def chat(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\n')
        assert request.transport is not None
        request.transport.abort()
        return response

    server = await _fake_openai_server({"/v1/models": models, "/v1/chat/completions": chat})
    try:
        engine = RemoteEngine(RemoteOptions(str(server.make_url(""))), session)
        await engine.async_load()
        with pytest.raises(EngineUnavailableError, match="closed the connection in the middle of its answer"):
            await run(engine, GenerateRequest(messages=[{"role": "user", "content": "hi"}]))
    finally:
        await server.close()


async def test_api_key_refused(session: aiohttp.ClientSession) -> None:
    async def models(request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == "Bearer wrong"
        return web.json_response({"error": "unauthorized"}, status=401)

    server = await _fake_openai_server({"/v1/models": models})
    try:
        engine = RemoteEngine(RemoteOptions(str(server.make_url("")), api_key="wrong"), session)
        with pytest.raises(ModelLoadError, match="API key"):
            await engine.async_load()
    finally:
        await server.close()


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("down", r"Cannot connect to the server at http://127\.0\.0\.1:\d+ \(Connection refused\): is it running\?"),
        ("error500", r"The server answered HTTP 500: Internal server error \(injected\)"),
        ("garbage", r"The server did not answer with a stream of events: <html>"),
        ("cut", r"The server at http://127\.0\.0\.1:\d+ closed the connection in the middle of its answer"),
        ("stall", r"The server at http://127\.0\.0\.1:\d+ sent nothing for 2 seconds"),
        ("slow", None),
    ],
)
async def test_server_faults_are_clear_errors_and_the_next_request_is_served(
    llama_server: str, session: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch, mode: Mode, error: str | None
) -> None:
    """Real llama-server behind a proxy that fails: each fault is an error that says what
    happened (a slow server is only slow), and once the server is well the next request is
    answered."""
    monkeypatch.setattr(remote, "READ_TIMEOUT", 2.0)
    proxy = FaultProxy(llama_server, delay=0.05)
    await proxy.async_start()
    try:
        engine = RemoteEngine(RemoteOptions(proxy.url), session)
        await engine.async_load()
        request = GenerateRequest(prompt="<|im_start|>user\nhi", grammar=r'root ::= "ok" [a-z]{2,6}', max_tokens=20)
        await proxy.async_set(mode)
        if error is None:
            text, _finished = await run(engine, request)
            assert text.startswith("ok")
        else:
            async with asyncio.timeout(60):  # a bound for the test, far above the stall's
                with pytest.raises(EngineError, match=error):
                    await run(engine, request)
        assert proxy.faulted >= 1 or mode == "down"
        await proxy.async_set("pass")
        text, finished = await run(engine, request)
        assert text.startswith("ok") and finished.reason == "stop"
    finally:
        await proxy.async_close()
