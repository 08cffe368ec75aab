"""Sensors: read-only values with device class, state class and unit.

HA demands numbers from sensors with a numeric device class, state class or unit; a
fixture value that is not one keeps its text and loses those (logged). The fixture's
unit is pinned in the entity options, so HA does not convert the fixture's numbers to
the home's unit system.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
import logging
from typing import Any

from homeassistant.components.sensor import SensorDeviceClass, SensorEntity, SensorStateClass
from homeassistant.components.sensor.const import NON_NUMERIC_DEVICE_CLASSES, UNIT_CONVERTERS
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util import dt as dt_util

from . import runtime_for
from .entity import EvalEntity, as_number, resolve_attributes

_LOGGER = logging.getLogger(__name__)


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalSensor per fixture sensor, units pinned first."""
    runtime = runtime_for(hass, entry)
    fixtures = runtime.modelled("sensor")
    registry = er.async_get(hass)
    for fixture in fixtures:
        attributes = resolve_attributes(fixture.attributes)
        unit = attributes.get("native_unit_of_measurement", attributes.get("unit_of_measurement"))
        converter = UNIT_CONVERTERS.get(attributes.get("device_class"))
        if converter is not None and unit in converter.VALID_UNITS and registry.async_get(fixture.entity_id):
            registry.async_update_entity_options(fixture.entity_id, "sensor", {"unit_of_measurement": unit})
    async_add_entities([EvalSensor(runtime, fixture) for fixture in fixtures])


def _device_class(value: Any) -> SensorDeviceClass | None:
    try:
        return SensorDeviceClass(str(value)) if value is not None else None
    except ValueError:
        return None


class EvalSensor(EvalEntity, SensorEntity):
    """A sensor showing the fixture's value."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_native_value = None
        self._attr_native_unit_of_measurement = None
        self._attr_state_class = None
        self._attr_options = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key in ("native_unit_of_measurement", "unit_of_measurement"):
            if key in attributes:
                unit = attributes.pop(key)
                self._attr_native_unit_of_measurement = None if unit is None else str(unit)
        if "state_class" in attributes:
            state_class = attributes.pop("state_class")
            try:
                self._attr_state_class = None if state_class is None else SensorStateClass(str(state_class))
            except ValueError:
                self._attr_state_class = None
        if isinstance(options := attributes.pop("options", None), list):
            self._attr_options = [str(option) for option in options]
        device_class = _device_class(getattr(self, "_attr_device_class", None))
        self._attr_device_class = device_class
        if state is None:
            return True
        self._attr_native_value = self._value(state, device_class)
        return True

    def _value(self, state: str, device_class: SensorDeviceClass | None) -> Any:
        """The state as the value HA expects for this kind of sensor."""
        if device_class == SensorDeviceClass.DATE:
            if (parsed_date := dt_util.parse_date(state)) is not None:
                return parsed_date
        elif device_class == SensorDeviceClass.TIMESTAMP:
            if (parsed := dt_util.parse_datetime(state)) is not None:
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt_util.get_default_time_zone())
        elif device_class == SensorDeviceClass.ENUM:
            if self._attr_options and state in self._attr_options:
                return state
            self._attr_options = [*(self._attr_options or []), state]
            return state
        elif (number := as_number(state)) is not None:
            return int(number) if number.is_integer() and "." not in state else number
        numeric = (device_class is not None and device_class not in NON_NUMERIC_DEVICE_CLASSES) or (
            self._attr_state_class is not None or self._attr_native_unit_of_measurement is not None
        )
        if numeric or device_class is not None:
            _LOGGER.warning("%s: %r is no value for a %s sensor; shown as text", self.entity_id, state, device_class)
            self._attr_device_class = None
            self._attr_state_class = None
            self._attr_native_unit_of_measurement = None
        return state

    @property
    def native_value(self) -> str | int | float | date | datetime | None:
        """The fixture's value."""
        return self._attr_native_value  # type: ignore[return-value]
