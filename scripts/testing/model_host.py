"""The model host: the one stand-in for the Hugging Face hub, where models are downloaded from.

On loopback, `/{org}/{repo}/resolve/main/model.gguf` is one file, for any repository:
a HEAD says its size and SHA-256 as the hub does (`X-Linked-Size`, `X-Linked-Etag`), a
GET sends it from where its `Range` says. On demand the next GET sends only part of the
file, then drops the connection or holds the rest until released; any other file is
missing (404). Used by the tests and by `scripts/stress`; HA's downloads go there when
`botpsy_runtime.download.HF_ENDPOINT` is its `url`.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
import hashlib

from aiohttp import web

from .loopback import LoopbackServer


class ModelHost(LoopbackServer):
    """Serves `payload` as `name` in every repository; `ranges` is the `Range` header of
    each GET (None: from the start)."""

    def __init__(self, payload: bytes, *, name: str = "model.gguf", sha256: str | None = None) -> None:
        self.payload = payload
        self.name = name
        self.sha256 = sha256 or hashlib.sha256(payload).hexdigest()  # what it announces
        self.ranges: list[str | None] = []
        self.cut_next: int | None = None  # the next GET sends this many bytes, then drops the connection
        self.hold_next: int | None = None  # the next GET sends this many bytes, then waits for `release`
        self.halfway = asyncio.Event()  # a GET has sent its part (set by `cut_next` and `hold_next`)
        self.release = asyncio.Event()

    def _app(self) -> web.Application:
        """Its one route (its `url` is the endpoint, as `HF_ENDPOINT` takes it)."""
        app = web.Application()
        app.router.add_route("*", "/{org}/{repo}/resolve/main/{file}", self._resolve)
        return app

    async def async_close(self) -> None:
        self.release.set()  # a held answer ends
        await super().async_close()

    async def _resolve(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["file"] != self.name:
            return web.Response(status=404)
        if request.method == "HEAD":
            return web.Response(headers={"X-Linked-Size": str(len(self.payload)), "X-Linked-Etag": f'"{self.sha256}"'})
        self.ranges.append(request.headers.get("Range"))
        start = int(request.headers["Range"].removeprefix("bytes=").rstrip("-")) if "Range" in request.headers else 0
        response = web.StreamResponse(status=206 if start else 200)
        response.content_length = len(self.payload) - start
        await response.prepare(request)
        body = self.payload[start:]
        cut, hold = self.cut_next, self.hold_next
        self.cut_next = self.hold_next = None
        part = cut if cut is not None else hold
        if part is None:
            await response.write(body)
            return response
        await response.write(body[:part])
        self.halfway.set()
        if hold is not None:
            await self.release.wait()
            with suppress(ConnectionError):  # the client may have gone meanwhile
                await response.write(body[part:])
            return response
        assert request.transport is not None
        request.transport.abort()
        return response
