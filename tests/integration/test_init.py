"""Set-up, unload, failure states, repairs and diagnostics of a BotPsy entry."""

from __future__ import annotations

from collections.abc import AsyncIterator
import os
from pathlib import Path
import signal
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import get_diagnostics_for_config_entry
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from botpsy_runtime.embedded import EmbeddedEngine
from botpsy_runtime.engine import GenerateEvent, GenerateRequest
from botpsy_runtime.errors import EngineUnavailableError
from custom_components.botpsy.const import CONF_API_KEY, CONF_URL, DOMAIN, ISSUE_WORKER_CRASHING

from .conftest import embedded_data, make_entry


async def test_setup_and_unload_stop_the_worker(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    assert embedded_entry.state is ConfigEntryState.LOADED
    engine = embedded_entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine)
    pid = engine.pid
    assert pid is not None
    assert await hass.config_entries.async_unload(embedded_entry.entry_id)
    assert embedded_entry.state is ConfigEntryState.NOT_LOADED
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_home_assistant_stop_stops_the_worker(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    engine = embedded_entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine)
    pid = engine.pid
    assert pid is not None
    await hass.async_stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize("content", [b"not a model", None])
async def test_unusable_model_file_is_a_setup_error(hass: HomeAssistant, tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    entry = make_entry(embedded_data(path))
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_ERROR
    assert entry.reason is not None and "cannot be used" in entry.reason


async def test_unreachable_server_retries(hass: HomeAssistant, socket_enabled: None) -> None:
    entry = make_entry({"engine": "remote", CONF_URL: "http://127.0.0.1:9"})
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_RETRY


async def test_remote_entry_loads(hass: HomeAssistant, remote_data: dict[str, Any]) -> None:
    entry = make_entry(remote_data)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.runtime_data.engine.supports_grammar
    assert entry.runtime_data.engine.chat_template is not None
    assert await hass.config_entries.async_unload(entry.entry_id)


async def _kill_during(engine: EmbeddedEngine) -> None:
    """Kill the worker while it generates (it starts again for each request)."""
    stream: AsyncIterator[GenerateEvent] = engine.generate(
        GenerateRequest(prompt="x", grammar="root ::= [a-z]{300,}", max_tokens=400)
    )
    with pytest.raises(EngineUnavailableError):
        async for _event in stream:
            assert engine.pid is not None
            os.kill(engine.pid, signal.SIGKILL)


async def test_worker_crashing_repeatedly_raises_a_repair(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    engine = embedded_entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine)
    registry = ir.async_get(hass)
    for _ in range(2):
        await _kill_during(engine)
    assert not [i for i in registry.issues.values() if i.domain == DOMAIN]
    await _kill_during(engine)
    issues = [i for i in registry.issues.values() if i.domain == DOMAIN]
    assert len(issues) == 1
    assert issues[0].translation_key == ISSUE_WORKER_CRASHING
    assert issues[0].translation_placeholders is not None
    assert "SIGKILL" in issues[0].translation_placeholders["reason"]


async def test_diagnostics_are_redacted(
    hass: HomeAssistant, remote_data: dict[str, Any], hass_client: ClientSessionGenerator
) -> None:
    assert await async_setup_component(hass, "diagnostics", {})
    entry = make_entry({**remote_data, CONF_API_KEY: "secret"})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert diagnostics["entry"]["data"][CONF_API_KEY] == "**REDACTED**"
    assert diagnostics["engine"]["type"] == "RemoteEngine"
    assert diagnostics["engine"]["health"]["ok"] is True
    assert diagnostics["model"]["chat_template"].endswith("characters>")
    assert "secret" not in str(diagnostics)
    assert await hass.config_entries.async_unload(entry.entry_id)
