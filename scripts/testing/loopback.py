"""An aiohttp app on loopback for a test: the model host's and the scripted server's
start, URL and close, written once."""

from __future__ import annotations

from typing import Self

from aiohttp import web
from aiohttp.test_utils import TestServer


class LoopbackServer:
    """Serves `_app()` on 127.0.0.1 from `async_start` (or `async with`) to `async_close`."""

    _server: TestServer | None = None

    def _app(self) -> web.Application:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """Where it answers ("http://127.0.0.1:port/")."""
        assert self._server is not None, "not started"
        return str(self._server.make_url(""))

    async def async_start(self) -> None:
        self._server = TestServer(self._app(), host="127.0.0.1")
        await self._server.start_server()

    async def async_close(self) -> None:
        if self._server is not None:
            await self._server.close()
            self._server = None

    async def __aenter__(self) -> Self:
        await self.async_start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.async_close()
