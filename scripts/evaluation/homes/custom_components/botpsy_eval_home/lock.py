"""Locks: lock, unlock and open (unlatch); states locked/unlocked/open/jammed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.lock import LockEntity
from homeassistant.components.lock.const import LockEntityFeature
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity

_STATES = {"locked", "unlocked", "open", "opening", "locking", "unlocking", "jammed"}


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalLock per fixture lock."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalLock(runtime, fixture) for fixture in runtime.modelled("lock")])


class EvalLock(EvalEntity, LockEntity):
    """A lock with an instant bolt; a missing state means locked."""

    _eval_feature_class = LockEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(LockEntityFeature.OPEN)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_code_format = None
        self._set("locked")

    def _set(self, state: str) -> None:
        self._attr_is_locked = state == "locked"
        self._attr_is_open = state == "open"
        self._attr_is_opening = state == "opening"
        self._attr_is_locking = state == "locking"
        self._attr_is_unlocking = state == "unlocking"
        self._attr_is_jammed = state == "jammed"

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if "code_format" in attributes:
            code_format = attributes.pop("code_format")
            self._attr_code_format = None if code_format is None else str(code_format)
        if state is None:
            return True
        if state not in _STATES:
            return False
        self._set(state)
        return True

    async def async_lock(self, **kwargs: Any) -> None:
        """Lock."""
        self._set("locked")
        self.eval_changed()

    async def async_unlock(self, **kwargs: Any) -> None:
        """Unlock."""
        self._set("unlocked")
        self.eval_changed()

    async def async_open(self, **kwargs: Any) -> None:
        """Unlatch (open) the door."""
        self._set("open")
        self.eval_changed()
