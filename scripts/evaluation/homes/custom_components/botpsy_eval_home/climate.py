"""Thermostats: HVAC modes, target temperature (single or range), fan/preset/swing modes.

Temperatures are in the fixture's unit when it names one, else in the home's unit (the
fixture's numbers are shown as written). Fixtures give no limits and the datasets set
values such as 1 or 50 degrees, so the settable range is wide (0-100) unless given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.climate import ClimateEntity
from homeassistant.components.climate.const import (
    ATTR_HVAC_MODE,
    ATTR_TARGET_TEMP_HIGH,
    ATTR_TARGET_TEMP_LOW,
    ClimateEntityFeature,
    HVACMode,
)
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import ATTR_TEMPERATURE
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_number

DEFAULT_HVAC_MODES = (HVACMode.OFF, HVACMode.HEAT, HVACMode.COOL, HVACMode.HEAT_COOL, HVACMode.AUTO)


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalClimate per fixture climate entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalClimate(runtime, fixture) for fixture in runtime.modelled("climate")])


def _modes(raw: Any) -> list[str] | None:
    return [str(item) for item in raw] if isinstance(raw, list | tuple) else None


class EvalClimate(EvalEntity, ClimateEntity):
    """A thermostat that reaches its settings at once."""

    _eval_feature_class = ClimateEntityFeature
    _eval_base_features = int(ClimateEntityFeature.TURN_ON | ClimateEntityFeature.TURN_OFF)

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        features = ClimateEntityFeature.TARGET_TEMPERATURE
        if ATTR_TARGET_TEMP_LOW in attributes or ATTR_TARGET_TEMP_HIGH in attributes:
            features |= ClimateEntityFeature.TARGET_TEMPERATURE_RANGE
        for key, flag in (
            ("fan_modes", ClimateEntityFeature.FAN_MODE),
            ("preset_modes", ClimateEntityFeature.PRESET_MODE),
            ("swing_modes", ClimateEntityFeature.SWING_MODE),
            ("target_humidity", ClimateEntityFeature.TARGET_HUMIDITY),
        ):
            if key in attributes:
                features |= flag
        return int(features)

    @property
    def temperature_unit(self) -> str:
        """The fixture's unit, else the home's (no conversion of the fixture's numbers)."""
        return self._unit or self.hass.config.units.temperature_unit

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._unit: str | None = None
        self._attr_hvac_modes = list(DEFAULT_HVAC_MODES)
        self._attr_hvac_mode = HVACMode.OFF
        self._last_on_mode = HVACMode.HEAT
        self._attr_hvac_action = None
        self._attr_current_temperature = None
        self._attr_target_temperature = None
        self._attr_target_temperature_low = None
        self._attr_target_temperature_high = None
        self._attr_target_temperature_step = None
        self._attr_min_temp = 0
        self._attr_max_temp = 100
        self._attr_fan_mode = None
        self._attr_fan_modes = None
        self._attr_preset_mode = None
        self._attr_preset_modes = None
        self._attr_swing_mode = None
        self._attr_swing_modes = None
        self._attr_current_humidity = None
        self._attr_target_humidity = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key in ("temperature_unit", "unit_of_measurement"):
            if (unit := attributes.pop(key, None)) is not None:
                self._unit = str(unit)
        if (modes := _modes(attributes.pop("hvac_modes", None))) is not None:
            self._attr_hvac_modes = [HVACMode(mode) for mode in modes if mode in set(HVACMode)]
        numbers = {
            "current_temperature": "_attr_current_temperature",
            ATTR_TEMPERATURE: "_attr_target_temperature",
            "target_temperature": "_attr_target_temperature",
            ATTR_TARGET_TEMP_LOW: "_attr_target_temperature_low",
            ATTR_TARGET_TEMP_HIGH: "_attr_target_temperature_high",
            "target_temp_step": "_attr_target_temperature_step",
            "min_temp": "_attr_min_temp",
            "max_temp": "_attr_max_temp",
            "current_humidity": "_attr_current_humidity",
            "humidity": "_attr_target_humidity",
            "target_humidity": "_attr_target_humidity",
        }
        for key, field in numbers.items():
            if key in attributes:
                setattr(self, field, as_number(attributes.pop(key)))
        for kind in ("fan", "preset", "swing"):
            if (options := _modes(attributes.pop(f"{kind}_modes", None))) is not None:
                setattr(self, f"_attr_{kind}_modes", options)
            if f"{kind}_mode" in attributes:
                value = attributes.pop(f"{kind}_mode")
                setattr(self, f"_attr_{kind}_mode", None if value is None else str(value))
        if "hvac_action" in attributes:
            action = attributes.pop("hvac_action")
            self._attr_hvac_action = None if action is None else action
        if initial and self._attr_target_temperature is None and self._attr_current_temperature is not None:
            self._attr_target_temperature = self._attr_current_temperature
        if state is None:
            return True
        if state not in set(HVACMode):
            return False
        self._set_mode(HVACMode(state))
        return True

    def _set_mode(self, mode: HVACMode) -> None:
        if mode not in self._attr_hvac_modes:
            self._attr_hvac_modes = [*self._attr_hvac_modes, mode]
        self._attr_hvac_mode = mode
        if mode != HVACMode.OFF:
            self._last_on_mode = mode

    async def async_set_temperature(self, **kwargs: Any) -> None:
        """Target temperature (or range), optionally with a mode."""
        if (mode := kwargs.get(ATTR_HVAC_MODE)) is not None:
            self._set_mode(HVACMode(mode))
        if (temperature := kwargs.get(ATTR_TEMPERATURE)) is not None:
            self._attr_target_temperature = temperature
        if (low := kwargs.get(ATTR_TARGET_TEMP_LOW)) is not None:
            self._attr_target_temperature_low = low
        if (high := kwargs.get(ATTR_TARGET_TEMP_HIGH)) is not None:
            self._attr_target_temperature_high = high
        self.eval_changed()

    async def async_set_hvac_mode(self, hvac_mode: HVACMode) -> None:
        """Heat, cool, off..."""
        self._set_mode(HVACMode(hvac_mode))
        self.eval_changed()

    async def async_turn_on(self) -> None:
        """Back to the last mode that was not off."""
        self._set_mode(self._last_on_mode)
        self.eval_changed()

    async def async_turn_off(self) -> None:
        """Off."""
        self._set_mode(HVACMode.OFF)
        self.eval_changed()

    async def async_set_fan_mode(self, fan_mode: str) -> None:
        """Fan mode."""
        self._attr_fan_mode = fan_mode
        self.eval_changed()

    async def async_set_preset_mode(self, preset_mode: str) -> None:
        """Preset (eco, away...)."""
        self._attr_preset_mode = preset_mode
        self.eval_changed()

    async def async_set_swing_mode(self, swing_mode: str) -> None:
        """Swing mode."""
        self._attr_swing_mode = swing_mode
        self.eval_changed()

    async def async_set_humidity(self, humidity: int) -> None:
        """Target humidity."""
        self._attr_target_humidity = humidity
        self.eval_changed()
