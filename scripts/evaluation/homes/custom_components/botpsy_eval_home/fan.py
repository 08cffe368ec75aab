"""Fans: on/off, speed percentage (in the fan's steps), preset, oscillation, direction.

A fan remembers its last speed while off; turned on without a speed it comes back at it
(100 % when it never ran), and off shows 0 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.fan import FanEntity
from homeassistant.components.fan.const import FanEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_bool, as_int, as_number


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalFan per fixture fan."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalFan(runtime, fixture) for fixture in runtime.modelled("fan")])


class EvalFan(EvalEntity, FanEntity):
    """A fan whose on/off state is its speed (0 % is off), as in HA's model."""

    _eval_feature_class = FanEntityFeature
    _eval_base_features = int(FanEntityFeature.TURN_ON | FanEntityFeature.TURN_OFF)

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        features = FanEntityFeature.SET_SPEED | FanEntityFeature.OSCILLATE | FanEntityFeature.DIRECTION
        if attributes.get("preset_modes"):
            features |= FanEntityFeature.PRESET_MODE
        return int(features)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_percentage = 0
        self._last_percentage = 100
        self._attr_speed_count = 100
        self._attr_oscillating = False
        self._attr_current_direction = "forward"
        self._attr_preset_mode = None
        self._attr_preset_modes = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        self._apply_speed(attributes)
        if (oscillating := as_bool(attributes.pop("oscillating", None))) is not None:
            self._attr_oscillating = oscillating
        for key in ("current_direction", "direction"):
            if (direction := attributes.pop(key, None)) is not None:
                self._attr_current_direction = str(direction)
        if isinstance(modes := attributes.pop("preset_modes", None), list):
            self._attr_preset_modes = [str(mode) for mode in modes]
        if "preset_mode" in attributes:
            mode = attributes.pop("preset_mode")
            self._attr_preset_mode = None if mode is None else str(mode)
        if state is None:
            return True
        if (on := as_bool(state)) is None:
            return False
        if on and not self._attr_percentage:
            self._attr_percentage = self._last_percentage
        elif not on:
            self._attr_percentage = 0
            self._attr_preset_mode = None
        return True

    def _apply_speed(self, attributes: dict[str, Any]) -> None:
        """Take the speed's steps and percentage apart: a positive percentage is also the one to come back at."""
        if (count := as_int(attributes.pop("speed_count", None))) and count > 0:
            self._attr_speed_count = count
        if (step := as_number(attributes.pop("percentage_step", None))) and step > 0:
            self._attr_speed_count = max(1, round(100 / step))
        percentage = as_int(attributes.pop("percentage", None))
        if percentage is not None:
            self._attr_percentage = max(0, min(100, percentage))
            if percentage > 0:
                self._last_percentage = self._attr_percentage

    async def async_turn_on(self, percentage: int | None = None, preset_mode: str | None = None, **kwargs: Any) -> None:
        """On at the given speed or preset, else at the last speed."""
        if preset_mode is not None:
            self._attr_preset_mode = preset_mode
        if percentage is not None:
            await self.async_set_percentage(percentage)
            return
        self._attr_percentage = self._last_percentage
        self.eval_changed()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Off: 0 %, the speed is remembered."""
        self._attr_percentage = 0
        self._attr_preset_mode = None
        self.eval_changed()

    async def async_set_percentage(self, percentage: int) -> None:
        """Set the speed (0 turns the fan off)."""
        self._attr_percentage = max(0, min(100, int(percentage)))
        if self._attr_percentage > 0:
            self._last_percentage = self._attr_percentage
        else:
            self._attr_preset_mode = None
        self.eval_changed()

    async def async_set_preset_mode(self, preset_mode: str) -> None:
        """Select a preset (the fan runs)."""
        self._attr_preset_mode = preset_mode
        if not self._attr_percentage:
            self._attr_percentage = self._last_percentage
        self.eval_changed()

    async def async_oscillate(self, oscillating: bool) -> None:
        """Start or stop oscillating."""
        self._attr_oscillating = oscillating
        self.eval_changed()

    async def async_set_direction(self, direction: str) -> None:
        """Forward or reverse."""
        self._attr_current_direction = direction
        self.eval_changed()
