"""llama-server as a child process, for the remote engine's figures."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
import os
from pathlib import Path
import shutil
import subprocess

import aiohttp


class LlamaServer:
    """One llama-server on a local port; `async_restart` empties every cache it has."""

    def __init__(self, model: Path, threads: int, n_ctx: int, n_batch: int, chat_template: Path | None = None) -> None:
        binary = shutil.which("llama-server")
        if binary is None:
            raise SystemExit("llama-server not found (scripts/setup installs it)")
        self.port = 18000 + os.getpid() % 1000
        self.url = f"http://127.0.0.1:{self.port}"
        self._command = [
            binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "-c", str(n_ctx),
            "-b", str(n_batch), "-ub", str(n_batch), "-np", "1", "-t", str(threads), "--no-webui",
        ]  # fmt: skip
        if chat_template is not None:
            self._command += ["--jinja", "--chat-template-file", str(chat_template)]
        self._process: subprocess.Popen[bytes] | None = None

    async def async_start(self) -> None:
        self._process = subprocess.Popen(  # noqa: ASYNC220 (started before anything is measured)
            self._command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        async with aiohttp.ClientSession() as session:
            for _ in range(1200):
                if self._process.poll() is not None:
                    raise SystemExit(f"llama-server exited with code {self._process.returncode}")
                try:
                    async with session.get(f"{self.url}/health") as response:
                        if response.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise SystemExit("llama-server did not become ready within 2 minutes")

    async def async_stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            await asyncio.to_thread(process.wait, 10)

    async def async_restart(self) -> None:
        await self.async_stop()
        await self.async_start()


@asynccontextmanager
async def llama_server(
    model: Path, threads: int, n_ctx: int, n_batch: int, chat_template: Path | None = None
) -> AsyncIterator[LlamaServer]:
    """llama-server on `model`; `chat_template` (a file) replaces the model's, e.g. for a GGUF
    without one, so the server renders what the embedded engine renders."""
    server = LlamaServer(model, threads, n_ctx, n_batch, chat_template)
    await server.async_start()
    try:
        yield server
    finally:
        await server.async_stop()
