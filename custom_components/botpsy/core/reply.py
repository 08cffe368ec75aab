"""Say what happened, from the call results alone: no claim without a call that did it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _value(value: Any) -> str:
    return "unset" if value is None else str(value)


def _attribute(name: str, old: Any, new: Any) -> str:
    if name == "brightness":  # HA's 0-255 scale; people speak in percent
        old, new = (None if v is None else f"{round(v * 100 / 255)} %" for v in (old, new))
    return f"{name.replace('_', ' ')} {_value(old)} → {_value(new)}"


def describe(results: Sequence[Mapping[str, Any]]) -> str:
    """One sentence per call: what changed, what ran without a visible change, or why not."""
    sentences = []
    for result in results:
        target = result.get("arguments", {}).get("entity_id") or result.get("name", "the call")
        if result.get("error"):
            sentences.append(f"I did not change {target}: {result['error']}.")
            continue
        changes = result.get("changes") or []
        for change in changes:
            parts = []
            if change.get("old_state") != change.get("new_state"):
                parts.append(f"{_value(change.get('old_state'))} → {_value(change.get('new_state'))}")
            # Attributes that vanished with the new state (a light's brightness when it
            # turns off) are no news.
            parts += [
                _attribute(k, old, new) for k, (old, new) in (change.get("attributes") or {}).items() if new is not None
            ]
            sentences.append(f"{change.get('name') or change['entity_id']}: {', '.join(parts)}.")
        if not changes:
            sentences.append(f"Done, {target} was already that way.")
    return " ".join(dict.fromkeys(sentences))  # the same failure twice is said once
