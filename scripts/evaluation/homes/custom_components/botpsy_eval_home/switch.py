"""Switches (plugs, relays): on and off."""

from __future__ import annotations

from homeassistant.components.switch import SwitchEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalOnOffEntity


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalSwitch per fixture switch."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalSwitch(runtime, fixture) for fixture in runtime.modelled("switch")])


class EvalSwitch(EvalOnOffEntity, SwitchEntity):
    """A switch; a missing state means off."""
