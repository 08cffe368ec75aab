"""Switches (plugs, relays): on and off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.switch import SwitchEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_bool


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalSwitch per fixture switch."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalSwitch(runtime, fixture) for fixture in runtime.modelled("switch")])


class EvalSwitch(EvalEntity, SwitchEntity):
    """A switch; a missing state means off."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_is_on = False

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if state is None:
            return True
        if (on := as_bool(state)) is None:
            return False
        self._attr_is_on = on
        return True

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Switch on."""
        self._attr_is_on = True
        self.eval_changed()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Switch off."""
        self._attr_is_on = False
        self.eval_changed()
