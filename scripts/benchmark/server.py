"""llama-server as a child process, for the remote engine's figures.

By default the bench runs a llama-server built from the same llama.cpp sources as the
embedded engine (llama-cpp-python's sdist, pinned in scripts/engine/build.py), so that the
remote figures differ from the embedded ones by BotPsy's remote path, not by two builds of
llama.cpp: Debian's llama-server (scripts/setup's, for the tests) is another release,
built for every CPU level, and on this project's 2-core machine it evaluated prompts
about 40 % slower than the embedded engine (99 against 162 tokens/s, `llama-bench`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
import shutil
import subprocess

import aiohttp

from botpsy_runtime.embedded import EmbeddedOptions
from scripts.engine.build import VERSION, default_cache, extract, fetch_sdist, log

# --llama-server's default: llama-server built from the embedded engine's llama.cpp.
SAME_SOURCE = "same-source"


def same_source_llama_server() -> str:
    """llama-server built from llama-cpp-python's vendored llama.cpp for this machine
    (cached; several minutes on 2 cores the first time, an interrupted build goes on
    where it stopped); returns the binary."""
    cache = default_cache()
    build = cache / f"llama-server-{VERSION}"
    binary = build / "bin" / "llama-server"
    if binary.exists():
        return str(binary)
    source = extract(fetch_sdist(cache), cache) / "vendor" / "llama.cpp"
    log(f"building llama-server from llama-cpp-python {VERSION}'s llama.cpp (several minutes, once)")
    flags = ["-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF"]
    build.mkdir(parents=True, exist_ok=True)
    output = build / "build.log"
    with output.open("w") as stream:
        for step in (
            ["cmake", "-S", str(source), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", *flags],
            ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(os.cpu_count() or 1)],
        ):
            if subprocess.run(step, stdout=stream, stderr=subprocess.STDOUT, check=False).returncode:
                raise SystemExit(f"Building llama-server failed ({' '.join(step[:2])}); see {output}")
    return str(binary)


class LlamaServer:
    """One llama-server on a local port, from `async with` on; `async_restart` empties every
    cache it has. It loads the model as `options` say the embedded engine does (context,
    threads, batch). `chat_template` (a file) replaces the model's, e.g. for a GGUF without
    one, so the server renders what the embedded engine renders."""

    def __init__(
        self,
        options: EmbeddedOptions,
        chat_template: Path | None = None,
        binary: str = "llama-server",
        parallel: int = 1,
    ) -> None:
        found = shutil.which(binary)
        if found is None:
            raise SystemExit(f"{binary} not found (scripts/setup installs llama-server)")
        self.port = 18000 + os.getpid() % 1000
        self.url = f"http://127.0.0.1:{self.port}"
        n_batch = str(options.n_batch)
        self._command = [
            found, "-m", options.model_path, "--host", "127.0.0.1", "--port", str(self.port), "-c", str(options.n_ctx),
            "-b", n_batch, "-ub", n_batch, "-np", str(parallel), "-t", str(options.n_threads), "--no-webui",
        ]  # fmt: skip
        if parallel > 1:  # the slots share the whole context, as the embedded engine has it
            self._command.append("--kv-unified")
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

    async def __aenter__(self) -> LlamaServer:
        await self.async_start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.async_stop()

    async def async_restart(self) -> None:
        await self.async_stop()
        await self.async_start()
