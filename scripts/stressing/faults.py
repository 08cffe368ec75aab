"""Section 3, faults: what a user sees when the model, its server, a download or Home
Assistant itself fails, and whether the next request is served.

Every fault is real: the model worker gets a real SIGKILL or SIGSTOP mid-answer; real
llama-server sits behind `scripts.testing.fault_proxy.FaultProxy`, which goes down, slows, stalls,
answers HTTP 500 or garbage, or closes the connection after the answer's first event; the
model file is removed or overwritten while llama.cpp has it mapped; a download meets a
dropped connection and a full disk (a small tmpfs mounted over the models folder, filled
by another writer while the download runs: a real ENOSPC; where mounting is not allowed,
a file size limit, RLIMIT_FSIZE, makes the kernel refuse the write with EFBIG instead);
Home Assistant is stopped during a request and during a download, then started again on
the same configuration. Requests go through HA's conversation API, downloads through
BotPsy's config flow, as a user's would.

Per fault: `ha_up` (HA kept running, or for a stop, stopped in bounded time and started
again), `clear_error` (the user got a sentence that says what happened, never a
traceback, an exception's name, "unknown error" or nothing), `next_request_served`
(after the fault, or after it ended, a request is answered), and what helps: the error
text, the seconds until it, the worker's pids.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
import errno
import logging
import os
from pathlib import Path
import re
import resource
import shutil
import signal
import subprocess
import time
from typing import Any

from homeassistant import loader
from homeassistant.components import conversation
from homeassistant.config_entries import SOURCE_USER, ConfigEntry, ConfigEntryState
from homeassistant.core import Context, CoreState, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er, frame
from pytest_homeassistant_custom_component.common import async_test_home_assistant

from botpsy_runtime import download, embedded, remote
from botpsy_runtime.embedded import EmbeddedEngine, EmbeddedOptions
from botpsy_runtime.engine import GenerateEvent, GenerateRequest, TextDelta
from custom_components.botpsy.const import CONF_HF_FILE, CONF_HF_REPO, DOMAIN, ENGINE_EMBEDDED, MODELS_DIR
from scripts.benchmark.server import LlamaServer
from scripts.evaluation.agents import Agent, async_botpsy_agent
from scripts.evaluation.home_loader import async_setup_base, ensure_homes_on_path
from scripts.testing.fault_proxy import FaultProxy, Mode
from scripts.testing.model_host import ModelHost
from scripts.testing.tiny_gguf import write_tiny_model

from .options import StressOptions

_LOGGER = logging.getLogger(__name__)

# A question reaches the model (a request naming no device is answered without it), and
# asks for a long answer, so that a fault can strike while it is being written.
QUESTION = "What is the story of the lighthouse keeper and his cat? Tell it at length."
# The longest any request or stop may take before it counts as hung (seconds).
BOUND = 240.0
# A stalled server counts as lost after remote.READ_TIMEOUT (120 s in Home Assistant);
# the stress lowers it so that the stall fault takes seconds, not minutes.
STALL_READ_TIMEOUT = 10.0
# Words that mean the user was shown an internal error rather than what happened.
_UNCLEAR = re.compile(
    r"traceback|unknown error|unexpected error|exception|\b[A-Z]\w*(Error|Exception)\b|errno|<class|^\W*$", re.I
)


def clear(text: str | None) -> bool:
    """A sentence a user understands: not empty, not an internal error's name or trace."""
    return bool(text) and len(text or "") >= 20 and not _UNCLEAR.search(text or "")


@dataclass(slots=True)
class Answer:
    served: bool
    text: str
    seconds: float

    @property
    def error(self) -> str | None:
        return None if self.served else self.text

    def as_dict(self) -> dict[str, Any]:
        return {"served": self.served, "text": self.text[:300], "seconds": round(self.seconds, 1)}


async def ask(hass: HomeAssistant, agent_id: str, text: str = QUESTION) -> Answer:
    """One request through HA's conversation API, as Assist makes it. Served: answered
    without error, by the model (the entry's count of model answers grew)."""
    entries = hass.config_entries.async_entries(DOMAIN)
    counts = [e.runtime_data.stats.requests for e in entries if e.state is ConfigEntryState.LOADED]
    started = time.monotonic()
    try:
        async with asyncio.timeout(BOUND):
            result = await conversation.async_converse(hass, text, None, Context(), language="en", agent_id=agent_id)
    except TimeoutError:
        return Answer(False, "", time.monotonic() - started)  # hung: no answer, not clear
    response = result.response
    speech = str(response.speech.get("plain", {}).get("speech", ""))
    served = response.response_type != conversation.intent.IntentResponseType.ERROR and bool(speech.strip())
    now = [e.runtime_data.stats.requests for e in entries if e.state is ConfigEntryState.LOADED]
    served = served and sum(now) > sum(counts)
    return Answer(served, speech, time.monotonic() - started)


async def ha_up(hass: HomeAssistant, entry: ConfigEntry | None = None) -> bool:
    """HA runs, its loop and executor answer, and the entry is still loaded."""
    if hass.state is not CoreState.running:
        return False
    try:
        async with asyncio.timeout(10):
            await hass.async_add_executor_job(time.monotonic)
            await hass.async_block_till_done()
    except TimeoutError:
        return False
    return entry is None or entry.state is ConfigEntryState.LOADED


@asynccontextmanager
async def running_hass(config_dir: Path) -> AsyncIterator[HomeAssistant]:
    """A real Home Assistant with what Assist needs (as `eval_hass`), that a fault may stop
    itself; whatever is still running is unloaded and stopped at the end."""
    ensure_homes_on_path()
    config_dir.mkdir(parents=True, exist_ok=True)
    async with async_test_home_assistant(config_dir=str(config_dir)) as hass:
        frame.async_setup(hass)
        hass.data.pop(loader.DATA_CUSTOM_COMPONENTS, None)
        hass.config.language = "en"
        try:
            await async_setup_base(hass)
            yield hass
        finally:
            if hass.state is CoreState.running:
                for entry in hass.config_entries.async_entries():
                    if entry.state is ConfigEntryState.LOADED:
                        await hass.config_entries.async_unload(entry.entry_id)
                await hass.async_stop(force=True)


def _entry(hass: HomeAssistant) -> ConfigEntry:
    return hass.config_entries.async_entries(DOMAIN)[0]


class Injector:
    """Runs `action` when the engine streams its first piece of text for a request: the
    fault strikes mid-answer, whatever the model's speed."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self._generate = engine.generate
        self.action: Callable[[], Awaitable[None]] | None = None
        self.struck = False
        self.struck_at = 0.0
        engine.generate = self._wrapped

    async def _wrapped(self, request: GenerateRequest) -> AsyncIterator[GenerateEvent]:
        async for event in self._generate(request):
            yield event
            if isinstance(event, TextDelta) and self.action is not None:
                action, self.action = self.action, None
                self.struck, self.struck_at = True, time.monotonic()
                await action()

    def arm(self, action: Callable[[], Awaitable[None]]) -> None:
        self.struck = False
        self.action = action

    def restore(self) -> None:
        del self._engine.generate  # the class's method again


async def _settle(agent: Agent) -> None:
    with suppress(TimeoutError):
        await agent.async_settle(timeout_s=120)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- the embedded engine -------------------------------------------------------------


@dataclass(slots=True)
class _EmbeddedAgent:
    """BotPsy's agent on the embedded engine and the model copy it loaded: what each model-file fault strikes."""

    hass: HomeAssistant
    agent: Agent
    entry: ConfigEntry
    engine: EmbeddedEngine
    model: Path  # the copy the engine loaded, which the faults remove and overwrite


async def _embedded_faults(options: StressOptions, work: Path) -> dict[str, dict[str, Any]]:
    """SIGKILL and SIGSTOP mid-answer; the model file removed and overwritten while loaded."""
    results: dict[str, dict[str, Any]] = {}
    model = work / "model.gguf"  # a copy: the faults remove and overwrite it
    work.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(shutil.copyfile, options.model, model)
    other = await asyncio.to_thread(write_tiny_model, work / "other.gguf", "qwen3")
    async with running_hass(work / "config") as hass:
        agent = await async_botpsy_agent(hass, model, None, options.threads)
        entry = _entry(hass)
        engine = entry.runtime_data.engine
        assert isinstance(engine, EmbeddedEngine)
        injector = Injector(engine)
        try:
            for name, sig in (
                ("worker_killed_mid_request", signal.SIGKILL),
                ("worker_hung_mid_request", signal.SIGSTOP),
            ):
                await _settle(agent)
                pid = engine.pid

                async def strike(pid: int | None = pid, sig: signal.Signals = sig) -> None:
                    assert pid is not None
                    os.kill(pid, sig)

                injector.arm(strike)
                answer = await ask(hass, agent.agent_id)
                error_after = time.monotonic() - injector.struck_at if injector.struck else None
                old_gone = not _alive(pid)
                up = await ha_up(hass, entry)
                after = await ask(hass, agent.agent_id)
                results[name] = {
                    "ha_up": up,
                    "clear_error": injector.struck and not answer.served and clear(answer.text),
                    "next_request_served": after.served,
                    "struck_mid_answer": injector.struck,
                    "error": answer.text[:300],
                    "seconds_from_fault_to_error": round(error_after, 1) if error_after is not None else None,
                    "old_worker_gone": old_gone,
                    "new_worker": engine.pid not in (None, pid),
                    "next": after.as_dict(),
                }
                if sig == signal.SIGSTOP:
                    results[name]["watchdog_s"] = embedded.WATCHDOG_TIMEOUT
            loaded = _EmbeddedAgent(hass, agent, entry, engine, model)
            results["model_file_removed"] = await _model_removed(loaded, options.model)
            results["model_file_replaced"] = await _model_replaced(loaded, other, options.model)
        finally:
            injector.restore()
    return results


async def _model_removed(loaded: _EmbeddedAgent, original: Path) -> dict[str, Any]:
    """The file is deleted while loaded: llama.cpp keeps its mapping, so requests are
    served; a worker that must start again (here: killed) cannot, and says why; once the
    file is back, requests are served again."""
    hass, agent_id = loaded.hass, loaded.agent.agent_id
    await _settle(loaded.agent)
    await asyncio.to_thread(loaded.model.unlink)
    while_loaded = await ask(hass, agent_id)
    pid = loaded.engine.pid
    if pid is not None:
        os.kill(pid, signal.SIGKILL)
    await hass.async_block_till_done()
    missing = await ask(hass, agent_id)
    up = await ha_up(hass, loaded.entry)
    await asyncio.to_thread(shutil.copyfile, original, loaded.model)
    back = await ask(hass, agent_id)
    return {
        "ha_up": up,
        "clear_error": not missing.served and clear(missing.text),
        "next_request_served": back.served,
        "served_while_loaded": while_loaded.served,
        "error": missing.text[:300],
        "after_restore": back.as_dict(),
    }


async def _model_replaced(loaded: _EmbeddedAgent, other: Path, original: Path) -> dict[str, Any]:
    """The file is overwritten in place (as `cp other.gguf model.gguf` does) while llama.cpp
    has it mapped: the running worker reads the new bytes, or faults on pages past the new
    end. Each request is served or fails clearly; the one after is served."""
    hass, agent_id = loaded.hass, loaded.agent.agent_id
    await _settle(loaded.agent)
    pid = loaded.engine.pid
    await asyncio.to_thread(shutil.copyfile, other, loaded.model)
    answers = [await ask(hass, agent_id) for _ in range(3)]
    up = await ha_up(hass, loaded.entry)
    errors = [a.text for a in answers if not a.served]
    # Put the real model back (in place again) and make sure it serves.
    await asyncio.to_thread(shutil.copyfile, original, loaded.model)
    restored = [await ask(hass, agent_id) for _ in range(2)]
    return {
        "ha_up": up,
        "clear_error": all(clear(e) for e in errors),
        "next_request_served": answers[-1].served and restored[-1].served,
        "answers": [a.as_dict() for a in answers],
        "errors": len(errors),
        "worker_restarted": loaded.engine.pid != pid,
        "after_restore": [a.as_dict() for a in restored],
    }


# --- the remote engine ---------------------------------------------------------------

REMOTE_FAULTS: tuple[tuple[str, Mode], ...] = (
    ("server_down", "down"),
    ("server_slow", "slow"),
    ("server_stalled", "stall"),
    ("server_http_500", "error500"),
    ("server_garbage", "garbage"),
    ("server_closed_mid_stream", "cut"),
)


async def _remote_faults(options: StressOptions, work: Path) -> dict[str, dict[str, Any]]:
    """llama-server behind a proxy that fails one way at a time, with an HA agent on it."""
    results: dict[str, dict[str, Any]] = {}
    server = LlamaServer(EmbeddedOptions(str(options.model), n_ctx=8192, n_threads=options.threads, n_batch=512))
    await server.async_start()
    proxy = FaultProxy(server.url, delay=0.5)
    await proxy.async_start()
    read_timeout = remote.READ_TIMEOUT
    remote.READ_TIMEOUT = STALL_READ_TIMEOUT
    try:
        async with running_hass(work / "config") as hass:
            agent = await async_botpsy_agent(hass, None, proxy.url, options.threads)
            entry = _entry(hass)
            for name, mode in REMOTE_FAULTS:
                await _settle(agent)
                await proxy.async_set(mode)
                faulted = proxy.faulted
                answer = await ask(hass, agent.agent_id)
                up = await ha_up(hass, entry)
                await proxy.async_set("pass")
                after = await ask(hass, agent.agent_id)
                figures: dict[str, Any] = {
                    "ha_up": up,
                    # A slow server is no fault to report: its answer is the right outcome.
                    "clear_error": answer.served if mode == "slow" else not answer.served and clear(answer.text),
                    "next_request_served": after.served,
                    "answer": answer.as_dict(),
                    "requests_faulted": proxy.faulted - faulted if mode != "down" else None,
                    "next": after.as_dict(),
                }
                if mode == "stall":
                    figures["read_timeout_s"] = STALL_READ_TIMEOUT
                if mode == "slow":
                    figures["delay_per_piece_s"] = proxy.delay
                results[name] = figures
    finally:
        remote.READ_TIMEOUT = read_timeout
        await proxy.async_close()
        await server.async_stop()
    return results


# --- downloads -----------------------------------------------------------------------


async def _start_download(hass: HomeAssistant) -> str:
    """BotPsy's config flow, as a user fills it in: on this hub, the hub's model."""
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"next_step_id": ENGINE_EMBEDDED})
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_HF_REPO: "org/repo", CONF_HF_FILE: "model.gguf"}
    )
    assert result["type"] is FlowResultType.SHOW_PROGRESS, result
    return str(result["flow_id"])


async def _finish_download(hass: HomeAssistant, flow_id: str) -> dict[str, Any]:
    """Wait for the download, then take the flow's next step (as the frontend does)."""
    async with asyncio.timeout(BOUND):
        await hass.async_block_till_done(wait_background_tasks=True)
    result = await hass.config_entries.flow.async_configure(flow_id)
    if result["type"] is FlowResultType.SHOW_PROGRESS_DONE:
        result = await hass.config_entries.flow.async_configure(flow_id)
    return dict(result)


def _agent_id(hass: HomeAssistant, entry: ConfigEntry) -> str:
    registry = er.async_get(hass)
    return next(
        e.entity_id for e in er.async_entries_for_config_entry(registry, entry.entry_id) if e.domain == "conversation"
    )


async def _resumed_download(hass: HomeAssistant, hub: ModelHost, dest: Path, payload: bytes) -> dict[str, Any]:
    """Retry the download: it must resume from the kept part, verify, load and answer."""
    ranges = len(hub.ranges)
    result = await _finish_download(hass, await _start_download(hass))
    figures: dict[str, Any] = {
        "retry": str(result.get("reason") or result["type"]),
        "resumed_from": hub.ranges[ranges] if len(hub.ranges) > ranges else None,
        "file_intact": dest.exists() and dest.read_bytes() == payload,
    }
    answer = None
    if result["type"] is FlowResultType.CREATE_ENTRY:
        await hass.async_block_till_done()
        entry = result["result"]
        if entry.state is ConfigEntryState.LOADED:
            answer = await ask(hass, _agent_id(hass, entry))
    figures["next"] = answer.as_dict() if answer else None
    figures["next_request_served"] = bool(answer and answer.served and figures["file_intact"])
    return figures


def _untouched(hass: HomeAssistant, dest: Path) -> dict[str, Any]:
    """Nothing half-written is used: no model file, no entry; the part is kept."""
    part = dest.with_name(dest.name + ".part")
    return {
        "part_kept_bytes": part.stat().st_size if part.exists() else 0,
        "half_written_used": dest.exists() or bool(hass.config_entries.async_entries(DOMAIN)),
    }


async def _download_faults(options: StressOptions, work: Path) -> dict[str, dict[str, Any]]:
    """A dropped connection and a full disk during a download from a local hub.

    The hub serves the instruct model itself: a file of many of the download's 1 MiB
    blocks, so that "halfway" is what it is with a real model (a file smaller than one
    block is written only at its end)."""
    results: dict[str, dict[str, Any]] = {}
    work.mkdir(parents=True, exist_ok=True)
    async with _serving_hub(options) as (hub, payload):
        for name, run in (
            ("download_connection_lost", _connection_lost),
            ("download_disk_full", _disk_full),
        ):
            config = work / name
            shutil.rmtree(config, ignore_errors=True)
            async with running_hass(config) as hass:
                results[name] = await run(hass, hub, Path(hass.config.path(MODELS_DIR, "model.gguf")), payload)
    return results


@asynccontextmanager
async def _serving_hub(options: StressOptions) -> AsyncIterator[tuple[ModelHost, bytes]]:
    """The hub serving the instruct model, HA's downloads pointed at it meanwhile."""
    payload = await asyncio.to_thread(options.model.read_bytes)
    hub = ModelHost(payload)
    await hub.async_start()
    endpoint = download.HF_ENDPOINT
    download.HF_ENDPOINT = hub.url
    try:
        yield hub, payload
    finally:
        download.HF_ENDPOINT = endpoint
        await hub.async_close()


async def _connection_lost(hass: HomeAssistant, hub: ModelHost, dest: Path, payload: bytes) -> dict[str, Any]:
    hub.cut_next = len(payload) // 2
    failed = await _finish_download(hass, await _start_download(hass))
    error = str((failed.get("description_placeholders") or {}).get("error", ""))
    figures = {"flow": str(failed.get("reason") or failed["type"]), "error": error, **_untouched(hass, dest)}
    up = await ha_up(hass)
    figures |= await _resumed_download(hass, hub, dest, payload)
    figures |= {
        "ha_up": up,
        "clear_error": failed.get("reason") == "download_failed" and clear(error) and not figures["half_written_used"],
    }
    return figures


async def _disk_full(hass: HomeAssistant, hub: ModelHost, dest: Path, payload: bytes) -> dict[str, Any]:
    """The disk fills while the download runs: another writer takes the room left once the
    first half is written (the hub holds the second half until then)."""
    folder = dest.parent
    folder.mkdir(parents=True, exist_ok=True)
    size = len(payload) + download.DISK_MARGIN + (1 << 20)  # room for the pre-check, no more
    mounted = (
        subprocess.run(  # noqa: ASYNC221 (a mount, before anything runs)
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=False, capture_output=True
        ).returncode
        == 0
    )
    filler = folder / "filler"
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    sigxfsz = signal.getsignal(signal.SIGXFSZ)

    async def fill_when_halfway() -> None:
        await hub.halfway.wait()
        if mounted:
            await asyncio.to_thread(_fill, filler)
        else:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (len(payload) * 3 // 4, limit[1]))
        hub.release.set()

    hub.halfway.clear()
    hub.release.clear()
    hub.hold_next = len(payload) // 2
    filling = asyncio.create_task(fill_when_halfway())
    try:
        failed = await _finish_download(hass, await _start_download(hass))
    finally:
        await filling
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, sigxfsz)
    error = str((failed.get("description_placeholders") or {}).get("error", ""))
    figures: dict[str, Any] = {
        "disk": "tmpfs (ENOSPC)" if mounted else "RLIMIT_FSIZE (EFBIG)",
        "flow": str(failed.get("reason") or failed["type"]),
        "error": error,
        **_untouched(hass, dest),
    }
    up = await ha_up(hass)
    filler.unlink(missing_ok=True)  # the user makes room, and tries again
    try:
        figures |= await _resumed_download(hass, hub, dest, payload)
    finally:
        for entry in hass.config_entries.async_entries(DOMAIN):
            await hass.config_entries.async_unload(entry.entry_id)
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)  # noqa: ASYNC221
    figures |= {
        "ha_up": up,
        "clear_error": failed.get("reason") == "download_failed" and clear(error) and not figures["half_written_used"],
    }
    return figures


def _fill(path: Path) -> None:
    """Write until the disk is full (ENOSPC), as another program would."""
    block = b"\0" * (1 << 16)
    with path.open("wb", buffering=0) as stream:
        try:
            while stream.write(block):
                pass
        except OSError as err:
            if err.errno != errno.ENOSPC:
                raise


# --- Home Assistant stopped ----------------------------------------------------------


async def _stop_faults(options: StressOptions, work: Path) -> dict[str, dict[str, Any]]:
    return {
        "ha_stopped_during_request": await _stop_during_request(options, work / "request"),
        "ha_stopped_during_download": await _stop_during_download(options, work / "download"),
    }


async def _stop_during_request(options: StressOptions, work: Path) -> dict[str, Any]:
    """HA stops while the embedded model answers: the stop ends in bounded time, the worker
    does not outlive it, the request ends; HA started again serves the next request."""
    figures: dict[str, Any] = {}
    async with running_hass(work / "config") as hass:
        agent = await async_botpsy_agent(hass, options.model, None, options.threads)
        engine = _entry(hass).runtime_data.engine
        assert isinstance(engine, EmbeddedEngine)
        await _settle(agent)
        pid = engine.pid
        injector = Injector(engine)
        stopping: list[asyncio.Task[None]] = []

        async def stop() -> None:
            stopping.append(asyncio.create_task(hass.async_stop()))

        injector.arm(stop)
        answer = await ask(hass, agent.agent_id)
        started = time.monotonic()
        try:
            async with asyncio.timeout(BOUND):
                await asyncio.gather(*stopping)
            stopped = hass.state is CoreState.stopped
        except TimeoutError:
            stopped = False
        figures |= {
            "struck_mid_answer": injector.struck,
            "answer": answer.as_dict(),
            "stopped": stopped,
            "seconds_to_stop": round(time.monotonic() - started, 1),
            "worker_outlived_ha": _alive(pid),
        }
    async with running_hass(work / "config") as hass:
        agent = await async_botpsy_agent(hass, options.model, None, options.threads)
        after = await ask(hass, agent.agent_id)
        up = await ha_up(hass)
    figures |= {
        "ha_up": stopped and not figures["worker_outlived_ha"] and up,
        # The request was answered, or ended with a clear error: never left hanging.
        "clear_error": answer.served or clear(answer.text),
        "next_request_served": after.served,
        "next": after.as_dict(),
    }
    return figures


async def _stop_during_download(options: StressOptions, work: Path) -> dict[str, Any]:
    """HA stops while a model downloads: nothing half-written is used, the part is kept,
    and the download resumes from it once HA runs again."""
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "config", ignore_errors=True)
    async with _serving_hub(options) as (hub, payload):
        async with running_hass(work / "config") as hass:
            dest = Path(hass.config.path(MODELS_DIR, "model.gguf"))
            hub.hold_next = len(payload) // 2
            await _start_download(hass)
            async with asyncio.timeout(BOUND):
                await hub.halfway.wait()
            started = time.monotonic()
            try:
                async with asyncio.timeout(BOUND):
                    await hass.async_stop()
                stopped = hass.state is CoreState.stopped
            except TimeoutError:
                stopped = False
            figures: dict[str, Any] = {"stopped": stopped, "seconds_to_stop": round(time.monotonic() - started, 1)}
            figures |= _untouched(hass, dest)
        hub.release.set()
        async with running_hass(work / "config") as hass:
            up = await ha_up(hass)
            figures |= await _resumed_download(hass, hub, dest, payload)
    figures |= {
        "ha_up": stopped and up,
        # Nothing to tell the user while HA stops; what counts is that nothing half-written
        # became a model or an entry.
        "clear_error": stopped and not figures["half_written_used"] and figures["part_kept_bytes"] > 0,
    }
    return figures


async def async_run(options: StressOptions) -> dict[str, dict[str, Any]]:
    """Every fault, each group on its own Home Assistant; the figures per fault."""
    work = options.out / "faults"
    results: dict[str, dict[str, Any]] = {}
    for group, run in (
        ("embedded", _embedded_faults),
        ("remote", _remote_faults),
        ("download", _download_faults),
    ):
        started = time.monotonic()
        results |= await run(options, work / group)
        _LOGGER.info("faults: %s took %.0f s", group, time.monotonic() - started)
    results |= await _stop_faults(options, work / "stop")
    return results
