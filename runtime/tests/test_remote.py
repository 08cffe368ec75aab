"""The remote engine against a real llama-server on loopback, and against dead servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
import os
from pathlib import Path
import re
from typing import Any

import aiohttp
import pytest

from botpsy_runtime import gbnf, remote
from botpsy_runtime.engine import Finished, GenerateRequest, TextDelta, Timings
from botpsy_runtime.errors import EngineError, EngineUnavailableError, ModelLoadError
from botpsy_runtime.formats import FORMATS
from botpsy_runtime.remote import RemoteEngine, RemoteOptions
from scripts.testing.fault_proxy import FaultProxy, Mode
from scripts.testing.grammar_check import GrammarChecker
from scripts.testing.model_fixtures import serving_llama_server
from scripts.testing.scripted_server import CUT, Answer, ScriptedServer, Split, end, token
from scripts.testing.tiny_gguf import write_tiny_model

from .generation import queued_behind, run
from .grammars import call_grammar


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_llama_server_raw_prompt_with_grammar(llama_server: str, session: aiohttp.ClientSession) -> None:
    engine = RemoteEngine(RemoteOptions(llama_server + "/v1"), session)
    info = await engine.async_load()
    assert engine.supports_grammar
    assert engine.slots == 1  # the server's one: a second generation waits for it here
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


async def test_plain_openai_server_takes_messages_only(session: aiohttp.ClientSession) -> None:
    """A server without llama-server's /props (Ollama, vLLM): chat only, no grammar."""
    chunks: Answer = [
        {"choices": [{"delta": {"role": "assistant", "content": "Hel"}}]},
        {"choices": [{"delta": {"content": "lo"}}]},
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "light_on", "arguments": '{"a"'}}]
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
    async with ScriptedServer([chunks], native=False, models=["qwen3.5:0.8b"]) as server:
        engine = RemoteEngine(RemoteOptions(server.url + "/v1"), session)
        await engine.async_load()
        assert not engine.supports_grammar
        with pytest.raises(EngineError, match="raw prompt"):
            await run(engine, GenerateRequest(prompt="x"))
        with pytest.raises(EngineError, match="count tokens"):
            await engine.async_count_tokens("x")
        assert await engine.async_prefill("x") == Timings()
        events = [e async for e in engine.generate(GenerateRequest(messages=[{"role": "user", "content": "hi"}]))]
        [body] = server.bodies
        assert body["model"] == "qwen3.5:0.8b" and body["stream"] is True
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


async def test_server_dying_mid_stream_is_an_error(session: aiohttp.ClientSession) -> None:
    answer: Answer = [{"choices": [{"delta": {"content": "Hi"}}]}, CUT]
    async with ScriptedServer([answer], native=False) as server:
        engine = RemoteEngine(RemoteOptions(server.url), session)
        await engine.async_load()
        with pytest.raises(EngineUnavailableError, match="closed the connection in the middle of its answer"):
            await run(engine, GenerateRequest(messages=[{"role": "user", "content": "hi"}]))


async def test_api_key_refused(session: aiohttp.ClientSession) -> None:
    async with ScriptedServer(native=False, api_key="right") as server:
        engine = RemoteEngine(RemoteOptions(server.url, api_key="wrong"), session)
        with pytest.raises(ModelLoadError, match="API key"):
            await engine.async_load()
    assert {seen.authorization for seen in server.seen} == {"Bearer wrong"}


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


async def generate_events(engine: RemoteEngine, request: GenerateRequest) -> tuple[list[str], Finished]:
    events = [e async for e in engine.generate(request)]
    finished = events[-1]
    assert isinstance(finished, Finished)
    return [e.text for e in events if isinstance(e, TextDelta)], finished


async def test_forced_text_is_appended_between_one_token_requests(session: aiohttp.ClientSession) -> None:
    """Inside a call the server samples one token per request; what the grammar forces after
    it is tokenized by the server (with that token, whose split it must keep) and sent back
    as prompt tokens, all but its last token unless the grammar ends there."""
    script = [
        [token("a", 1), end("limit", prompt_n=3, cache_n=5)],
        [token("ef", 3), end("limit", prompt_n=2)],
        [token("x", 4), end("limit")],
    ]
    splits = {"abcdef": [(1, "a"), (2, "bcd"), (3, "ef")], "xghij": [(4, "x"), (5, "ghij")]}
    grammar = 'root ::= "a" "bcdef" ( "x" | "y" ) "ghij"'
    async with ScriptedServer(script * 2, splits=splits) as server:
        engine = RemoteEngine(RemoteOptions(server.url), session)
        await engine.async_load()
        pieces, finished = await generate_events(engine, GenerateRequest(prompt="P", grammar=grammar, max_tokens=20))
        again, _finished = await generate_events(engine, GenerateRequest(prompt="P", grammar=grammar, max_tokens=20))
    assert pieces == again == ["a", "bcd", "ef", "x", "ghij"]
    assert server.tokenized == ["abcdef", "xghij"]  # the second time, the splits are known
    assert finished.reason == "stop"
    t = finished.timings
    assert (t.prompt_tokens, t.cached_tokens, t.decoded_tokens, t.forced_tokens) == (8, 5, 3, 2)
    assert t.prompt_seconds == pytest.approx(0.01)
    assert t.decode_seconds == pytest.approx(0.005 + 2 * 0.015)
    first, second, third = server.bodies[:3]
    assert (first["prompt"], first["grammar"], first["n_predict"], first["return_tokens"]) == ("P", grammar, 1, True)
    assert (second["prompt"], second["n_predict"]) == (["P", 1, 2], 1)
    assert third["prompt"] == ["P", 1, 2, 3]
    assert checker_free_accepts(second["grammar"], "efxghij") and not checker_free_accepts(second["grammar"], "bcd")
    assert checker_free_accepts(third["grammar"], "xghij")


def checker_free_accepts(grammar: str, text: str) -> bool:
    state = gbnf.Grammar(grammar).start().advance(text)
    return state is not None and state.can_end


async def scripted(
    session: aiohttp.ClientSession,
    script: list[Answer],
    request: GenerateRequest,
    splits: dict[str, Split] | None = None,
) -> tuple[list[str], Finished, list[dict[str, Any]]]:
    async with ScriptedServer(script, splits=splits) as server:
        engine = RemoteEngine(RemoteOptions(server.url), session)
        await engine.async_load()
        pieces, finished = await generate_events(engine, request)
    assert not server.answers, "requests the script expected were not made"
    return pieces, finished, server.bodies


async def test_a_text_answer_gets_the_rest_from_one_request(session: aiohttp.ClientSession) -> None:
    """Nothing forced after the first token: the rest streams from one request, as without
    the fast path. Requests after the first send the prompt as the server's tokens (asked
    for while the first token is sampled), when it splits it as for the first request."""
    script = [
        [token("hello", 7), end("limit", prompt_n=2)],
        [token(" wor", 8), token("ld.", 9), end("eos", predicted=3)],
    ]
    request = GenerateRequest(prompt="P", grammar='root ::= [a-z ]+ "."', max_tokens=30)
    server = ScriptedServer(script)
    server.prompt_ids = [100, 101]
    async with server:
        engine = RemoteEngine(RemoteOptions(server.url), session)
        await engine.async_load()
        pieces, finished = await generate_events(engine, request)
    assert "".join(pieces) == "hello world." and finished.reason == "stop"
    assert (server.bodies[1]["prompt"], server.bodies[1]["n_predict"]) == ([100, 101, 7], 29)
    assert finished.timings.decoded_tokens == 4


async def test_a_token_that_is_part_of_a_character_ends_the_fast_path(session: aiohttp.ClientSession) -> None:
    """llama-server keeps back a token that ends inside a character and, at one token, sends
    neither its text nor its id: that token is asked for again in a request for the rest, where
    the server puts the character together."""
    script = [
        [token("k", 1), end("limit")],
        [token(" ", 4), end("limit")],
        [end("limit")],  # the first bytes of an emoji
        [token("😀", 5, 6), token("!", 7), end("eos", predicted=3)],
    ]
    splits = {"key: ": [(1, "k"), (2, "ey"), (3, ":"), (4, " ")]}
    request = GenerateRequest(prompt="P", grammar='root ::= "k" "ey: " ( "😀" | "😃" ) "!"', max_tokens=30)
    pieces, finished, bodies = await scripted(session, script, request, splits)
    assert "".join(pieces) == "key: 😀!" and finished.reason == "stop"
    assert [b["prompt"] for b in bodies[1:]] == [["P", 1, 2, 3], ["P", 1, 2, 3, 4], ["P", 1, 2, 3, 4]]
    assert [b["n_predict"] for b in bodies] == [1, 1, 1, 30 - 2 - 3]


async def test_a_forced_split_that_changes_the_sampled_token_is_not_used(session: aiohttp.ClientSession) -> None:
    script = [[token('"', 1), end("limit")], [token("}}", 2), end("limit")], [end("eos", predicted=1)]]
    splits = {'"}}': [(3, '"}}')]}
    request = GenerateRequest(prompt="P", grammar='root ::= "\\"}}" ( "\\n" | "" )', max_tokens=30)
    pieces, finished, bodies = await scripted(session, script, request, splits)
    assert "".join(pieces) == '"}}' and finished.reason == "stop"
    assert bodies[1]["prompt"] == ["P", 1] and finished.timings.forced_tokens == 0


async def test_a_stop_string_across_requests_ends_the_answer(session: aiohttp.ClientSession) -> None:
    script = [[token("a", 1), end("limit")], [token("b", 2), end("limit")], [token("x", 3), end("limit")]]
    splits = {"ab": [(1, "a"), (2, "b")], "xENDzz": [(3, "x"), (4, "END"), (5, "zz")]}
    request = GenerateRequest(prompt="P", grammar='root ::= "ab" [xy] "ENDzz"', stop=("END",), max_tokens=30)
    pieces, finished, _bodies = await scripted(session, script, request, splits)
    assert "".join(pieces) == "abx" and finished.reason == "stop"


async def test_the_token_budget_counts_forced_tokens(session: aiohttp.ClientSession) -> None:
    script = [[token("a", 1), end("limit")], [token("f", 5), end("limit")]]
    splits = {"abcdef": [(1, "a"), (2, "b"), (3, "cd"), (4, "e"), (5, "f")]}
    request = GenerateRequest(prompt="P", grammar='root ::= "abcdef" [xy]', max_tokens=3)
    pieces, finished, bodies = await scripted(session, script[:1], request, splits)
    assert "".join(pieces) == "abcd" and finished.reason == "length"
    assert len(bodies) == 1 and finished.timings.forced_tokens == 2
    request = GenerateRequest(prompt="P", grammar='root ::= "abcdef" [xy]', max_tokens=5)
    pieces, finished, bodies = await scripted(session, script, request, splits)
    assert "".join(pieces) == "abcdef" and finished.reason == "length"
    assert bodies[1]["prompt"] == ["P", 1, 2, 3, 4]


async def test_a_server_that_does_not_say_its_tokens_continues_from_text(session: aiohttp.ClientSession) -> None:
    no_ids = [
        [{**token("a", 1), "tokens": None}, end("limit")],
        [{**token("bc", 2), "tokens": None}, end("eos")],
        [{**token("a", 1), "tokens": None}, {**token("bc", 2), "tokens": None}, end("eos", predicted=2)],
    ]
    async with ScriptedServer(no_ids) as server:
        engine = RemoteEngine(RemoteOptions(server.url), session)
        await engine.async_load()
        request = GenerateRequest(prompt="P", grammar='root ::= "a" [b-c]+', max_tokens=10)
        assert (await run(engine, request))[0] == "abc"
        assert (await run(engine, request))[0] == "abc"
    assert [(b["prompt"], b["n_predict"]) for b in server.bodies] == [("P", 1), ("Pa", 9), ("P", 10)]


async def test_text_it_does_not_follow_goes_on_under_the_servers_grammar(session: aiohttp.ClientSession) -> None:
    """Text the engine's reading of the grammar refuses (a disagreement with llama.cpp), or a
    token without text (a special token the server does not write out): that token is asked
    for again, and the rest comes from one request, as without the fast path."""
    script = [
        [token("a", 1), end("limit")],
        [token("z", 3), end("limit")],
        [token("z", 3), token("b", 4), end("eos", predicted=2)],
        [token("a", 1), end("limit")],
        [token("", 9), end("limit")],
        [token("", 9), token("yb", 4), end("eos", predicted=2)],
    ]
    request = GenerateRequest(prompt="P", grammar='root ::= "a" "xy" [b-c]+', max_tokens=10)
    async with ScriptedServer(script, splits={"axy": [(1, "a"), (2, "x"), (3, "y")]}) as server:
        engine = RemoteEngine(RemoteOptions(server.url), session)
        await engine.async_load()
        assert (await run(engine, request))[0] == "axzb"
        assert (await run(engine, request))[0] == "axyb"
    steps = [("P", 1), (["P", 1, 2], 1), (["P", 1, 2], 8)]
    assert [(b["prompt"], b["n_predict"]) for b in server.bodies] == steps * 2


async def test_where_the_grammar_branches_too_much_the_server_goes_on_alone(
    session: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state this engine cannot follow (too many branches): the token that led there is
    asked for again, and the rest comes from one request under the grammar of the last state
    it could follow."""
    monkeypatch.setattr(gbnf, "MAX_STACKS", 3)
    script = [
        [token("a", 1), end("limit")],
        [token("d", 3), end("limit")],
        [token("x", 4), end("limit")],
        [token("e", 5), end("limit")],
        [token("e", 5), token("3", 6), token("!", 7), end("eos", predicted=3)],
    ]
    splits = {"abcd": [(1, "a"), (2, "bc"), (3, "d")]}
    grammar = 'root ::= "a" "bcd" [xy] "e" ( "1" | "2" | "3" | "4" | "5" ) "!"'
    request = GenerateRequest(prompt="P", grammar=grammar, max_tokens=30)
    pieces, finished, bodies = await scripted(session, script, request, splits)
    assert "".join(pieces) == "abcdxe3!" and finished.reason == "stop"
    assert (bodies[4]["prompt"], bodies[4]["n_predict"]) == (["P", 1, 2, 3, 4], 30 - 4)
    monkeypatch.undo()
    assert checker_free_accepts(bodies[4]["grammar"], "e3!")


@pytest.fixture(scope="module")
def favoring_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server on a tiny model whose greedy choice is the longest token that fits (the
    tokenizer's own split), so fast-forwarded and token-by-token decoding can be compared."""
    folder = tmp_path_factory.mktemp("favoring-server")
    model = write_tiny_model(folder / "tiny.gguf", "qwen3", favor_long_tokens=True)
    with serving_llama_server(model, 21000 + os.getpid() % 20000, folder) as url:
        yield url


CALL_PROMPT = "<|im_start|>user\nturn off the kitchen light<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes_json", "gemma"])
async def test_llama_server_fast_path_equals_token_by_token_decoding(
    favoring_server: str, session: aiohttp.ClientSession, fmt: str
) -> None:
    """Where greedy decoding picks the tokens the tokenizer makes, appending the forced text
    changes nothing but how many tokens the server samples (as in the embedded worker)."""
    grammar = call_grammar(fmt, "one_call")
    request = GenerateRequest(prompt=CALL_PROMPT, grammar=grammar, max_tokens=200, temperature=0.0)
    engine = RemoteEngine(RemoteOptions(favoring_server), session)
    await engine.async_load()
    fast_text, fast = await run(engine, request)
    slow_text, slow = await run(engine, replace(request, fast_forward=False))
    assert fast_text == slow_text
    assert fast.reason == slow.reason == "stop"
    assert slow.timings.forced_tokens == 0
    assert fast.timings.forced_tokens > 0
    assert fast.timings.decoded_tokens * 2 <= slow.timings.decoded_tokens
    assert fast.timings.decoded_tokens + fast.timings.forced_tokens <= slow.timings.decoded_tokens


async def test_llama_server_calls_with_forced_text_follow_the_grammar(
    llama_server: str, session: aiohttp.ClientSession, tiny_model: Path
) -> None:
    checker = GrammarChecker(tiny_model)
    engine = RemoteEngine(RemoteOptions(llama_server), session)
    await engine.async_load()
    for fmt in ("qwen_xml", "hermes_json"):
        grammar = call_grammar(fmt, "one_call")
        for seed in range(3):
            request = GenerateRequest(prompt=CALL_PROMPT, grammar=grammar, max_tokens=400, temperature=1.0, seed=seed)
            text, finished = await run(engine, request)
            assert finished.reason == "stop", text
            assert checker.accepts(grammar, text), text
            assert finished.timings.forced_tokens > 0
            assert FORMATS[fmt].parse(text).calls


async def test_a_generation_says_how_long_it_waited_for_a_slot(
    llama_server: str, session: aiohttp.ClientSession
) -> None:
    """On a server with one slot, the second generation waits for the first and says so."""
    engine = RemoteEngine(RemoteOptions(llama_server), session)
    await engine.async_load()
    grammar = "root ::= [a-z]{20,30}"
    request = GenerateRequest(prompt=CALL_PROMPT, grammar=grammar, max_tokens=40, temperature=0.0)
    first, second = await queued_behind(engine, request, replace(request, prompt=CALL_PROMPT + "x"))
    assert first < 0.3 <= second


@pytest.fixture(scope="module")
def two_slot_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server on the tiny model with two slots (`--parallel 2`)."""
    folder = tmp_path_factory.mktemp("two-slot-server")
    with serving_llama_server(tiny_model, 21000 + (os.getpid() + 7) % 20000, folder, slots=2) as url:
        yield url


async def test_llama_server_with_two_slots_serves_two_generations_at_once(
    two_slot_server: str, session: aiohttp.ClientSession
) -> None:
    """A second conversation is not queued behind the first where the server has a slot
    for it (llama-server's `--parallel`)."""
    engine = RemoteEngine(RemoteOptions(two_slot_server), session)
    assert engine.slots == 1  # before it has asked the server
    await engine.async_load()
    assert engine.slots == 2
    prompt = "<|im_start|>user\nsay something<|im_end|>\n<|im_start|>assistant\n"
    # At least 20 tokens each: the first is not over when its first text comes.
    grammar = "root ::= [a-z]{20,30}"
    first = engine.generate(GenerateRequest(prompt=prompt, grammar=grammar, max_tokens=40, temperature=0.0))
    second = engine.generate(GenerateRequest(prompt=prompt + "x", grammar=grammar, max_tokens=40, temperature=0.0))
    before = asyncio.all_tasks()
    try:
        await anext(first)  # the first holds its slot, half read
        # ... and the second is answered meanwhile (queued, it would wait for ever).
        assert await asyncio.wait_for(anext(second), 60) is not None
    finally:
        await first.aclose()
        await second.aclose()
    # Closed halfway, each closed its streams with it: none is left to a task of its own
    # (the garbage collector's, which held the slot until it ran).
    await asyncio.sleep(0)
    assert [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task()] == []


async def test_several_generations_at_once_all_finish(two_slot_server: str, session: aiohttp.ClientSession) -> None:
    """Four conversations at a time on two slots, three times over, each a call on the fast
    path (a request a token, each a new stream): every one is answered. llama-server closes
    a connection it streamed on; pooled, such connections failed the requests that took them
    next (and their one retry, with several at once)."""
    engine = RemoteEngine(RemoteOptions(two_slot_server), session)
    await engine.async_load()
    grammar = call_grammar("qwen_xml", "one_call")
    for round_ in range(3):
        requests = [
            GenerateRequest(prompt=f"{CALL_PROMPT}{round_}{n}", grammar=grammar, max_tokens=200, temperature=0.0)
            for n in range(4)
        ]
        answers = await asyncio.gather(*(run(engine, r) for r in requests))  # none raises
        assert [finished.reason for _text, finished in answers] == ["stop"] * 4
