"""Binary sensors: read-only on/off with a device class (door, motion, lock...)."""

from __future__ import annotations

from homeassistant.components.binary_sensor import BinarySensorEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalOnOffState


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalBinarySensor per fixture binary sensor."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalBinarySensor(runtime, fixture) for fixture in runtime.modelled("binary_sensor")])


class EvalBinarySensor(EvalOnOffState, BinarySensorEntity):
    """A binary sensor; a missing state means off."""
