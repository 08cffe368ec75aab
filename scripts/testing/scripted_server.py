"""The scripted server: the one stand-in for an OpenAI-compatible model server.

On loopback, it answers the remote engine as a server would, from a script given in
advance: `/v1/models`, and, when `native` (llama-server), `/props`, `/health`,
`/tokenize` and `/completion` too. Each generation (`/completion` or
`/v1/chat/completions`) streams the script's next answer, a list of events (llama-server's
native ones, or OpenAI's chat chunks, which end with `[DONE]`); `CUT` in an answer drops
the connection there. An API key, when it has one, is checked on every request, and a path
can be made to answer an HTTP error. It keeps what it was asked.

The real llama-server runs in the tests too (`scripts.testing.model_fixtures`); this one
is for what a real server will not do on demand: exact tokens, splits and timings, other
servers' shapes, refusals and deaths.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final, NamedTuple

from aiohttp import web
from aiohttp.typedefs import Handler

from .loopback import LoopbackServer

Event = dict[str, Any]
Split = list[tuple[int, str]]  # a text's tokens: (id, piece)


class Cut:
    """In an answer: the server drops the connection here."""


CUT: Final = Cut()
Answer = list[Event | Cut]
# A chat template that writes the messages' contents one after the other.
PLAIN_TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"


class Seen(NamedTuple):
    """One request the server got."""

    method: str
    path: str
    authorization: str | None


class ScriptedServer(LoopbackServer):
    """An OpenAI-compatible server answering from `answers`, llama-server's endpoints too
    when `native`; `bodies` are the generations' requests, `seen` every request."""

    def __init__(
        self,
        answers: list[Answer] | None = None,
        *,
        native: bool = True,
        models: list[str] | None = None,
        splits: dict[str, Split] | None = None,
        api_key: str | None = None,
    ) -> None:
        self.answers = answers if answers is not None else []
        self.native = native
        self.models = models if models is not None else ["m"]
        # `/tokenize` with pieces: how each text splits into tokens (the texts asked for go
        # into `tokenized`); without pieces (a prompt's tokens), `prompt_ids`.
        self.splits = splits or {}
        self.tokenized: list[str] = []
        self.prompt_ids: list[int] = []  # none: the engine goes on sending the prompt's text
        self.chat_template = PLAIN_TEMPLATE  # what /props says
        self.context_length = 2048
        self.api_key = api_key  # a request without this key is refused (401)
        self.statuses: dict[str, int] = {}  # paths that answer this HTTP error instead
        self.delay = 0.02  # seconds before an answer, as a server evaluates the prompt first
        self.bodies: list[dict[str, Any]] = []
        self.seen: list[Seen] = []

    def _app(self) -> web.Application:
        """Its routes (the root is the server's, without `/v1`)."""
        app = web.Application(middlewares=[self._gate])
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._generate)
        if self.native:
            app.router.add_get("/props", self._props)
            app.router.add_get("/health", self._health)
            app.router.add_post("/tokenize", self._tokenize)
            app.router.add_post("/completion", self._generate)
        return app

    @web.middleware
    async def _gate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        authorization = request.headers.get("Authorization")
        self.seen.append(Seen(request.method, request.path, authorization))
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return _error(401, "Invalid API Key", "authentication_error")
        if status := self.statuses.get(request.path):
            return _error(status, f"{request.path} answers {status} (scripted)", "server_error")
        return await handler(request)

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})

    async def _props(self, _request: web.Request) -> web.Response:
        settings = {"n_ctx": self.context_length}
        return web.json_response({"chat_template": self.chat_template, "default_generation_settings": settings})

    async def _health(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        if not body.get("with_pieces"):
            return web.json_response({"tokens": self.prompt_ids})
        self.tokenized.append(body["content"])
        return web.json_response({"tokens": [{"id": i, "piece": p} for i, p in self.splits[body["content"]]]})

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        assert self.answers, f"no answer left in the script for {request.path}"
        answer = self.answers.pop(0)
        assert body.get("stream") is True, "the script's answers are streamed"
        await asyncio.sleep(self.delay)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in answer:
            if isinstance(event, Cut):
                assert request.transport is not None
                request.transport.abort()
                return response
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        if request.path == "/v1/chat/completions":
            await response.write(b"data: [DONE]\n\n")
        return response


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response({"error": {"code": status, "message": message, "type": kind}}, status=status)


def token(content: str, *ids: int) -> Event:
    """A `/completion` event: a token's text and ids (llama-server's `return_tokens`)."""
    return {"content": content, "tokens": list(ids), "stop": False}


def end(stop_type: str, predicted: int = 1, prompt_n: int = 1, cache_n: int = 0) -> Event:
    """A `/completion` answer's last event: why it stopped, and its timings (10 ms for
    the prompt, 5 ms for the tokens)."""
    timings = {"cache_n": cache_n, "prompt_n": prompt_n, "prompt_ms": 10.0}
    timings |= {"predicted_n": predicted, "predicted_ms": 5.0}
    return {"content": "", "tokens": [], "stop": True, "stop_type": stop_type, "timings": timings}
