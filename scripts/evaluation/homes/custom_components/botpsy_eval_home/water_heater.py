"""Water heaters: operation mode (the state), target temperature, away mode, on/off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.water_heater import (
    STATE_ECO,
    STATE_ELECTRIC,
    STATE_GAS,
    STATE_HEAT_PUMP,
    STATE_HIGH_DEMAND,
    STATE_PERFORMANCE,
    WaterHeaterEntity,
)
from homeassistant.components.water_heater.const import WaterHeaterEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import ATTR_TEMPERATURE, STATE_OFF
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_bool, as_number

_F = WaterHeaterEntityFeature
DEFAULT_OPERATIONS = [
    STATE_ECO,
    STATE_ELECTRIC,
    STATE_GAS,
    STATE_HEAT_PUMP,
    STATE_HIGH_DEMAND,
    STATE_PERFORMANCE,
    STATE_OFF,
]


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalWaterHeater per fixture water_heater entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalWaterHeater(runtime, fixture) for fixture in runtime.modelled("water_heater")])


class EvalWaterHeater(EvalEntity, WaterHeaterEntity):
    """A water heater; temperatures in the fixture's or the home's unit."""

    _eval_feature_class = WaterHeaterEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(_F.TARGET_TEMPERATURE | _F.OPERATION_MODE | _F.AWAY_MODE | _F.ON_OFF)

    @property
    def temperature_unit(self) -> str:
        """The fixture's unit, else the home's."""
        return self._unit or self.hass.config.units.temperature_unit

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._unit: str | None = None
        self._attr_operation_list = list(DEFAULT_OPERATIONS)
        self._attr_current_operation = STATE_ECO
        self._last_operation = STATE_ECO
        self._attr_target_temperature = None
        self._attr_current_temperature = None
        self._attr_is_away_mode_on = False
        self._attr_min_temp = 0
        self._attr_max_temp = 100

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key in ("temperature_unit", "unit_of_measurement"):
            if (unit := attributes.pop(key, None)) is not None:
                self._unit = str(unit)
        if isinstance(operations := attributes.pop("operation_list", None), list):
            self._attr_operation_list = [str(operation) for operation in operations]
        for key, field in (
            (ATTR_TEMPERATURE, "_attr_target_temperature"),
            ("current_temperature", "_attr_current_temperature"),
            ("min_temp", "_attr_min_temp"),
            ("max_temp", "_attr_max_temp"),
        ):
            if (value := as_number(attributes.pop(key, None))) is not None:
                setattr(self, field, value)
        if (away := as_bool(attributes.pop("away_mode", None))) is not None:
            self._attr_is_away_mode_on = away
        if (operation := attributes.pop("operation_mode", None)) is not None and state is None:
            state = str(operation)
        if state is None:
            return True
        self._set_operation(state)
        return True

    def _set_operation(self, operation: str) -> None:
        if self._attr_operation_list is not None and operation not in self._attr_operation_list:
            self._attr_operation_list = [*self._attr_operation_list, operation]
        self._attr_current_operation = operation
        if operation != STATE_OFF:
            self._last_operation = operation

    async def async_set_temperature(self, **kwargs: Any) -> None:
        """Target temperature."""
        if (temperature := kwargs.get(ATTR_TEMPERATURE)) is not None:
            self._attr_target_temperature = temperature
        self.eval_changed()

    async def async_set_operation_mode(self, operation_mode: str) -> None:
        """Operation mode."""
        self._set_operation(operation_mode)
        self.eval_changed()

    async def async_turn_away_mode_on(self) -> None:
        """Away mode on."""
        self._attr_is_away_mode_on = True
        self.eval_changed()

    async def async_turn_away_mode_off(self) -> None:
        """Away mode off."""
        self._attr_is_away_mode_on = False
        self.eval_changed()

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Back to the last operation mode."""
        self._set_operation(self._last_operation)
        self.eval_changed()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Off."""
        self._set_operation(STATE_OFF)
        self.eval_changed()
