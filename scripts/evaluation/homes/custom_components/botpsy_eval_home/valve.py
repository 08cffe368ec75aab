"""Valves (water, gas): open/close/stop and, when the valve reports one, position."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.valve.const import ValveEntityFeature
from homeassistant.components.valve.entity import ValveEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalOpenCloseEntity, as_bool, pop_percent


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalValve per fixture valve."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalValve(runtime, fixture) for fixture in runtime.modelled("valve")])


class EvalValve(EvalOpenCloseEntity, ValveEntity):
    """A valve with an instant actuator."""

    _eval_feature_class = ValveEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        features = ValveEntityFeature.OPEN | ValveEntityFeature.CLOSE | ValveEntityFeature.STOP
        if as_bool(attributes.get("reports_position", True)):
            features |= ValveEntityFeature.SET_POSITION
        return int(features)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        reports = as_bool(attributes.get("reports_position"))
        if reports is None:
            reports = bool(self.supported_features & ValveEntityFeature.SET_POSITION) or any(
                key in attributes for key in ("current_position", "position")
            )
        self._attr_reports_position = reports
        self._attr_is_closed = True
        self._attr_is_opening = False
        self._attr_is_closing = False
        self._attr_current_valve_position = 0 if reports else None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        attributes.pop("reports_position", None)
        attributes.pop("is_closed", None)
        position = pop_percent(attributes, "current_position", "position")
        if position is not None:
            self._set_position(position)
        return self._apply_open_state(state, position)

    @property
    def _positioned(self) -> bool:
        return bool(self._attr_reports_position)

    @property
    def _position(self) -> int | None:
        return self._attr_current_valve_position

    def _set_position(self, position: int) -> None:
        if self._attr_reports_position:
            self._attr_current_valve_position = position
        self._attr_is_closed = position == 0

    async def async_open_valve(self) -> None:
        """Open fully."""
        self._set_position(100)
        self._moved()

    async def async_close_valve(self) -> None:
        """Close fully."""
        self._set_position(0)
        self._moved()

    async def async_set_valve_position(self, position: int) -> None:
        """Move to a position (0 closed, 100 open)."""
        self._set_position(int(position))
        self._moved()

    async def async_stop_valve(self) -> None:
        """Stop (moves are instant)."""
        self._moved()
