"""AI Task on real llama.cpp (tiny model) and llama-server: the structure is enforced by a grammar."""

from __future__ import annotations

from typing import Any

from homeassistant.components import ai_task
from homeassistant.core import HomeAssistant
from homeassistant.helpers import selector
import probatio
from pytest_homeassistant_custom_component.common import MockConfigEntry

from .conftest import make_entry

ENTITY = "ai_task.botpsy_ai_task"
STRUCTURE = probatio.Schema(
    {
        probatio.Required("room"): selector.SelectSelector(selector.SelectSelectorConfig(options=["kitchen", "hall"])),
        probatio.Required("count"): selector.NumberSelector(selector.NumberSelectorConfig(min=0, max=9, step=1)),
        probatio.Required("urgent"): selector.BooleanSelector(),
    }
)


async def generate(hass: HomeAssistant, structure: probatio.Schema | None) -> Any:
    result = await ai_task.async_generate_data(
        hass, task_name="test", entity_id=ENTITY, instructions="Describe the kitchen.", structure=structure
    )
    return result.data


def assert_matches_structure(data: Any) -> None:
    assert isinstance(data, dict)
    assert set(data) == {"room", "count", "urgent"}
    assert data["room"] in ("kitchen", "hall")
    assert isinstance(data["count"], (int, float)) and 0 <= data["count"] <= 9
    assert isinstance(data["urgent"], bool)


async def test_structured_data_from_the_embedded_engine(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    assert hass.states.get(ENTITY) is not None
    for _ in range(3):
        assert_matches_structure(await generate(hass, STRUCTURE))


async def test_text_from_the_embedded_engine(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    assert isinstance(await generate(hass, None), str)


async def test_structured_data_from_llama_server(hass: HomeAssistant, remote_data: dict[str, Any]) -> None:
    entry = make_entry(remote_data)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert_matches_structure(await generate(hass, STRUCTURE))
    assert await hass.config_entries.async_unload(entry.entry_id)
