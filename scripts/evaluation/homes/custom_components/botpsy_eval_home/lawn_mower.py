"""Lawn mowers: start mowing, pause, dock."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.lawn_mower import LawnMowerEntity
from homeassistant.components.lawn_mower.const import LawnMowerActivity, LawnMowerEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity

_ACTIVITIES = {activity.value for activity in LawnMowerActivity}


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalLawnMower per fixture lawn_mower entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalLawnMower(runtime, fixture) for fixture in runtime.modelled("lawn_mower")])


class EvalLawnMower(EvalEntity, LawnMowerEntity):
    """A robot mower; a missing state means docked."""

    _eval_feature_class = LawnMowerEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(LawnMowerEntityFeature.START_MOWING | LawnMowerEntityFeature.PAUSE | LawnMowerEntityFeature.DOCK)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_activity = LawnMowerActivity.DOCKED

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if state is None:
            return True
        if state not in _ACTIVITIES:
            return False
        self._attr_activity = LawnMowerActivity(state)
        return True

    async def async_start_mowing(self) -> None:
        """Mow."""
        self._attr_activity = LawnMowerActivity.MOWING
        self.eval_changed()

    async def async_pause(self) -> None:
        """Pause."""
        self._attr_activity = LawnMowerActivity.PAUSED
        self.eval_changed()

    async def async_dock(self) -> None:
        """Go home."""
        self._attr_activity = LawnMowerActivity.RETURNING
        self.eval_changed()
