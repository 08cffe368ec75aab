"""Vacuums: start, stop, pause, return to base, spot clean, fan speed; HA's activity states."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.vacuum import StateVacuumEntity
from homeassistant.components.vacuum.const import VacuumActivity, VacuumEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity

_F = VacuumEntityFeature
_ACTIVITIES = {activity.value for activity in VacuumActivity}


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalVacuum per fixture vacuum."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalVacuum(runtime, fixture) for fixture in runtime.modelled("vacuum")])


class EvalVacuum(EvalEntity, StateVacuumEntity):
    """A robot vacuum; a missing state means docked."""

    _eval_feature_class = VacuumEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        features = _F.START | _F.STOP | _F.PAUSE | _F.RETURN_HOME | _F.STATE | _F.CLEAN_SPOT | _F.LOCATE
        if attributes.get("fan_speed_list"):
            features |= _F.FAN_SPEED
        return int(features)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_activity = VacuumActivity.DOCKED
        self._attr_fan_speed = None
        self._attr_fan_speed_list = []

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if isinstance(speeds := attributes.pop("fan_speed_list", None), list):
            self._attr_fan_speed_list = [str(speed) for speed in speeds]
        if "fan_speed" in attributes:
            speed = attributes.pop("fan_speed")
            self._attr_fan_speed = None if speed is None else str(speed)
        if state is None:
            return True
        if state not in _ACTIVITIES:
            return False
        self._attr_activity = VacuumActivity(state)
        return True

    def _set(self, activity: VacuumActivity) -> None:
        self._attr_activity = activity
        self.eval_changed()

    async def async_start(self) -> None:
        """Start (or resume) cleaning."""
        self._set(VacuumActivity.CLEANING)

    async def async_pause(self) -> None:
        """Pause cleaning."""
        self._set(VacuumActivity.PAUSED)

    async def async_stop(self, **kwargs: Any) -> None:
        """Stop where it is."""
        self._set(VacuumActivity.IDLE)

    async def async_return_to_base(self, **kwargs: Any) -> None:
        """Head back to the dock."""
        self._set(VacuumActivity.RETURNING)

    async def async_clean_spot(self, **kwargs: Any) -> None:
        """Clean around where it is."""
        self._set(VacuumActivity.CLEANING)

    async def async_locate(self, **kwargs: Any) -> None:
        """Beep (no state change)."""
        self.eval_changed()

    async def async_set_fan_speed(self, fan_speed: str, **kwargs: Any) -> None:
        """Suction level."""
        self._attr_fan_speed = fan_speed
        self.eval_changed()
