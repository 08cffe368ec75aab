"""Sirens: on/off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.siren import SirenEntity
from homeassistant.components.siren.const import SirenEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_bool


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalSiren per fixture siren entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalSiren(runtime, fixture) for fixture in runtime.modelled("siren")])


class EvalSiren(EvalEntity, SirenEntity):
    """A siren; a missing state means off."""

    _eval_feature_class = SirenEntityFeature
    _eval_base_features = int(SirenEntityFeature.TURN_ON | SirenEntityFeature.TURN_OFF)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_is_on = False

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if state is None:
            return True
        if (on := as_bool(state)) is None:
            return False
        self._attr_is_on = on
        return True

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Sound."""
        self._attr_is_on = True
        self.eval_changed()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Silence."""
        self._attr_is_on = False
        self.eval_changed()
