"""A proxy on loopback in front of a real server, that misbehaves on demand.

Between BotPsy's remote engine and a real llama-server, it passes requests through or,
for the requests that POST (generations, prefills, token counts), injects one fault:
the server down (nothing listens), slow (each piece of the answer late), stalled (the
answer starts and then nothing comes), HTTP 500, garbage (a 200 that is no event stream)
or the connection closed after the answer's first event. Used by the remote engine's tests
and by `scripts/stress`.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import aiohttp
from aiohttp import web

Mode = Literal["pass", "down", "slow", "stall", "error500", "garbage", "cut"]
# Response headers that aiohttp sets itself for the proxied body.
_HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"})


class FaultProxy:
    """`url` forwards to `upstream`; `mode` says what goes wrong with POSTs.

    Port 0 picks a free port at start; `down` then `pass` opens the same one again.
    """

    def __init__(self, upstream: str, port: int = 0, *, delay: float = 0.3) -> None:
        self.upstream = upstream.rstrip("/")
        self.port = port
        self.mode: Mode = "pass"
        self.delay = delay  # "slow": seconds before each piece of the answer
        self.faulted = 0  # POSTs that met the fault
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self._release = asyncio.Event()  # ends stalled answers (on `pass` and at close)

    async def async_start(self) -> None:
        # A fresh connection per request: a kept-alive one llama-server has dropped would
        # fail the proxy itself (an "injected" fault nobody asked for).
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
        await self._listen()

    async def _listen(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True).start()
        self.port = self._runner.addresses[0][1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def async_set(self, mode: Mode) -> None:
        """Misbehave from now on as `mode` says; `down` closes the port, `pass` opens it."""
        if mode == "down" and self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        elif mode != "down" and self._runner is None:
            await self._listen()
        if mode == "stall":
            self._release.clear()
        else:
            self._release.set()
        self.mode = mode

    async def async_close(self) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        mode = self.mode if request.method == "POST" else "pass"
        if mode != "pass":
            self.faulted += 1
        if mode == "error500":
            return web.json_response(
                {"error": {"code": 500, "message": "Internal server error (injected)", "type": "server_error"}},
                status=500,
            )
        if mode == "garbage":
            return web.Response(text="<html><body><h1>502 Bad Gateway</h1>nginx</body></html>\n", status=200)
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with self._session.request(
            request.method, self.upstream + request.rel_url.path_qs, data=body, headers=headers
        ) as upstream:
            response = web.StreamResponse(
                status=upstream.status,
                headers={k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS},
            )
            await response.prepare(request)
            async for piece in upstream.content.iter_any():
                if mode == "slow":
                    await asyncio.sleep(self.delay)
                if mode in ("stall", "cut"):
                    # The first event only (a fast server may have sent the whole answer).
                    end = piece.find(b"\n\n")
                    await response.write(piece[: end + 2] if end >= 0 else piece)
                    if mode == "stall":
                        await self._release.wait()  # nothing more until released
                    if request.transport is not None:  # None: the client gave up meanwhile
                        request.transport.abort()
                    return response
                await response.write(piece)
            await response.write_eof()
            return response
