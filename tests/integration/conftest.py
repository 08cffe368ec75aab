"""Fixtures for tests that run the integration inside a real Home Assistant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.botpsy.const import (
    CONF_ENGINE,
    CONF_MODEL_PATH,
    CONF_N_BATCH,
    CONF_N_CTX,
    CONF_N_THREADS,
    CONF_PREFER_LOCAL_INTENTS,
    CONF_URL,
    DEFAULT_SUBENTRIES,
    DOMAIN,
    ENGINE_EMBEDDED,
    ENGINE_REMOTE,
)

from .demo_home import async_setup_demo_home


@pytest.fixture(autouse=True)
async def auto_enable_custom_integrations(hass: HomeAssistant, enable_custom_integrations: None) -> None:
    """Let HA load custom_components/botpsy, with the core it needs (exposed entities)."""
    assert await async_setup_component(hass, "homeassistant", {})


def embedded_data(model: Path) -> dict[str, Any]:
    return {
        CONF_ENGINE: ENGINE_EMBEDDED,
        CONF_MODEL_PATH: str(model),
        CONF_N_CTX: 1024,
        CONF_N_THREADS: 2,
        CONF_N_BATCH: 64,
    }


def make_entry(data: dict[str, Any], title: str = "tiny", **conversation: Any) -> MockConfigEntry:
    """An entry with the default agents; `conversation`: options of its conversation agent."""
    return MockConfigEntry(
        domain=DOMAIN,
        title=title,
        data=data,
        subentries_data=[
            {
                **subentry,
                "data": {**subentry["data"], **conversation}
                if subentry["subentry_type"] == "conversation"
                else subentry["data"],
                "unique_id": None,
            }
            for subentry in DEFAULT_SUBENTRIES
        ],
    )


@pytest.fixture
async def embedded_entry(hass: HomeAssistant, tiny_model: Path) -> MockConfigEntry:
    """A BotPsy entry on the embedded engine with the tiny transformer, set up."""
    entry = make_entry(embedded_data(tiny_model))
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry


@pytest.fixture
def remote_data(llama_server: str, socket_enabled: None) -> dict[str, Any]:
    return {CONF_ENGINE: ENGINE_REMOTE, CONF_URL: llama_server}


@pytest.fixture
async def agent(hass: HomeAssistant, tiny_model: Path) -> MockConfigEntry:
    """A BotPsy agent on the realistic demo home (swap its engine with `scripted.script`)."""
    return await _demo_agent(hass, tiny_model)


@pytest.fixture
async def model_agent(hass: HomeAssistant, tiny_model: Path) -> MockConfigEntry:
    """The same agent asking its model for every request, those HA's own sentences read
    exactly too: for what the model's path does (prompts, grammars, rounds)."""
    return await _demo_agent(hass, tiny_model, **{CONF_PREFER_LOCAL_INTENTS: False})


async def _demo_agent(hass: HomeAssistant, tiny_model: Path, **conversation: Any) -> MockConfigEntry:
    await async_setup_demo_home(hass)
    # The tiny models spell words byte by byte: the demo home's prompt needs a large context.
    entry = make_entry({**embedded_data(tiny_model), CONF_N_CTX: 32768, CONF_N_BATCH: 512}, **conversation)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry
