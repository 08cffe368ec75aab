"""Selects (modes, inputs): choose one of the options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.select import SelectEntity
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalSelect per fixture select entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalSelect(runtime, fixture) for fixture in runtime.modelled("select")])


class EvalSelect(EvalEntity, SelectEntity):
    """A select; its state joins the options when the fixture forgot to list it."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_options = []
        self._attr_current_option = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if isinstance(options := attributes.pop("options", None), list):
            self._attr_options = [str(option) for option in options]
        if state is None:
            if initial and self._attr_options:
                self._attr_current_option = self._attr_options[0]
            return True
        if state not in self._attr_options:
            self._attr_options = [*self._attr_options, state]
        self._attr_current_option = state
        return True

    async def async_select_option(self, option: str) -> None:
        """Choose an option."""
        self._attr_current_option = option
        self.eval_changed()
