"""Calls held until the user confirms them, per conversation.

A held call was validated when it was asked for; it runs only if the next turn of the same
conversation confirms it and the device is still as it was then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from homeassistant.core import HomeAssistant, State, callback
from homeassistant.util.hass_dict import HassKey

from .actions import REPORTED_ATTRIBUTES
from .const import DOMAIN
from .core.formats import ToolCall

DATA_PENDING: HassKey[dict[str, PendingAction]] = HassKey(f"{DOMAIN}_pending")


@dataclass(frozen=True, slots=True)
class PendingAction:
    call: ToolCall
    entity_id: str
    name: str
    snapshot: tuple[str, tuple[tuple[str, Any], ...]] | None


def snapshot(state: State) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What must not have changed for a held call to still be wanted."""
    return state.state, tuple((k, str(state.attributes.get(k))) for k in REPORTED_ATTRIBUTES)


@callback
def pending_actions(hass: HomeAssistant) -> dict[str, PendingAction]:
    return hass.data.setdefault(DATA_PENDING, {})
