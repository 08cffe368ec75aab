"""Weather: read-only condition (the state), temperature, humidity, wind, and a daily
forecast where the fixture has one (`forecast`: a list of HA forecast mappings).

The fixture's units are pinned in the entity options so its numbers are shown as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from homeassistant.components.weather import Forecast, WeatherEntity, WeatherEntityFeature
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
    """Current conditions, and the fixture's daily forecast if it has one."""

    _eval_feature_class = WeatherEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return WeatherEntityFeature.FORECAST_DAILY if attributes.get("forecast") else 0

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_condition = None
        self._eval_forecast: list[Forecast] = []
        for field in (*_UNITS.values(), *_VALUES.values()):
            setattr(self, field, None)

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key, field in _UNITS.items():
            if (unit := attributes.pop(key, None)) is not None:
                setattr(self, field, str(unit))
        for key, field in _VALUES.items():
            if key in attributes:
                setattr(self, field, as_number(attributes.pop(key)))
        if isinstance(forecast := attributes.pop("forecast", None), list):
            self._eval_forecast = [cast(Forecast, dict(day)) for day in forecast if isinstance(day, Mapping)]
        if state is not None:
            self._attr_condition = state
        return True

    async def async_forecast_daily(self) -> list[Forecast] | None:
        """The fixture's forecast."""
        return self._eval_forecast or None
