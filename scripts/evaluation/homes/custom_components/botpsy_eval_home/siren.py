"""Sirens: on/off."""

from __future__ import annotations

from homeassistant.components.siren import SirenEntity
from homeassistant.components.siren.const import SirenEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalOnOffEntity


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalSiren per fixture siren entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalSiren(runtime, fixture) for fixture in runtime.modelled("siren")])


class EvalSiren(EvalOnOffEntity, SirenEntity):
    """A siren; a missing state means off."""

    _eval_feature_class = SirenEntityFeature
    _eval_base_features = int(SirenEntityFeature.TURN_ON | SirenEntityFeature.TURN_OFF)
