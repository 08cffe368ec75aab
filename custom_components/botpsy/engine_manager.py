"""One engine per model, shared by every config entry that uses it.

Two entries on the same GGUF share one worker process (and its memory); two entries on
the same server and model share one client. The engine is unloaded when the last entry
using it unloads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
import hashlib
import os
from typing import Any

from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.util.hass_dict import HassKey

from botpsy_runtime.embedded import EmbeddedEngine, EmbeddedOptions, default_threads
from botpsy_runtime.engine import Engine
from botpsy_runtime.remote import RemoteEngine, RemoteOptions

from .const import (
    CONF_API_KEY,
    CONF_ENGINE,
    CONF_MODEL,
    CONF_MODEL_PATH,
    CONF_N_BATCH,
    CONF_N_CTX,
    CONF_N_THREADS,
    CONF_URL,
    DEFAULT_N_BATCH,
    DEFAULT_N_CTX,
    DOMAIN,
    ENGINE_EMBEDDED,
    ISSUE_WORKER_CRASHING,
    LOGGER,
)
from .engine_install import async_ensure_engine

DATA_ENGINES: HassKey[EngineManager] = HassKey(f"{DOMAIN}_engines")


@dataclass(slots=True)
class _Shared:
    engine: Engine
    users: set[str] = field(default_factory=set)


def engine_key(data: Mapping[str, Any]) -> str:
    """What makes two entries use the same engine."""
    if data[CONF_ENGINE] == ENGINE_EMBEDDED:
        return f"embedded:{os.path.realpath(data[CONF_MODEL_PATH])}"
    return f"remote:{RemoteOptions(data[CONF_URL]).base}:{data.get(CONF_MODEL) or ''}"


class EngineManager:
    """Loads, shares and unloads engines."""

    def __init__(self, hass: HomeAssistant) -> None:
        self.hass = hass
        self._shared: dict[str, _Shared] = {}
        self._lock = asyncio.Lock()

    def _build(self, key: str, data: Mapping[str, Any]) -> Engine:
        if data[CONF_ENGINE] == ENGINE_EMBEDDED:
            options = EmbeddedOptions(
                model_path=data[CONF_MODEL_PATH],
                n_ctx=int(data.get(CONF_N_CTX, DEFAULT_N_CTX)),
                n_threads=int(data.get(CONF_N_THREADS) or default_threads()),
                n_batch=int(data.get(CONF_N_BATCH, DEFAULT_N_BATCH)),
            )
            return EmbeddedEngine(options, on_repeated_failure=self._crash_reporter(key, options.model_path))
        return RemoteEngine(
            RemoteOptions(data[CONF_URL], data.get(CONF_API_KEY) or None, data.get(CONF_MODEL) or None),
            async_get_clientsession(self.hass),
        )

    def _crash_reporter(self, key: str, model_path: str) -> Callable[[str], None]:
        # A stable id (not hash(), which changes per run): the same model keeps one issue.
        issue_id = f"{ISSUE_WORKER_CRASHING}_{hashlib.sha256(key.encode()).hexdigest()[:12]}"

        @callback
        def report(reason: str) -> None:
            ir.async_create_issue(
                self.hass,
                DOMAIN,
                issue_id,
                is_fixable=False,
                severity=ir.IssueSeverity.ERROR,
                translation_key=ISSUE_WORKER_CRASHING,
                translation_placeholders={"model": os.path.basename(model_path), "reason": reason},
            )

        return report

    async def async_acquire(self, entry_id: str, data: Mapping[str, Any]) -> Engine:
        """The engine for `data`, loading it if no entry uses it yet."""
        key = engine_key(data)
        async with self._lock:
            shared = self._shared.get(key)
            if shared is None:
                if data[CONF_ENGINE] == ENGINE_EMBEDDED:
                    await async_ensure_engine(self.hass)
                engine = self._build(key, data)
                await engine.async_load()
                shared = self._shared[key] = _Shared(engine)
                LOGGER.debug("Loaded engine %s", key)
            shared.users.add(entry_id)
            return shared.engine

    async def async_release(self, entry_id: str, data: Mapping[str, Any]) -> None:
        """The entry no longer uses its engine: unload it if no other entry does."""
        key = engine_key(data)
        async with self._lock:
            shared = self._shared.get(key)
            if shared is None:
                return
            shared.users.discard(entry_id)
            if not shared.users:
                del self._shared[key]
                await shared.engine.async_unload()
                LOGGER.debug("Unloaded engine %s", key)

    async def async_shutdown(self, _event: Event | None = None) -> None:
        """Home Assistant stops: stop every worker, so none outlives it."""
        async with self._lock:
            shared, self._shared = list(self._shared.values()), {}
            for item in shared:
                await item.engine.async_unload()


@callback
def async_get_engine_manager(hass: HomeAssistant) -> EngineManager:
    """The engine manager of this HA instance, created on first use; it unloads every engine when HA stops."""
    if DATA_ENGINES not in hass.data:
        manager = hass.data[DATA_ENGINES] = EngineManager(hass)
        hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, manager.async_shutdown)
    return hass.data[DATA_ENGINES]
