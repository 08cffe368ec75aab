"""Weather: read-only condition (the state), temperature, humidity, wind.

The fixture's units are pinned in the entity options so its numbers are shown as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.weather import WeatherEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_number, resolve_attributes

_UNITS = {
    "temperature_unit": "_attr_native_temperature_unit",
    "pressure_unit": "_attr_native_pressure_unit",
    "wind_speed_unit": "_attr_native_wind_speed_unit",
    "visibility_unit": "_attr_native_visibility_unit",
    "precipitation_unit": "_attr_native_precipitation_unit",
}
_VALUES = {
    "temperature": "_attr_native_temperature",
    "apparent_temperature": "_attr_native_apparent_temperature",
    "dew_point": "_attr_native_dew_point",
    "humidity": "_attr_humidity",
    "pressure": "_attr_native_pressure",
    "wind_speed": "_attr_native_wind_speed",
    "wind_gust_speed": "_attr_native_wind_gust_speed",
    "wind_bearing": "_attr_wind_bearing",
    "visibility": "_attr_native_visibility",
    "cloud_coverage": "_attr_cloud_coverage",
    "uv_index": "_attr_uv_index",
    "ozone": "_attr_ozone",
}


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalWeather per fixture weather entity, units pinned first."""
    runtime = runtime_for(hass, entry)
    fixtures = runtime.modelled("weather")
    registry = er.async_get(hass)
    for fixture in fixtures:
        units = {key: str(value) for key, value in resolve_attributes(fixture.attributes).items() if key in _UNITS}
        if units and registry.async_get(fixture.entity_id):
            registry.async_update_entity_options(fixture.entity_id, "weather", units)
    async_add_entities([EvalWeather(runtime, fixture) for fixture in fixtures])


class EvalWeather(EvalEntity, WeatherEntity):
    """Current conditions only (no forecasts)."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_condition = None
        for field in (*_UNITS.values(), *_VALUES.values()):
            setattr(self, field, None)

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key, field in _UNITS.items():
            if (unit := attributes.pop(key, None)) is not None:
                setattr(self, field, str(unit))
        for key, field in _VALUES.items():
            if key in attributes:
                setattr(self, field, as_number(attributes.pop(key)))
        if state is not None:
            self._attr_condition = state
        return True
