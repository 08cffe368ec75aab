"""Humidifiers and dehumidifiers: on/off, target humidity, modes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.humidifier import HumidifierEntity
from homeassistant.components.humidifier.const import HumidifierEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalOnOffEntity, as_number


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalHumidifier per fixture humidifier entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalHumidifier(runtime, fixture) for fixture in runtime.modelled("humidifier")])


class EvalHumidifier(EvalOnOffEntity, HumidifierEntity):
    """A humidifier; a missing state means off."""

    _eval_feature_class = HumidifierEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(HumidifierEntityFeature.MODES) if attributes.get("available_modes") else 0

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        super()._eval_defaults(attributes)
        self._attr_target_humidity = 50
        self._attr_current_humidity = None
        self._attr_mode = None
        self._attr_available_modes = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key, field in (
            ("humidity", "_attr_target_humidity"),
            ("target_humidity", "_attr_target_humidity"),
            ("current_humidity", "_attr_current_humidity"),
            ("min_humidity", "_attr_min_humidity"),
            ("max_humidity", "_attr_max_humidity"),
        ):
            if (value := as_number(attributes.pop(key, None))) is not None:
                setattr(self, field, value)
        if isinstance(modes := attributes.pop("available_modes", None), list):
            self._attr_available_modes = [str(mode) for mode in modes]
        if "mode" in attributes:
            mode = attributes.pop("mode")
            self._attr_mode = None if mode is None else str(mode)
        return super()._eval_apply(state, attributes, initial)

    async def async_set_humidity(self, humidity: int) -> None:
        """Target humidity."""
        self._attr_target_humidity = humidity
        self.eval_changed()

    async def async_set_mode(self, mode: str) -> None:
        """Mode (eco, boost...)."""
        self._attr_mode = mode
        self.eval_changed()
