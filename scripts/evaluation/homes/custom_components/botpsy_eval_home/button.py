"""Buttons (doorbell chimes, restart...): press; the state is the last press time, as in HA."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.button import ButtonEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity

# ButtonEntity keeps the press time private (and caches `state`); its own setter handles both.
_SET_STATE = "_ButtonEntity__set_state"


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalButton per fixture button entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalButton(runtime, fixture) for fixture in runtime.modelled("button")])


class EvalButton(EvalEntity, ButtonEntity):
    """A button; HA shows the last press time as its state."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        getattr(self, _SET_STATE)(None)

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if state is not None:
            getattr(self, _SET_STATE)(None if state in ("unknown", "") else state)
        return True

    async def async_press(self) -> None:
        """Press (HA records the time itself)."""
