"""Text entities: set_value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.text import TextEntity, TextMode
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_int


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalText per fixture text entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalText(runtime, fixture) for fixture in runtime.modelled("text")])


class EvalText(EvalEntity, TextEntity):
    """A settable text."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_native_value = ""
        self._attr_native_min = 0
        self._attr_native_max = 255
        self._attr_pattern = None
        self._attr_mode = TextMode.TEXT

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        for key, field in (("min", "_attr_native_min"), ("max", "_attr_native_max")):
            if (value := as_int(attributes.pop(key, None))) is not None:
                setattr(self, field, value)
        if "pattern" in attributes:
            pattern = attributes.pop("pattern")
            self._attr_pattern = None if pattern is None else str(pattern)
        if (mode := attributes.pop("mode", None)) in set(TextMode):
            self._attr_mode = TextMode(mode)
        if state is not None:
            self._attr_native_value = state
        return True

    async def async_set_value(self, value: str) -> None:
        """Set the text."""
        self._attr_native_value = value
        self.eval_changed()
