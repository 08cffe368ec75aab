"""The integration tests' home (demo_home.yaml), loaded as every test home is.

Its devices are HA's `demo` ones, written in the evaluation fixture format and modelled by
the evaluation home's entities (scripts/evaluation/home_loader), whose services change
state as devices do. All are exposed to Assist but `NOT_EXPOSED`.
"""

from __future__ import annotations

from pathlib import Path

from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant

from scripts.evaluation.fixtures import load_home
from scripts.evaluation.home_loader import LoadedHome, async_load_home

HOME = Path(__file__).with_name("demo_home.yaml")
# What HA does not expose to Assist by default: the tests that need them expose them.
NOT_EXPOSED = ("weather", "calendar", "binary_sensor.basement_floor_wet")


async def async_setup_demo_home(hass: HomeAssistant) -> LoadedHome:
    """Load the home into the test's Home Assistant (its shopping list empty)."""
    Path(hass.config.path(".shopping_list.json")).unlink(missing_ok=True)
    home = await async_load_home(hass, load_home(HOME))
    for state in hass.states.async_all():
        if state.domain in NOT_EXPOSED or state.entity_id in NOT_EXPOSED:
            async_expose_entity(hass, "conversation", state.entity_id, False)
    return home
