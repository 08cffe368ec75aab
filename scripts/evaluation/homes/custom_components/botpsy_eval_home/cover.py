"""Covers (garage doors, curtains, blinds, shades, windows...): open/close/stop, position, tilt.

Moves are instant: a request to open shows `open` (and position 100) at once, which is
what the end-state datasets expect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.cover import ATTR_POSITION, ATTR_TILT_POSITION, CoverEntity, CoverEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalOpenCloseEntity, pop_percent

_TILT = (
    CoverEntityFeature.OPEN_TILT
    | CoverEntityFeature.CLOSE_TILT
    | CoverEntityFeature.STOP_TILT
    | CoverEntityFeature.SET_TILT_POSITION
)


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalCover per fixture cover."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalCover(runtime, fixture) for fixture in runtime.modelled("cover")])


class EvalCover(EvalOpenCloseEntity, CoverEntity):
    """A cover with an instant motor; position only when it reports one."""

    _eval_feature_class = CoverEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        features = (
            CoverEntityFeature.OPEN
            | CoverEntityFeature.CLOSE
            | CoverEntityFeature.STOP
            | CoverEntityFeature.SET_POSITION
        )
        if "current_tilt_position" in attributes or "tilt_position" in attributes:
            features |= _TILT
        return int(features)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_is_closed = True
        self._attr_is_opening = False
        self._attr_is_closing = False
        self._attr_current_cover_position = None
        self._attr_current_cover_tilt_position = None

    @property
    def _positioned(self) -> bool:
        return bool(self.supported_features & CoverEntityFeature.SET_POSITION) or (
            self._attr_current_cover_position is not None
        )

    @property
    def _position(self) -> int | None:
        return self._attr_current_cover_position

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        features = self.supported_features or CoverEntityFeature(0)
        position = pop_percent(attributes, "current_position", "position")
        tilt = pop_percent(attributes, "current_tilt_position", "tilt_position")
        attributes.pop("is_closed", None)
        if tilt is not None:
            self._attr_current_cover_tilt_position = tilt
        elif initial and features & CoverEntityFeature.SET_TILT_POSITION:
            self._attr_current_cover_tilt_position = 0
        if position is not None:
            self._set_position(position)
        elif initial and features & CoverEntityFeature.SET_POSITION:
            self._set_position(0 if state in (None, "closed", "closing") else 100)
        return self._apply_open_state(state, position)

    def _set_position(self, position: int) -> None:
        self._attr_current_cover_position = position
        self._attr_is_closed = position == 0

    async def async_open_cover(self, **kwargs: Any) -> None:
        """Open fully."""
        if self._positioned:
            self._set_position(100)
        self._attr_is_closed = False
        self._moved()

    async def async_close_cover(self, **kwargs: Any) -> None:
        """Close fully."""
        if self._positioned:
            self._set_position(0)
        self._attr_is_closed = True
        self._moved()

    async def async_stop_cover(self, **kwargs: Any) -> None:
        """Stop where it is (moves are instant, so only the motion flags clear)."""
        self._moved()

    async def async_set_cover_position(self, **kwargs: Any) -> None:
        """Move to a position (0 closed, 100 open)."""
        self._set_position(int(kwargs[ATTR_POSITION]))
        self._moved()

    async def async_open_cover_tilt(self, **kwargs: Any) -> None:
        """Tilt open."""
        self._attr_current_cover_tilt_position = 100
        self._moved()

    async def async_close_cover_tilt(self, **kwargs: Any) -> None:
        """Tilt closed."""
        self._attr_current_cover_tilt_position = 0
        self._moved()

    async def async_stop_cover_tilt(self, **kwargs: Any) -> None:
        """Stop tilting."""
        self._moved()

    async def async_set_cover_tilt_position(self, **kwargs: Any) -> None:
        """Tilt to a position."""
        self._attr_current_cover_tilt_position = int(kwargs[ATTR_TILT_POSITION])
        self._moved()
