"""Every step and error of the config flow, the reconfigure flow and the agent subentry flow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from homeassistant import config_entries
from homeassistant.const import CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from botpsy_runtime import download
from custom_components.botpsy.const import (
    CONF_API_KEY,
    CONF_ENGINE,
    CONF_HF_FILE,
    CONF_HF_REPO,
    CONF_MAX_TOKENS,
    CONF_MODEL,
    CONF_MODEL_PATH,
    CONF_N_THREADS,
    CONF_PROMPT,
    CONF_TEMPERATURE,
    CONF_URL,
    DOMAIN,
    ENGINE_EMBEDDED,
    ENGINE_REMOTE,
)
from scripts.testing.model_host import ModelHost
from scripts.testing.scripted_server import ScriptedServer

from .conftest import embedded_data, make_entry


async def start_menu(hass: HomeAssistant, choice: str) -> dict[str, Any]:
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_USER})
    assert result["type"] is FlowResultType.MENU
    assert result["menu_options"] == [ENGINE_EMBEDDED, ENGINE_REMOTE]
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"next_step_id": choice})
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == choice
    return dict(result)


async def test_embedded_with_model_file(hass: HomeAssistant, tiny_model: Path) -> None:
    form = await start_menu(hass, ENGINE_EMBEDDED)
    result = await hass.config_entries.flow.async_configure(
        form["flow_id"], {CONF_MODEL_PATH: str(tiny_model), CONF_N_THREADS: 2.0}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == tiny_model.name
    assert result["data"][CONF_ENGINE] == ENGINE_EMBEDDED
    assert result["data"][CONF_MODEL_PATH] == str(tiny_model)
    assert result["data"][CONF_N_THREADS] == 2
    entry = result["result"]
    assert [(s.subentry_type, s.title) for s in entry.subentries.values()] == [
        ("conversation", "BotPsy"),
        ("ai_task_data", "BotPsy AI Task"),
    ]
    await hass.async_block_till_done()
    assert entry.state is config_entries.ConfigEntryState.LOADED
    assert hass.states.get("conversation.botpsy") is not None
    assert await hass.config_entries.async_unload(entry.entry_id)


@pytest.mark.parametrize(
    ("content", "error"),
    [(None, "model_not_found"), (b"<html>404</html>", "model_invalid"), (b"GGUF\x03\x00\x00\x00", "model_invalid")],
)
async def test_embedded_bad_model_file(hass: HomeAssistant, tmp_path: Path, content: bytes | None, error: str) -> None:
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    form = await start_menu(hass, ENGINE_EMBEDDED)
    result = await hass.config_entries.flow.async_configure(form["flow_id"], {CONF_MODEL_PATH: str(path)})
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_MODEL_PATH: error}
    assert not hass.config_entries.async_entries(DOMAIN)


async def test_embedded_without_any_model(hass: HomeAssistant) -> None:
    form = await start_menu(hass, ENGINE_EMBEDDED)
    result = await hass.config_entries.flow.async_configure(form["flow_id"], {CONF_HF_REPO: "", CONF_HF_FILE: ""})
    assert result["errors"] == {"base": "model_missing"}


async def test_embedded_same_file_twice(hass: HomeAssistant, embedded_entry: MockConfigEntry, tiny_model: Path) -> None:
    form = await start_menu(hass, ENGINE_EMBEDDED)
    result = await hass.config_entries.flow.async_configure(form["flow_id"], {CONF_MODEL_PATH: str(tiny_model)})
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


@pytest.fixture
async def hub(
    hass: HomeAssistant, tiny_model: Path, socket_enabled: None, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ModelHost]:
    """A local stand-in for the hub serving the tiny model as org/repo/model.gguf."""
    async with ModelHost(tiny_model.read_bytes()) as host:
        monkeypatch.setattr(download, "HF_ENDPOINT", host.url)
        yield host


async def test_embedded_download(hass: HomeAssistant, hub: ModelHost, tiny_model: Path) -> None:
    form = await start_menu(hass, ENGINE_EMBEDDED)
    result = await hass.config_entries.flow.async_configure(
        form["flow_id"], {CONF_HF_REPO: "org/repo", CONF_HF_FILE: "model.gguf"}
    )
    assert result["type"] is FlowResultType.SHOW_PROGRESS
    assert result["progress_action"] == "download"
    await hass.async_block_till_done(wait_background_tasks=True)
    result = await hass.config_entries.flow.async_configure(result["flow_id"])
    assert result["type"] is FlowResultType.CREATE_ENTRY
    dest = Path(hass.config.path("botpsy/models/model.gguf"))
    assert result["data"][CONF_MODEL_PATH] == str(dest)
    assert dest.read_bytes() == tiny_model.read_bytes()
    await hass.async_block_till_done()
    assert result["result"].state is config_entries.ConfigEntryState.LOADED
    assert await hass.config_entries.async_unload(result["result"].entry_id)


async def test_embedded_download_fails(hass: HomeAssistant, hub: ModelHost) -> None:
    form = await start_menu(hass, ENGINE_EMBEDDED)
    result = await hass.config_entries.flow.async_configure(
        form["flow_id"], {CONF_HF_REPO: "org/repo", CONF_HF_FILE: "missing.gguf"}
    )
    assert result["type"] is FlowResultType.SHOW_PROGRESS
    await hass.async_block_till_done(wait_background_tasks=True)
    result = await hass.config_entries.flow.async_configure(result["flow_id"])
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "download_failed"
    assert "No such file" in result["description_placeholders"]["error"]
    assert not Path(hass.config.path("botpsy/models/missing.gguf")).exists()


async def test_remote_server(hass: HomeAssistant, remote_data: dict[str, Any]) -> None:
    form = await start_menu(hass, ENGINE_REMOTE)
    result = await hass.config_entries.flow.async_configure(form["flow_id"], {CONF_URL: remote_data[CONF_URL] + "/v1"})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {CONF_ENGINE: ENGINE_REMOTE, CONF_URL: remote_data[CONF_URL] + "/v1"}
    await hass.async_block_till_done()
    assert result["result"].state is config_entries.ConfigEntryState.LOADED
    assert await hass.config_entries.async_unload(result["result"].entry_id)


async def test_remote_errors(hass: HomeAssistant, remote_data: dict[str, Any]) -> None:
    form = await start_menu(hass, ENGINE_REMOTE)
    result = await hass.config_entries.flow.async_configure(form["flow_id"], {CONF_URL: "http://127.0.0.1:9"})
    assert result["errors"] == {"base": "cannot_connect"}
    result = await hass.config_entries.flow.async_configure(
        form["flow_id"], {CONF_URL: remote_data[CONF_URL], CONF_MODEL: "no-such-model"}
    )
    assert result["errors"] == {"base": "no_model"}


async def test_remote_refused_key_and_not_openai(hass: HomeAssistant, socket_enabled: None) -> None:
    async with ScriptedServer(native=False, api_key="other") as server:
        form = await start_menu(hass, ENGINE_REMOTE)
        url = server.url
        result = await hass.config_entries.flow.async_configure(form["flow_id"], {CONF_URL: url, CONF_API_KEY: "k"})
        assert result["errors"] == {"base": "invalid_auth"}
        server.api_key = None  # no key asked for, and no OpenAI API behind it
        server.statuses["/v1/models"] = 404
        result = await hass.config_entries.flow.async_configure(form["flow_id"], {CONF_URL: url})
        assert result["errors"] == {"base": "not_openai_compatible"}


async def test_reconfigure_embedded(hass: HomeAssistant, embedded_entry: MockConfigEntry, tmp_path: Path) -> None:
    result = await embedded_entry.start_reconfigure_flow(hass)
    assert result["type"] is FlowResultType.FORM
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"nope")
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {CONF_MODEL_PATH: str(bad)})
    assert result["errors"] == {CONF_MODEL_PATH: "model_invalid"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_MODEL_PATH: embedded_entry.data[CONF_MODEL_PATH], CONF_N_THREADS: 1}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert embedded_entry.data[CONF_N_THREADS] == 1
    assert embedded_entry.state is config_entries.ConfigEntryState.LOADED
    engine = embedded_entry.runtime_data.engine
    assert engine.options.n_threads == 1  # type: ignore[attr-defined]


async def test_add_and_reconfigure_agent(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    result = await hass.config_entries.subentries.async_init(
        (embedded_entry.entry_id, "conversation"), context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_NAME: "Kitchen helper", CONF_PROMPT: "Be brief.", CONF_TEMPERATURE: 0.1, CONF_MAX_TOKENS: 64.0},
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    state = hass.states.get("conversation.kitchen_helper")
    assert state is not None
    subentry = next(s for s in embedded_entry.subentries.values() if s.title == "Kitchen helper")
    assert subentry.data[CONF_MAX_TOKENS] == 64

    result = await embedded_entry.start_subentry_reconfigure_flow(hass, subentry.subentry_id)
    assert result["type"] is FlowResultType.FORM
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_PROMPT: "Be very brief.", CONF_TEMPERATURE: 0.3, CONF_MAX_TOKENS: 32}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert embedded_entry.subentries[subentry.subentry_id].data[CONF_PROMPT] == "Be very brief."


async def test_two_entries_share_a_model_loaded_once(hass: HomeAssistant, tiny_model: Path) -> None:
    first, second = make_entry(embedded_data(tiny_model)), make_entry(embedded_data(tiny_model), "second")
    for entry in (first, second):
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
    engine = first.runtime_data.engine
    assert second.runtime_data.engine is engine
    pid = engine.pid  # type: ignore[attr-defined]
    assert pid is not None
    assert await hass.config_entries.async_unload(first.entry_id)
    assert engine.pid == pid  # type: ignore[attr-defined]
    assert await hass.config_entries.async_unload(second.entry_id)
    assert engine.pid is None  # type: ignore[attr-defined]


async def test_refused_api_key_asks_for_a_new_one(hass: HomeAssistant, socket_enabled: None) -> None:
    """A server that stops accepting the key: setup fails as an auth failure, and the
    reauthentication flow takes a new key, checks it and reloads the entry."""

    async with ScriptedServer(native=False, models=["served"], api_key="new") as server:
        entry = make_entry({CONF_ENGINE: ENGINE_REMOTE, CONF_URL: server.url, CONF_API_KEY: "old"})
        entry.add_to_hass(hass)
        assert not await hass.config_entries.async_setup(entry.entry_id)
        assert entry.state is config_entries.ConfigEntryState.SETUP_ERROR
        [flow] = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
        assert flow["context"]["source"] == config_entries.SOURCE_REAUTH
        result = await hass.config_entries.flow.async_configure(flow["flow_id"], {CONF_API_KEY: "wrong"})
        assert result["errors"] == {"base": "invalid_auth"}
        result = await hass.config_entries.flow.async_configure(flow["flow_id"], {CONF_API_KEY: "new"})
        assert result["type"] is FlowResultType.ABORT and result["reason"] == "reauth_successful"
        await hass.async_block_till_done()
        assert entry.data[CONF_API_KEY] == "new"
        assert entry.state is config_entries.ConfigEntryState.LOADED
        await hass.config_entries.async_unload(entry.entry_id)
