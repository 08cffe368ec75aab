"""The embedded engine: llama.cpp in a supervised child process on this machine.

The worker (`worker.py`, run as `python -I -m botpsy_runtime.worker`) owns the model;
this side speaks its JSON-lines protocol over pipes, serializes requests, turns a dead or
hung worker into a clear error for the request it was serving and starts a fresh one for
the next request.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
import contextlib
from dataclasses import asdict, dataclass, field
import itertools
import json
import logging
import os
from pathlib import Path
import signal
import sys
import time
from typing import Any

from .chat_template import ChatTemplate, fallback_template, model_template
from .engine import EngineHealth, Finished, GenerateEvent, GenerateRequest, ModelInfo, Preemptible, TextDelta, Timings
from .errors import EngineError, EngineUnavailableError, ModelLoadError
from .gguf_metadata import read_gguf_metadata

_LOGGER = logging.getLogger(__name__)
# The child process: this package's worker module, run by the interpreter Home Assistant runs on.
WORKER_MODULE = "botpsy_runtime.worker"
LOAD_TIMEOUT = 300.0
STOP_TIMEOUT = 5.0
# This many unexpected worker exits within the window count as "keeps failing".
CRASH_LIMIT = 3
CRASH_WINDOW = 600.0
# A worker that sends nothing for this long while serving a request is hung, and killed.
# While it serves, the worker says it is alive 15 times as often (every second) from a
# thread that runs while llama.cpp computes, so a long prompt never trips this: only a
# process that is stopped, deadlocked or starved of CPU for this long does. Long enough
# for a hub that swaps for a few seconds, short enough that a voice request gets its
# error while the user still waits for an answer.
WATCHDOG_TIMEOUT = 15.0


def default_threads() -> int:
    """Physical-core count is best for llama.cpp; a hub has 4, we leave none idle."""
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True, slots=True)
class EmbeddedOptions:
    """How the worker loads the model."""

    model_path: str
    n_ctx: int = 4096
    n_threads: int = field(default_factory=default_threads)
    n_batch: int = 256


class EmbeddedEngine:
    """Engine backed by a llama.cpp worker process."""

    supports_grammar = True

    def __init__(
        self,
        options: EmbeddedOptions,
        *,
        on_repeated_failure: Callable[[str], None] | None = None,
        python: str = sys.executable,
    ) -> None:
        self.options = options
        self._python = python
        self._on_repeated_failure = on_repeated_failure
        self._info: ModelInfo | None = None
        self._template: ChatTemplate | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._stderr: deque[str] = deque(maxlen=20)
        self._pending: dict[int, asyncio.Queue[dict[str, Any] | None]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self._prefills = Preemptible()
        self._crashes: deque[float] = deque()
        self._unloading = False
        self._hung: int | None = None  # pid of a worker the watchdog killed
        self._file: tuple[int, ...] | None = None  # the model file's identity when loaded
        self.last_timings: Timings | None = None

    @property
    def model_info(self) -> ModelInfo | None:
        """The loaded model, once `async_load` succeeded; None after unloading."""
        return self._info

    @property
    def chat_template(self) -> ChatTemplate | None:
        """The model's chat template (or its architecture's fallback), which prompts are rendered with."""
        return self._template

    @property
    def pid(self) -> int | None:
        """The worker's process id while it runs."""
        running = self._process is not None and self._process.returncode is None
        return self._process.pid if running and self._process else None

    async def async_load(self) -> ModelInfo:
        """Start a worker on the model and read its metadata and chat template; ModelLoadError if unusable."""
        identity = await asyncio.to_thread(_identity, self.options.model_path)
        meta = await asyncio.to_thread(read_gguf_metadata, self.options.model_path)
        ready = await self._start()
        self._file = identity
        self._info = ModelInfo(
            name=meta.name,
            architecture=meta.architecture,
            context_length=int(ready["n_ctx"]),
            chat_template=meta.chat_template,
            bos_token=str(ready.get("bos_token", "")),
            eos_token=str(ready.get("eos_token", "")),
            file_size=meta.file_size,
            load_seconds=float(ready["load_seconds"]),
        )
        try:
            self._template = model_template(
                meta.chat_template or fallback_template(meta.architecture),
                bos_token=self._info.bos_token,
                eos_token=self._info.eos_token,
            )
        except ModelLoadError:
            await self.async_unload()
            raise
        return self._info

    async def _start(self) -> dict[str, Any]:
        self._unloading = False
        self._stderr.clear()
        process = await asyncio.create_subprocess_exec(
            self._python,
            "-I",
            "-m",
            WORKER_MODULE,
            json.dumps({**asdict(self.options), "heartbeat": WATCHDOG_TIMEOUT / 15}),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=1 << 24,
        )
        assert process.stdout and process.stderr
        self._stderr_task = asyncio.create_task(self._drain_stderr(process.stderr))
        try:
            line = await asyncio.wait_for(process.stdout.readline(), LOAD_TIMEOUT)
        except TimeoutError:
            await self._kill(process)
            raise ModelLoadError("The model did not load within 5 minutes") from None
        if not line:
            code = await process.wait()
            raise ModelLoadError(f"The model worker failed to start: {self._why(code)}")
        ready: dict[str, Any] = json.loads(line)
        if ready.get("event") != "ready":
            await self._kill(process)
            raise ModelLoadError(f"llama.cpp could not load the model: {ready.get('error')}")
        self._process = process
        self._reader = asyncio.create_task(self._read(process))
        _LOGGER.debug("Model worker %s ready: %s", process.pid, ready)
        return ready

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            text = line.decode(errors="replace").rstrip()
            self._stderr.append(text)
            _LOGGER.debug("worker: %s", text)

    def _why(self, code: int | None, pid: int | None = None) -> str:
        if pid is not None and pid == self._hung:
            return f"hung: silent for {WATCHDOG_TIMEOUT:.0f} seconds, so it was stopped"
        if code is not None and code < 0:
            reason = f"killed by {signal.Signals(-code).name}"
            if code == -signal.SIGKILL:
                reason += " (out of memory?)"
            elif code == -signal.SIGILL:
                reason += " (an instruction this CPU lacks: a llama.cpp build for another CPU?)"
        else:
            reason = f"exit code {code}"
        tail = next((line for line in reversed(self._stderr) if line.strip()), "")
        return f"{reason}: {tail}" if tail else reason

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout
        while line := await process.stdout.readline():
            message = json.loads(line)
            queue = self._pending.get(message.get("id", 0))
            if queue is not None:
                queue.put_nowait(message)
        code = await process.wait()
        if self._stderr_task:
            with contextlib.suppress(Exception):
                await self._stderr_task
        for queue in self._pending.values():
            queue.put_nowait(None)
        if not self._unloading:
            self._record_crash(code, process.pid)

    def _record_crash(self, code: int | None, pid: int) -> None:
        why = self._why(code, pid)
        _LOGGER.error("The BotPsy model worker stopped unexpectedly (%s); it restarts on the next request", why)
        now = time.monotonic()
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > CRASH_WINDOW:
            self._crashes.popleft()
        if len(self._crashes) >= CRASH_LIMIT and self._on_repeated_failure:
            self._on_repeated_failure(why)

    async def _ensure_running(self) -> asyncio.subprocess.Process:
        identity = await asyncio.to_thread(_identity, self.options.model_path) if self._info is not None else None
        if identity is not None and identity != self._file:
            # Replaced on disk (a removed file is still mapped and served as it was):
            # llama.cpp would read the new bytes through the old mapping, so the
            # model is loaded again, its template and metadata too.
            _LOGGER.warning("The model file %s changed on disk; loading it again", self.options.model_path)
            info = self._info
            await self.async_unload()
            try:
                await self.async_load()
            except BaseException as err:
                self._info, self._file = info, None  # tried again on the next request
                if isinstance(err, ModelLoadError):
                    raise EngineUnavailableError(str(err)) from err
                raise
        if self._process is None or self._process.returncode is not None:
            if self._info is None:
                raise EngineUnavailableError("The model is not loaded")
            _LOGGER.info("Starting the BotPsy model worker for %s", self.options.model_path)
            try:
                await self._start()
            except ModelLoadError as err:
                raise EngineUnavailableError(str(err)) from err
        assert self._process is not None
        return self._process

    async def _request(self, message: dict[str, Any]) -> AsyncGenerator[dict[str, Any]]:
        """Send one request and yield its replies until the final one.

        A worker found dead or hung before it took the request up (it died or froze while
        idle) is started again and the request sent once more; a death or hang after it
        took it up is an error. A worker silent for `WATCHDOG_TIMEOUT` is killed.
        """
        for attempt in (1, 2):
            process = await self._ensure_running()
            assert process.stdin
            rid = next(self._ids)
            queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
            self._pending[rid] = queue
            done = replied = False
            try:
                process.stdin.write((json.dumps({"id": rid, **message}) + "\n").encode())
                await process.stdin.drain()
                while (reply := await self._next(process, queue)) is not None:
                    replied = True
                    if "alive" in reply:
                        continue
                    if "error" in reply:
                        done = True
                        raise EngineError(reply["error"])
                    done = "done" in reply or "result" in reply
                    yield reply
                    if done:
                        return
                done = True
            except (BrokenPipeError, ConnectionResetError):
                done = True
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            finally:
                if not done and process.returncode is None and process.stdin:
                    # Cancelled mid-generation: stop the worker's loop and wait for its end,
                    # so the next request starts on a quiet pipe.
                    with contextlib.suppress(ConnectionError):
                        process.stdin.write((json.dumps({"op": "cancel", "id": rid}) + "\n").encode())
                        await process.stdin.drain()
                    while (reply := await self._next(process, queue)) is not None and not reply.keys() & {
                        "done",
                        "error",
                        "result",
                    }:
                        pass
                self._pending.pop(rid, None)
            if self._unloading:
                raise EngineUnavailableError("The model was unloaded while it was answering")
            if (replied or attempt == 2) and process.pid == self._hung:
                raise EngineUnavailableError(
                    f"The model stopped answering for {WATCHDOG_TIMEOUT:.0f} seconds and was stopped; "
                    "it restarts on the next request"
                )
            if replied or attempt == 2:
                raise EngineUnavailableError(
                    "The model worker stopped unexpectedly "
                    f"({self._why(process.returncode, process.pid)}); it restarts on the next request"
                )

    async def _next(
        self, process: asyncio.subprocess.Process, queue: asyncio.Queue[dict[str, Any] | None]
    ) -> dict[str, Any] | None:
        """The worker's next reply to a request, or None once it is gone.

        The watchdog: a worker silent for `WATCHDOG_TIMEOUT` is killed (a stopped process
        too), and its end reported as a hang.
        """
        try:
            return await asyncio.wait_for(queue.get(), WATCHDOG_TIMEOUT)
        except TimeoutError:
            if process.returncode is None:
                self._hung = process.pid
                _LOGGER.warning("The BotPsy model worker %s stopped answering; stopping it", process.pid)
                await self._kill(process)
            return None

    async def async_count_tokens(self, text: str) -> int:
        """Tokens `text` takes, as the worker's model tokenizes it."""
        async with self._lock, contextlib.aclosing(self._request({"op": "tokenize", "text": text})) as replies:
            async for reply in replies:
                return int(reply["result"])
        raise EngineError("No token count returned")

    async def async_prefill(self, prompt: str, quiet: float = 0.0) -> Timings:
        """Evaluate `prompt` in the worker and keep a state snapshot at its end.

        A request arriving meanwhile interrupts it (PrefillInterruptedError).
        """
        return await self._prefills.run(self._prefill(prompt), quiet)

    async def _prefill(self, prompt: str) -> Timings:
        async with self._lock, contextlib.aclosing(self._request({"op": "prefill", "prompt": prompt})) as replies:
            async for reply in replies:
                return Timings(**reply["result"])
        raise EngineError("No prefill result returned")

    async def generate(self, request: GenerateRequest) -> AsyncIterator[GenerateEvent]:
        """Stream a generation from the worker (chat messages rendered here); a running prefill stops first."""
        prompt = request.prompt
        if prompt is None:
            if self._template is None:
                raise EngineUnavailableError("The model is not loaded")
            prompt = self._template.render(request.messages or [], tools=request.tools)
        message = {
            "op": "generate",
            "prompt": prompt,
            "grammar": request.grammar,
            "json_schema": request.json_schema,
            "stop": list(request.stop),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "top_k": request.top_k,
            "seed": request.seed,
            "fast_forward": request.fast_forward,
        }
        self._prefills.interrupt()
        waited = time.monotonic()
        async with self._lock:
            queued = time.monotonic() - waited
            # Closed with this stream, so that a generation left halfway is cancelled before
            # the lock goes to the next (left to the garbage collector, it was later).
            async with contextlib.aclosing(self._request(message)) as replies:
                async for reply in replies:
                    if "text" in reply:
                        yield TextDelta(reply["text"])
                    elif "done" in reply:
                        timings = Timings(**reply["done"]["timings"], queued_seconds=queued)
                        self.last_timings = timings
                        yield Finished(reply["done"]["reason"], timings)

    async def async_health(self) -> EngineHealth:
        """Whether the worker answers a ping within 5 seconds, and the state snapshots it keeps."""
        if self.pid is None:
            return EngineHealth(False, "worker not running")
        try:
            memory = await self.async_snapshot_memory()
        except (TimeoutError, EngineError) as err:
            return EngineHealth(False, str(err) or "worker busy or not answering")
        snapshots = f"{memory.get('snapshots', 0)} state snapshots ({memory.get('snapshot_bytes', 0) >> 10} KiB)"
        return EngineHealth(True, f"worker {self.pid} answering; {snapshots}")

    async def async_snapshot_memory(self) -> dict[str, int]:
        """The state snapshots the worker keeps: how many (`snapshots`) and their bytes
        (`snapshot_bytes`). Raises TimeoutError when the worker does not answer in 5 seconds."""
        memory: dict[str, int] = {}
        async with asyncio.timeout(5), self._lock, contextlib.aclosing(self._request({"op": "ping"})) as replies:
            async for reply in replies:
                memory = reply["result"]
        return memory

    def worker_rss_bytes(self) -> int | None:
        """Resident memory of the worker, from /proc (Linux)."""
        if (pid := self.pid) is None:
            return None
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    async def async_unload(self) -> None:
        """Stop the worker: its stdin is closed, and it is killed if it does not exit within STOP_TIMEOUT."""
        self._unloading = True
        self._info = None
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        assert process.stdin
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
        except TimeoutError:
            await self._kill(process)
        if self._reader:
            await self._reader

    @staticmethod
    async def _kill(process: asyncio.subprocess.Process) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


def _identity(path: str) -> tuple[int, ...] | None:
    """What tells a file from its replacement; None if there is no file."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
