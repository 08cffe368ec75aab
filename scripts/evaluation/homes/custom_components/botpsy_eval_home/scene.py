"""Scenes: activating one applies the entity states the fixture lists for it.

A fixture scene may carry `entities: {entity_id: state | {state: ..., <attribute>: ...}}`
(as HA's YAML scenes do); without it, activation is only recorded (the state becomes the
activation time, as for every HA scene).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.scene import Scene
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity

_LAST_ACTIVATED = "_BaseScene__last_activated"


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalScene per fixture scene."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalScene(runtime, fixture) for fixture in runtime.modelled("scene")])


class EvalScene(EvalEntity, Scene):
    """A scene over the home's own entities."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._targets: dict[str, Any] = {}
        setattr(self, _LAST_ACTIVATED, None)

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if isinstance(targets := attributes.pop("entities", None), Mapping):
            self._targets = dict(targets)
        attributes.pop("entity_id", None)
        if state is not None:
            setattr(self, _LAST_ACTIVATED, None if state in ("unknown", "") else state)
        return True

    async def async_activate(self, **kwargs: Any) -> None:
        """Apply the listed states (HA records the activation time itself)."""
        for entity_id, target in self._targets.items():
            if isinstance(target, Mapping):
                attributes = {key: value for key, value in target.items() if key != "state"}
                state = target.get("state")
                self.runtime.entity_state(entity_id, None if state is None else str(state), attributes)
            else:
                self.runtime.entity_state(entity_id, str(target), None)
