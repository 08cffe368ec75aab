"""Undo: what the conversation's last action changed goes back as it was.

"Undo that", or a correction ("no, I meant the bedside lamp"): the states the last turn's
calls changed are put back through HA's own reproduce-state (the services each domain
uses to restore a scene), as the asking user, checked as any call is (exposed, allowed);
a change whose undoing would need a yes (unlocking, opening a garage door) is not undone
but said. Whether a request that names a device ("put the blinds back", "the floor lamp,
not the reading light") is such an undo or correction depends on what the last turn
changed: that is read here too.
"""

from __future__ import annotations

from dataclasses import asdict
import re
from typing import Any

from homeassistant.auth.permissions.const import POLICY_CONTROL
from homeassistant.components import conversation
from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import Context, HomeAssistant, State
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.state import async_reproduce_state

from botpsy_runtime.formats import ToolCall

from .core.policy import denied_at_end, is_correction, needs_confirmation, restoring_service, undone_by_name
from .core.reply import describe
from .core.tools import ACTION
from .follow_ups import acted, changes_of, turns
from .service_calls import EVENT_CALL_EXECUTED, state_change


def last_changes(chat_log: conversation.ChatLog) -> tuple[list[dict[str, Any]], list[ToolCall]]:
    """The changes of the most recent turn (before the one being answered) whose calls
    changed something, and that turn's calls."""
    for turn in reversed(turns(chat_log)):
        if changes := changes_of(turn):
            return changes, acted(turn)
    return [], []


async def async_undo(hass: HomeAssistant, chat_log: conversation.ChatLog, context: Context) -> str | None:
    """Put back what the last turn changed; the reply, or None if it changed nothing."""
    changes, calls = last_changes(chat_log)
    if not changes:
        return None
    # What was put on a list comes off it (a list's state, its count, cannot be put back).
    added = {
        (str(c.arguments["entity_id"]), str(c.arguments["item"]))
        for c in calls
        if c.name == "todo" and c.arguments.get(ACTION) == "add_item" and "item" in c.arguments
    }
    removed: list[tuple[str, str]] = []
    user = await hass.auth.async_get_user(context.user_id) if context.user_id else None
    wanted: list[State] = []
    refused: list[str] = []
    for change in changes:
        entity_id, old = str(change["entity_id"]), change.get("old_state")
        current = hass.states.get(entity_id)
        if current is None or old is None:
            continue
        domain = current.domain
        name = current.name
        if needs_confirmation(domain, restoring_service(domain, str(old)), current.attributes.get("device_class")):
            refused.append(f"I did not put {name} back to {old}: ask me for that, and I will ask you to confirm.")
        elif not async_should_expose(hass, CONVERSATION_DOMAIN, entity_id) or (
            user is not None and not user.permissions.check_entity(entity_id, POLICY_CONTROL)
        ):
            refused.append(f"I did not put {name} back: you may not control it here.")
        elif domain == "todo":
            removed += [(e, item) for e, item in added if e == entity_id]
        else:
            attributes = {k: v[0] for k, v in (change.get("attributes") or {}).items() if v and v[0] is not None}
            wanted.append(State(entity_id, str(old), attributes))
    before = {s.entity_id: hass.states.get(s.entity_id) for s in wanted}
    before |= {entity_id: hass.states.get(entity_id) for entity_id, _item in removed}
    try:
        await async_reproduce_state(hass, wanted, context=context)
        for entity_id, item in removed:
            await hass.services.async_call(
                "todo", "remove_item", {"entity_id": entity_id, "item": item}, blocking=True, context=context
            )
    except HomeAssistantError as err:
        refused.append(f"I could not put everything back: {err}.")
    result: dict[str, Any] = {"name": "undo", "arguments": {}, "executed": True, "changes": []}
    for entity_id, old_state in before.items():
        if old_state is not None and (done := state_change(old_state, hass.states.get(entity_id))) is not None:
            result["changes"].append(asdict(done))
    hass.bus.async_fire(EVENT_CALL_EXECUTED, {"user_id": context.user_id, **result}, context=context)
    return _said(hass, result, removed, refused) if wanted or removed else " ".join(refused) or None


def _said(hass: HomeAssistant, result: dict[str, Any], removed: list[tuple[str, str]], refused: list[str]) -> str:
    """What undoing did: the states put back, the items taken off their lists, and what was not done."""
    said = []
    put_back = [c for c in result["changes"] if not str(c.get("entity_id")).startswith("todo.")]
    if put_back or not removed:
        said.append(
            "Put back. " + (describe([{**result, "changes": put_back}]) if put_back else "Nothing needed putting back.")
        )
    for entity_id, item in removed:
        said.append(f"Took {item} off {state.name if (state := hass.states.get(entity_id)) else entity_id}.")
    return " ".join([*said, *refused])


def puts_back_by_name(hass: HomeAssistant, chat_log: conversation.ChatLog, utterance: str) -> bool:
    """ "Put the blinds back": an undo, where the last turn changed a device its words name
    (else it is a request of its own, the model's)."""
    return (said := undone_by_name(utterance)) is not None and _names_a_change(hass, chat_log, said)


def _names_a_change(hass: HomeAssistant, chat_log: conversation.ChatLog, said: str) -> bool:
    """Whether the words `said` ("the blinds") name a device the last turn changed: all of
    them are words of its name ("the ceiling lights" are not the kitchen lights)."""
    words = {word.rstrip("s") for word in re.findall(r"[a-z]+", said.lower())} - {"the", "my", "that", "this"}
    for change in last_changes(chat_log)[0]:
        entity_id = str(change["entity_id"])
        state = hass.states.get(entity_id)
        names = f"{state.name if state else ''} {entity_id}".lower()
        if words and words <= {word.rstrip("s") for word in re.findall(r"[a-z]+", names)}:
            return True
    return False


def corrects(hass: HomeAssistant, chat_log: conversation.ChatLog, utterance: str) -> bool:
    """Whether the request corrects the last action (`is_correction`, or it ends denying
    what that action changed): not "and the nook lamp on instead" after a turn that
    switched a light off, which switches another device the other way in its place and
    leaves the first as it is."""
    denied = denied_at_end(utterance)
    if not is_correction(utterance) and not (denied and _names_a_change(hass, chat_log, denied)):
        return False
    # ... (said "instead": "no, leave that one on, I meant the kitchen" corrects).
    said = re.findall(r"\b(on|off)\b", utterance.lower()) if re.search(r"\binstead\b", utterance, re.I) else []
    done = {call.arguments.get(ACTION) for call in last_changes(chat_log)[1]}
    return not said or done != {"turn_off" if said[-1] == "on" else "turn_on"}
