"""Test homes for BotPsy's evaluation harness, as a real Home Assistant integration.

Every fixture entity becomes an entity of HA's own base class (LightEntity, CoverEntity...)
with the fixture's id, name, device, area and aliases, so HA's services and intents act on
it as on a real device. The home loader (scripts/evaluation/home_loader.py) passes the
parsed fixture in `hass.data[DOMAIN][PENDING]` and sets up one config entry per home.
"""

from __future__ import annotations

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant

from .const import DOMAIN, PENDING
from .home import HomeRuntime, async_fill_registries


async def async_setup_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
    """Registries first (ids, areas, devices), then one platform per domain present."""
    data = hass.data.setdefault(DOMAIN, {})
    fixture = data.pop(PENDING)
    runtime = HomeRuntime(fixture=fixture, entry=entry)
    data[entry.entry_id] = runtime
    async_fill_registries(hass, runtime)
    platforms = sorted({entity.domain for entity in fixture.entities if runtime.owns(entity)})
    await hass.config_entries.async_forward_entry_setups(entry, platforms)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
    """Unload the platforms this entry set up."""
    runtime: HomeRuntime = hass.data[DOMAIN][entry.entry_id]
    platforms = sorted({entity.domain for entity in runtime.fixture.entities if runtime.owns(entity)})
    unloaded = await hass.config_entries.async_unload_platforms(entry, platforms)
    if unloaded:
        hass.data[DOMAIN].pop(entry.entry_id)
    return unloaded


def runtime_for(hass: HomeAssistant, entry: ConfigEntry) -> HomeRuntime:
    """The home of a config entry (for the platforms)."""
    runtime: HomeRuntime = hass.data[DOMAIN][entry.entry_id]
    return runtime
