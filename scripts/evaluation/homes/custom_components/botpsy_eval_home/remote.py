"""Remotes: on/off and activities."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from homeassistant.components.remote import RemoteEntity
from homeassistant.components.remote.const import ATTR_ACTIVITY, RemoteEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalOnOffEntity


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalRemote per fixture remote entity."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalRemote(runtime, fixture) for fixture in runtime.modelled("remote")])


class EvalRemote(EvalOnOffEntity, RemoteEntity):
    """A remote (hub); a missing state means off."""

    _eval_feature_class = RemoteEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(RemoteEntityFeature.ACTIVITY) if attributes.get("activity_list") else 0

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        super()._eval_defaults(attributes)
        self._attr_activity_list = None
        self._attr_current_activity = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if isinstance(activities := attributes.pop("activity_list", None), list):
            self._attr_activity_list = [str(activity) for activity in activities]
        if "current_activity" in attributes:
            activity = attributes.pop("current_activity")
            self._attr_current_activity = None if activity is None else str(activity)
        return super()._eval_apply(state, attributes, initial)

    async def async_turn_on(self, **kwargs: Any) -> None:
        """On, optionally starting an activity."""
        if (activity := kwargs.get(ATTR_ACTIVITY)) is not None:
            self._attr_current_activity = activity
        await super().async_turn_on(**kwargs)

    async def async_send_command(self, command: Iterable[str], **kwargs: Any) -> None:
        """Commands have no visible effect."""
