"""The remote engine: an OpenAI-compatible server (llama-server, Ollama, vLLM).

Chat completions with streaming and tools work with any of them. llama-server also
takes a raw prompt with a GBNF grammar on its native `/completion` endpoint, which is
what BotPsy's constrained decoding needs; it is detected from its `/props` endpoint.
The aiohttp session is the caller's (Home Assistant's shared one).

llama-server samples every token under a grammar one by one, even where the grammar
leaves no choice (most of a tool call). So a constrained generation there goes as in the
embedded worker: the server samples one token per request, and before the next request
the text the grammar forces is appended to the prompt as tokens (`gbnf.State.forced`,
split by the server's tokenizer), which the server evaluates in one batch; the grammar
sent with each request is what the original one still allows (`gbnf.State.gbnf`). A
text answer, where nothing is forced, gets the rest of its tokens from one request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
import contextlib
from dataclasses import dataclass
import json
import logging
import os
import time
from typing import Any

import aiohttp

from . import gbnf
from .chat_template import ChatTemplate, model_template
from .engine import (
    EngineHealth,
    Finished,
    GenerateEvent,
    GenerateRequest,
    ModelInfo,
    Preemptible,
    TextDelta,
    Timings,
    ToolCallDelta,
)
from .errors import AuthenticationError, EngineError, EngineUnavailableError, ModelLoadError
from .forcing import forced_count
from .holdback import releasable_length
from .lru_cache import LruCache

CONNECT_TIMEOUT = 10.0
# A streamed answer may be silent this long between two events (llama-server sends
# nothing while it evaluates the prompt) before the server counts as lost.
READ_TIMEOUT = 120.0
_FINISH = {"stop": "stop", "eos": "stop", "word": "stop", "tool_calls": "stop", "length": "length", "limit": "length"}
# Grammars read for the fast path, kept by their text (a conversation sends the same ones).
MAX_GRAMMARS = 8
# Tokenized forced texts kept.
MAX_SPLITS = 256

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RemoteOptions:
    """Where the server is, the API key it wants, and the model to use (its first one if None)."""

    url: str
    api_key: str | None = None
    model: str | None = None

    @property
    def base(self) -> str:
        """Server root, whether the user gave it with or without `/v1`."""
        base = self.url.rstrip("/")
        return base.removesuffix("/v1")


class RemoteEngine:
    """Engine backed by an OpenAI-compatible HTTP server."""

    def __init__(self, options: RemoteOptions, session: aiohttp.ClientSession) -> None:
        self.options = options
        self._session = session
        self._info: ModelInfo | None = None
        self._model: str | None = options.model
        self._native = False
        self._template: ChatTemplate | None = None
        self._prefills = Preemptible()
        # As many generations at once as the server has slots (llama-server's `--parallel`,
        # decoded in one batch there), the rest queued here: a server with no free slot
        # would hold them without a byte, and their silence would read as a dead server.
        # Other servers do not say how many they serve at once: one.
        self.slots = 1
        self._turns = asyncio.Semaphore(self.slots)
        self._grammars: LruCache[str, gbnf.Grammar | None] = LruCache(MAX_GRAMMARS)
        # Whether the server says which tokens it sampled (the fast path needs them).
        self._token_ids = True
        # The server's splits of forced text (with the token before it): the same calls
        # force the same text request after request.
        self._splits: LruCache[str, list[tuple[int, bytes]] | None] = LruCache(MAX_SPLITS)
        self.last_timings: Timings | None = None

    @property
    def model_info(self) -> ModelInfo | None:
        """What the server serves, once `async_load` succeeded."""
        return self._info

    @property
    def chat_template(self) -> ChatTemplate | None:
        """llama-server's template (it renders raw prompts); other servers render their own."""
        return self._template

    @property
    def supports_grammar(self) -> bool:
        """llama-server only: raw prompts with a GBNF grammar."""
        return self._native

    @property
    def _headers(self) -> dict[str, str]:
        key = self.options.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def _get(self, path: str) -> Any:
        return await self._call("GET", path, None)

    async def _post_json(self, path: str, body: dict[str, Any]) -> Any:
        return await self._call("POST", path, body)

    async def _call(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        """One short JSON request. A kept-alive connection the server already closed
        (llama-server closes after streaming) is retried once on a new one."""
        for attempt in (1, 2):
            try:
                async with self._session.request(
                    method,
                    self.options.base + path,
                    json=body,
                    headers=self._headers,
                    timeout=aiohttp.ClientTimeout(total=CONNECT_TIMEOUT),
                ) as response:
                    if response.status in (401, 403):
                        raise AuthenticationError("The server refused the API key")
                    if response.status != 200:
                        raise EngineError(f"{path} answered HTTP {response.status}")
                    try:
                        return await response.json(content_type=None)
                    except ValueError as err:  # not JSON (or not text)
                        raise EngineError(f"{path} answered with malformed data") from err
            except aiohttp.ServerDisconnectedError as err:
                if attempt == 2:
                    raise EngineUnavailableError(f"The server at {self.options.base} closed the connection") from err
            except (aiohttp.ClientError, TimeoutError) as err:
                raise EngineUnavailableError(
                    f"Cannot reach the server at {self.options.base}: {err or type(err).__name__}"
                ) from err
        raise AssertionError("unreachable")

    async def async_load(self) -> ModelInfo:
        """Pick the model from `/v1/models`, and learn from `/props` whether the server is llama-server."""
        models = await self._get("/v1/models")
        ids = [m.get("id") for m in (models or {}).get("data", []) if isinstance(m, dict)]
        if not ids:
            raise ModelLoadError("The server has no model loaded")
        if self._model is None:
            self._model = ids[0]
        elif self._model not in ids:
            raise ModelLoadError(f"The server has no model {self._model!r} (it has {', '.join(map(str, ids))})")
        props: dict[str, Any] = {}
        try:
            props = await self._get("/props") or {}
        except EngineError:
            props = {}
        self._native = isinstance(props, dict) and bool(props.get("chat_template"))
        slots = props.get("total_slots") if self._native else None
        self.slots = slots if isinstance(slots, int) and slots > 0 else 1
        self._turns = asyncio.Semaphore(self.slots)
        self._splits.clear()  # perhaps another model now
        settings = props.get("default_generation_settings", {}) if self._native else {}
        self._info = ModelInfo(
            name=str(self._model),
            architecture=str(props.get("model_path", "remote")).rsplit("/", 1)[-1] if self._native else "remote",
            context_length=int(settings.get("n_ctx", 0) or props.get("n_ctx", 0) or 0),
            chat_template=props.get("chat_template") if self._native else None,
            bos_token=str(props.get("bos_token", "")) if self._native else "",
            eos_token=str(props.get("eos_token", "")) if self._native else "",
        )
        if self._native:
            self._template = model_template(
                props["chat_template"], bos_token=self._info.bos_token, eos_token=self._info.eos_token
            )
        return self._info

    async def async_count_tokens(self, text: str) -> int:
        """Tokens `text` takes, from llama-server's `/tokenize` (other servers cannot say)."""
        if not self._native:
            raise EngineError("This server cannot count tokens (only llama-server can)")
        data = await self._post_json("/tokenize", {"content": text})
        return len(data.get("tokens", []))

    def _body(self, request: GenerateRequest) -> tuple[str, dict[str, Any]]:
        common: dict[str, Any] = {"temperature": request.temperature, "top_p": request.top_p, "stream": True}
        if request.seed is not None:
            common["seed"] = request.seed
        if request.stop:
            common["stop"] = list(request.stop)
        if request.prompt is not None:
            if not self._native:
                raise EngineError("This server takes chat messages only, not a raw prompt")
            body = {
                **common,
                "prompt": request.prompt,
                "n_predict": request.max_tokens,
                "top_k": request.top_k,
                "cache_prompt": True,
            }
            if request.grammar:
                body["grammar"] = request.grammar
            if request.json_schema is not None:
                body["json_schema"] = request.json_schema
            return "/completion", body
        body = {
            **common,
            "model": self._model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = request.tools
        if request.grammar:
            if not self._native:
                raise EngineError("This server does not accept grammars")
            body["grammar"] = request.grammar
        if request.json_schema is not None:
            schema = {"name": "result", "schema": request.json_schema, "strict": True}
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        return "/v1/chat/completions", body

    async def _post_stream(self, path: str, body: dict[str, Any]) -> aiohttp.ClientResponse:
        """Start a streamed request, on a connection of its own; a stale kept-alive
        connection is retried once.

        llama-server closes a connection once it has streamed on it: kept in the session's
        pool, it failed the next request that took it (with several at once, the retry too).
        """
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT)
        headers = {**self._headers, "Connection": "close"}
        try:
            return await self._session.post(self.options.base + path, json=body, headers=headers, timeout=timeout)
        except aiohttp.ServerDisconnectedError:
            return await self._session.post(self.options.base + path, json=body, headers=headers, timeout=timeout)

    async def generate(self, request: GenerateRequest) -> AsyncIterator[GenerateEvent]:
        """Stream a generation, as many at once as the server has slots; forced text is
        fast-forwarded where it can be."""
        # A warm-up must not hold this one up (a slot, and the server's cores).
        self._prefills.interrupt()
        waited = time.monotonic()
        async with self._turns:
            queued = time.monotonic() - waited
            state = self._grammar_state(request)
            events = _FastForward(self, request, state).run() if state is not None else self._generate(request)
            # Each stream below is closed with this one (left to the garbage collector, a
            # stream read halfway was closed later by a task of its own, holding its slot).
            async with contextlib.aclosing(events):
                async for event in events:
                    if isinstance(event, Finished):
                        event.timings.queued_seconds = queued
                    yield event

    def _grammar_state(self, request: GenerateRequest) -> gbnf.State | None:
        """Where a raw-prompt request's grammar starts, if it gets the fast path."""
        if not (request.fast_forward and self._native and self._token_ids and request.prompt and request.grammar):
            return None
        text = request.grammar
        if text in self._grammars:
            grammar = self._grammars[text]
        else:
            try:
                grammar = gbnf.Grammar(text)
            except gbnf.GbnfError as err:
                _LOGGER.debug("No fast path for this grammar: %s", err)
                grammar = None
            self._grammars[text] = grammar
        if grammar is None:
            return None
        try:
            return grammar.start()
        except gbnf.GbnfError as err:
            _LOGGER.debug("No fast path for this grammar: %s", err)
            return None

    async def _split(self, text: str) -> list[tuple[int, bytes]] | None:
        """The server's tokens of `text` (ids and bytes), remembered; None if it did not say."""
        if text in self._splits:
            return self._splits[text]
        data = await self._post_json("/tokenize", {"content": text, "with_pieces": True})
        found = data.get("tokens") if isinstance(data, dict) else None
        split: list[tuple[int, bytes]] | None = None
        try:
            if isinstance(found, list):
                split = [(int(t["id"]), _piece_bytes(t["piece"])) for t in found]
        except (KeyError, TypeError, ValueError):
            split = None
        self._splits[text] = split
        return split

    async def _generate(self, request: GenerateRequest) -> AsyncGenerator[GenerateEvent]:
        path, body = self._body(request)
        started = time.monotonic()
        first_at: float | None = None
        timings = Timings()
        reason = "stop"
        calls: dict[int, dict[str, str]] = {}
        try:
            async with await self._post_stream(path, body) as response:
                if response.status in (401, 403):
                    raise AuthenticationError("The server refused the API key")
                if response.status != 200:
                    detail = _error_detail(await response.text())
                    raise EngineError(f"The server answered HTTP {response.status}: {detail}")
                complete = False  # a final event or [DONE] came
                async with contextlib.aclosing(_sse(response)) as events:
                    async for event in events:
                        if event is _DONE:
                            complete = True
                            break
                        text, finish = _event_text(event, calls)
                        if text:
                            first_at = first_at or time.monotonic()
                            yield TextDelta(text)
                        reason = _FINISH.get(finish or "", reason)
                        complete = complete or finish is not None or event.get("stop") is True
                        _update_timings(timings, event)
                if not complete:
                    raise EngineUnavailableError(f"The server at {self.options.base} ended its answer midway")
        except (aiohttp.ClientError, TimeoutError) as err:
            raise EngineUnavailableError(_lost(self.options.base, err)) from err
        for call in calls.values():
            yield ToolCallDelta(call["name"], call["arguments"], call.get("id"))
        if not timings.prompt_seconds and not timings.decode_seconds:
            ended = time.monotonic()
            timings.prompt_seconds = (first_at or ended) - started
            timings.decode_seconds = ended - (first_at or ended)
        self.last_timings = timings
        yield Finished(reason, timings)

    async def async_prefill(self, prompt: str, quiet: float = 0.0) -> Timings:
        """llama-server: evaluate `prompt` into its slot's cache (`n_predict` 0), so the next
        request that starts with it evaluates only the rest.

        Other servers have no way to evaluate a prompt without generating from it (a chat
        completion of one token would cost a decode and still not promise a cached prefix):
        nothing is done and the timings are zero.
        """
        if not self._native:
            return Timings()
        return await self._prefills.run(self._prefill(prompt), quiet)

    async def _prefill(self, prompt: str) -> Timings:
        timings = Timings()
        # A slot's turn like a generation's: with one slot, never between the requests of
        # one generation (the slot would lose its tokens).
        async with self._turns:
            started = time.monotonic()
            data = await self._post_json("/completion", {"prompt": prompt, "n_predict": 0, "cache_prompt": True})
        if isinstance(data, dict):
            _update_timings(timings, data)
        if not timings.prompt_seconds:
            timings.prompt_seconds = time.monotonic() - started
        return timings

    async def async_health(self) -> EngineHealth:
        """Whether the server answers (`/health` on llama-server, `/v1/models` elsewhere)."""
        try:
            await self._get("/health" if self._native else "/v1/models")
        except EngineError as err:
            return EngineHealth(False, str(err))
        return EngineHealth(True, f"{self.options.base} answering")

    async def async_unload(self) -> None:
        """Nothing to free here: the server owns the model."""


class _FastForward:
    """One constrained generation on llama-server, forced text appended between requests.

    Each request carries the prompt and every output token so far (token ids: the server
    evaluates exactly what it sampled, and its prompt cache holds all of it) and the grammar
    of what may follow. Until the output holds forced text, the first token is asked for
    alone: where nothing is forced after it (a text answer), the rest comes from the same
    request as without the fast path; inside a call, every request samples one token.
    """

    def __init__(self, engine: RemoteEngine, request: GenerateRequest, state: gbnf.State) -> None:
        assert request.prompt is not None and request.grammar is not None
        self.engine = engine
        self.request = request
        self.prompt = request.prompt
        self.state = state
        self.tokens: list[int] = []  # output tokens, sampled and forced
        self.text = ""  # output text (whole characters)
        self.sent = 0  # characters of `text` given to the caller
        self.timings = Timings()
        self.requests = 0
        self.stepping = True  # one token per request
        self.structured = False  # forced text was met: the output is a call
        self.last_piece: str | None = None  # the text of the token a step just sampled
        self.tracking = True  # `state` follows the output
        self.reason = "stop"
        # The prompt as the server's tokens, asked for while the first token is sampled:
        # later requests send tokens only (the server tokenizing the prompt again each time
        # costs it ~2 ms a request).
        self.prompt_ids: list[int] | None = None
        self._prompt_ids: asyncio.Task[Any] | None = None

    @property
    def produced(self) -> int:
        """Output tokens so far, sampled and forced."""
        return self.timings.decoded_tokens + self.timings.forced_tokens

    async def run(self) -> AsyncGenerator[GenerateEvent]:
        body = {"content": self.prompt, "add_special": True, "parse_special": True}
        self._prompt_ids = task = asyncio.create_task(self.engine._post_json("/tokenize", body))
        try:
            async with contextlib.aclosing(self._run()) as events:
                async for event in events:
                    yield event
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, EngineError):
                await task

    async def _run(self) -> AsyncGenerator[GenerateEvent]:
        while True:
            if self.last_piece is not None and await self._fast_forward():
                if self._stopped():
                    break
                if text := self._release():
                    yield TextDelta(text)
            if self.state.finished:
                break
            budget = self.request.max_tokens - self.produced
            if budget <= 0:
                self.reason = "length"
                break
            finish = ""
            async with contextlib.aclosing(self._ask(1 if self.stepping else budget)) as asked:
                async for event in asked:
                    if isinstance(event, str):
                        finish = event
                    else:
                        yield event
            if finish in ("eos", "word", "stop") or (finish == "limit" and not self.stepping):
                self.reason = _FINISH.get(finish, "stop")
                break
        if self.sent < len(self.text):
            yield TextDelta(self.text[self.sent :])
        self.engine.last_timings = self.timings
        yield Finished(self.reason, self.timings)

    async def _fast_forward(self) -> bool:
        """Append the text the grammar forces after the token just sampled; whether there was any."""
        try:
            forced, after = self.state.forced()
        except gbnf.GbnfError:
            forced, after = "", self.state
        if forced:
            self.structured = True
            await self._append_forced(forced, ends=after.finished)
        elif not self.structured:
            self.stepping = False  # a text answer: the rest in one request
        return bool(forced)

    def _body(self, n_predict: int) -> dict[str, Any]:
        """The next /completion request: the output so far, under the grammar of what may follow it."""
        request = self.request
        body: dict[str, Any] = {
            "prompt": self._prompt(),
            "grammar": self.state.gbnf() if self.requests else request.grammar,
            "n_predict": n_predict,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "top_k": request.top_k,
            "stream": True,
            "cache_prompt": True,
            "return_tokens": True,
        }
        if request.seed is not None:  # a seed of its own per request, all following from the one given
            body["seed"] = (request.seed + self.requests) % 2**32
        if request.stop:
            body["stop"] = list(request.stop)
        return body

    async def _ask(self, n_predict: int) -> AsyncGenerator[TextDelta | str]:
        """One streamed /completion; yields text, then the server's stop type (a str)."""
        body = self._body(n_predict)
        ids: list[int] = []
        piece = ""
        final: dict[str, Any] | None = None
        base = self.engine.options.base
        try:
            async with await self.engine._post_stream("/completion", body) as response:
                if response.status in (401, 403):
                    raise AuthenticationError("The server refused the API key")
                if response.status != 200:
                    detail = _error_detail(await response.text())
                    raise EngineError(f"The server answered HTTP {response.status}: {detail}")
                async with contextlib.aclosing(_sse(response)) as events:
                    async for event in events:
                        if event is _DONE:
                            break
                        ids += [int(t) for t in event.get("tokens") or []]
                        if content := str(event.get("content", "")):
                            if not self._follow(content) and n_predict == 1:
                                # Asked again from the state before it, without the fast path.
                                self.stepping = False
                                self.last_piece = None
                                yield "again"
                                return
                            self.text += content
                            piece += content
                            if text := self._release():
                                yield TextDelta(text)
                        if event.get("stop") is True:
                            final = event
                if final is None:
                    raise EngineUnavailableError(f"The server at {base} ended its answer midway")
        except (aiohttp.ClientError, TimeoutError) as err:
            raise EngineUnavailableError(_lost(base, err)) from err
        yield self._conclude(final, ids, piece)

    def _conclude(self, final: dict[str, Any], ids: list[int], piece: str) -> str:
        """Take in the tokens a request sampled (`ids`, text `piece`); its stop type, or "again" to ask anew."""
        finish = str(final.get("stop_type") or "stop")
        stepped = self.stepping and finish == "limit"
        if stepped and ids and not piece:
            # A token without text (a special token the server does not write out): asked
            # for again, and the rest comes from one request, as without the fast path.
            self.stepping = False
            self.last_piece = None
            return "again"
        self._count(final)
        self.tokens += ids
        self.last_piece = piece if stepped and len(ids) == 1 else None
        if stepped and not ids:
            # A server that does not say which tokens it sampled (the rest goes on from the
            # text), or a token that was part of a character (the server keeps it back; it is
            # asked for again where the server puts characters together itself): the rest
            # comes from one request.
            if piece:
                self.engine._token_ids = False
                self.prompt += self.text
                self.tokens = []
                self.prompt_ids = None
            self.stepping = False
            finish = "again"
        if self._stopped():
            finish = "word"
        return finish

    def _prompt(self) -> str | list[str | int]:
        """The next request's prompt: the prompt and the output tokens so far."""
        if not self.tokens:
            return self.prompt
        if self.prompt_ids is None and self._prompt_ids is not None and self._prompt_ids.done():
            found = None if self._prompt_ids.cancelled() or self._prompt_ids.exception() else self._prompt_ids.result()
            ids = found.get("tokens") if isinstance(found, dict) else None
            # Only if the server splits it as it did for the first request.
            if isinstance(ids, list) and all(isinstance(t, int) for t in ids):
                self.prompt_ids = ids if len(ids) == self.timings.prompt_tokens else None
            self._prompt_ids = None
        if self.prompt_ids is not None:
            return [*self.prompt_ids, *self.tokens]
        return [self.prompt, *self.tokens]

    def _follow(self, content: str) -> bool:
        """Advance the grammar over text the server wrote. False where this engine cannot
        follow it (too many branches, or text it did not expect): the server's own grammar
        goes on alone from there."""
        if not self.tracking:
            return True
        try:
            state = self.state.advance(content)
            if state is None:
                _LOGGER.warning("llama-server wrote %r where BotPsy's reading of the grammar refuses it", content)
        except gbnf.GbnfError as err:
            _LOGGER.debug("The fast path stops here: %s", err)
            state = None
        if state is None:
            self.tracking = False
            return False
        self.state = state
        return True

    def _count(self, final: dict[str, Any]) -> None:
        native = final.get("timings")
        if not isinstance(native, dict):
            return
        t, step = self.timings, _native_timings(native)
        if self.requests == 0:
            t.cached_tokens, t.prompt_tokens = step.cached_tokens, step.prompt_tokens
            t.prompt_seconds = step.prompt_seconds
        else:  # the forced text a later request evaluates is output, not the prompt
            t.decode_seconds += step.prompt_seconds
        t.decode_seconds += step.decode_seconds
        t.decoded_tokens += step.decoded_tokens
        self.requests += 1

    async def _append_forced(self, forced: str, *, ends: bool) -> None:
        """Append the tokens of `forced`, split as the model's tokenizer splits it after the
        token just sampled (as the embedded worker does): nothing if that split changes that
        token, and not the last token unless the grammar ends there (it might merge with what
        the model writes next)."""
        assert self.last_piece is not None
        head = self.last_piece
        split = await self.engine._split(head + forced)
        if split is None or len(split) < 2:
            return
        budget = self.request.max_tokens - self.produced
        take = forced_count(split, self.tokens[-1], (head + forced).encode(), ends=ends, budget=budget)
        appended = b"".join(piece for _, piece in split[1 : 1 + take]).decode()
        if not appended:
            return
        state = self.state.advance(appended)
        if state is None:  # cannot happen: `forced` starts with it
            return
        self.state = state
        self.tokens += [token for token, _ in split[1 : 1 + take]]
        self.text += appended
        self.timings.forced_tokens += take
        self.last_piece = None

    def _stopped(self) -> bool:
        """Cut the text at a stop string that spans requests (the server sees one at a time)."""
        hits = [i for i in (self.text.find(s, self.sent) for s in self.request.stop) if i >= 0]
        if not hits:
            return False
        self.text = self.text[: min(hits)]
        return True

    def _release(self) -> str:
        """Text not given out yet that cannot be (the start of) a stop string."""
        text, stops = self.text, self.request.stop
        if any(s in text[self.sent :] for s in stops):
            return ""  # `_ask` cuts it there
        safe = self.sent + releasable_length(text[self.sent :], stops)
        released = text[self.sent : safe]
        self.sent = max(self.sent, safe)
        return released


def _piece_bytes(piece: Any) -> bytes:
    """A /tokenize piece: text, or its bytes as a list where they are not whole UTF-8."""
    if isinstance(piece, str):
        return piece.encode()
    return bytes(int(b) for b in piece)


def _lost(base: str, err: Exception) -> str:
    """What a failed connection to the server means, in words."""
    if isinstance(err, aiohttp.ClientConnectorError):
        code = err.os_error.errno
        why = os.strerror(code) if isinstance(code, int) and code > 0 else err.os_error.strerror or str(err.os_error)
        return f"Cannot connect to the server at {base} ({why}): is it running?"
    if isinstance(err, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return f"The server at {base} closed the connection in the middle of its answer"
    if isinstance(err, TimeoutError):
        return f"The server at {base} sent nothing for {READ_TIMEOUT:.0f} seconds"
    return f"Lost the server at {base}: {err or type(err).__name__}"


def _error_detail(body: str) -> str:
    """The message of an error body: OpenAI's and llama-server's JSON, or its text."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return body.strip()[:300] or "no details"
    error = data.get("error", data) if isinstance(data, dict) else data
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or body)[:300]


_DONE: dict[str, Any] = {}  # `[DONE]`: the end of an OpenAI stream


async def _sse(response: aiohttp.ClientResponse) -> AsyncGenerator[dict[str, Any]]:
    """Parse a server-sent-events body into JSON objects; `_DONE` at `data: [DONE]`.

    A body with no event in it (an HTML page, a proxy's error) is an error, not an empty
    answer.
    """
    events = 0
    junk = ""
    async for raw in response.content:
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data:"):
            if line and not line.startswith((":", "event:", "id:", "retry:")):
                junk = junk or line
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            yield _DONE
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError as err:
            raise EngineError(f"The server sent malformed data: {data[:100]}") from err
        if not isinstance(event, dict):
            raise EngineError(f"The server sent malformed data: {data[:100]}")
        if "error" in event:
            raise EngineError(f"The server reported an error: {_error_detail(json.dumps(event))}")
        events += 1
        yield event
    if not events and junk:
        raise EngineError(f"The server did not answer with a stream of events: {junk[:100]}")


def _event_text(event: dict[str, Any], calls: dict[int, dict[str, str]]) -> tuple[str, str | None]:
    """Text and finish reason of one event of either endpoint; collects tool-call parts."""
    if "choices" not in event:  # llama-server /completion
        finish = event.get("stop_type") if event.get("stop") else None
        return str(event.get("content", "")), finish
    if not event["choices"]:
        return "", None
    choice = event["choices"][0]
    delta = choice.get("delta", {})
    for part in delta.get("tool_calls") or []:
        call = calls.setdefault(part.get("index", 0), {"name": "", "arguments": ""})
        if part.get("id"):
            call["id"] = part["id"]
        function = part.get("function", {})
        call["name"] += function.get("name") or ""
        call["arguments"] += function.get("arguments") or ""
    return str(delta.get("content") or ""), choice.get("finish_reason")


def _native_timings(native: dict[str, Any]) -> Timings:
    """llama-server's own figures of one request (its `timings`)."""
    cached = int(native.get("cache_n", 0))
    return Timings(
        prompt_tokens=int(native.get("prompt_n", 0)) + cached,
        cached_tokens=cached,
        decoded_tokens=int(native.get("predicted_n", 0)),
        prompt_seconds=float(native.get("prompt_ms", 0)) / 1000,
        decode_seconds=float(native.get("predicted_ms", 0)) / 1000,
    )


def _update_timings(timings: Timings, event: dict[str, Any]) -> None:
    """Take the server's own figures: llama-server `timings`, OpenAI `usage`."""
    if isinstance(native := event.get("timings"), dict) and "prompt_n" in native:
        step = _native_timings(native)
        timings.cached_tokens, timings.prompt_tokens = step.cached_tokens, step.prompt_tokens
        timings.decoded_tokens = step.decoded_tokens
        timings.prompt_seconds, timings.decode_seconds = step.prompt_seconds, step.decode_seconds
    elif isinstance(usage := event.get("usage"), dict):
        timings.prompt_tokens = int(usage.get("prompt_tokens", 0))
        timings.decoded_tokens = int(usage.get("completion_tokens", 0))
        details = usage.get("prompt_tokens_details") or {}
        timings.cached_tokens = int(details.get("cached_tokens", 0) or 0)
