"""Numbers (settable values: volume limits, timers, levels): set_value within min/max/step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.number import NumberEntity, NumberMode
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_number


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalNumber per fixture number entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalNumber(runtime, fixture) for fixture in runtime.modelled("number")])


class EvalNumber(EvalEntity, NumberEntity):
    """A settable number (0-100 by 1 unless the fixture says otherwise)."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_native_value = None
        self._attr_native_min_value = 0
        self._attr_native_max_value = 100
        self._attr_native_step = 1
        self._attr_native_unit_of_measurement = None
        self._attr_mode = NumberMode.AUTO

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key, field in (
            ("min", "_attr_native_min_value"),
            ("max", "_attr_native_max_value"),
            ("step", "_attr_native_step"),
        ):
            if (value := as_number(attributes.pop(key, None))) is not None:
                setattr(self, field, value)
        for key in ("native_unit_of_measurement", "unit_of_measurement"):
            if key in attributes:
                unit = attributes.pop(key)
                self._attr_native_unit_of_measurement = None if unit is None else str(unit)
        if (mode := attributes.pop("mode", None)) in set(NumberMode):
            self._attr_mode = NumberMode(mode)
        if state is None:
            return True
        if (value := as_number(state)) is None:
            return False
        self._attr_native_value = value
        return True

    async def async_set_native_value(self, value: float) -> None:
        """Set the value."""
        self._attr_native_value = value
        self.eval_changed()
