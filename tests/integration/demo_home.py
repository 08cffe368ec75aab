"""A realistic home of real HA entities: HA's demo devices plus scenes, scripts and a to-do list.

Lights, switches, fans, covers, valves, locks, thermostats, media players, vacuums,
humidifiers, water heaters and sensors come from HA's `demo` integration, whose services
change state as devices do. Locks, valves and scripts are exposed explicitly (HA does not expose
them, nor scripts, to assistants by default).
"""

from __future__ import annotations

from pathlib import Path

from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

SCENES = [
    {
        "name": "Movie night",
        "entities": {"light.ceiling_lights": "off", "light.bed_light": {"state": "on", "brightness": 40}},
    },
    {"name": "Good morning", "entities": {"light.kitchen_lights": "on", "cover.kitchen_window": "open"}},
]
SCRIPTS = {
    "goodnight": {"alias": "Goodnight", "sequence": [{"action": "light.turn_off", "target": {"entity_id": "all"}}]}
}


async def async_setup_demo_home(hass: HomeAssistant) -> None:
    # The shopping list persists in HA's shared test config folder: start empty.
    Path(hass.config.path(".shopping_list.json")).unlink(missing_ok=True)
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "demo", {})
    assert await async_setup_component(hass, "scene", {"scene": SCENES})
    assert await async_setup_component(hass, "script", {"script": SCRIPTS})
    MockConfigEntry(domain="shopping_list").add_to_hass(hass)
    assert await async_setup_component(hass, "shopping_list", {})
    await hass.async_block_till_done()
    for state in hass.states.async_all(("lock", "valve", "script")):
        async_expose_entity(hass, "conversation", state.entity_id, True)
