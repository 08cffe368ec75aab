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

from dataclasses import asdict, dataclass, replace
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
from .service_calls import EVENT_CALL_EXECUTED, listed_item, state_change


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
    # A list's state (its count) cannot be put back: each change to its items is undone.
    undoing = [undone for call in calls for undone in _list_undoing(call)]
    list_undos: list[_ListUndo] = []
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
            list_undos += [u for u in undoing if u.entity_id == entity_id and u not in list_undos]
        else:
            attributes = {k: v[0] for k, v in (change.get("attributes") or {}).items() if v and v[0] is not None}
            wanted.append(State(entity_id, str(old), attributes))
    before = {s.entity_id: hass.states.get(s.entity_id) for s in wanted}
    before |= {undone.entity_id: hass.states.get(undone.entity_id) for undone in list_undos}
    # Each item as its list spells it: the call may have said "lemons" of "Lemons".
    list_undos = [
        replace(u, data={**u.data, "item": listed_item(hass, u.entity_id, str(u.data["item"])) or u.data["item"]})
        for u in list_undos
    ]
    try:
        await async_reproduce_state(hass, wanted, context=context)
        for undone in list_undos:
            data = {"entity_id": undone.entity_id, **undone.data}
            await hass.services.async_call("todo", undone.service, data, blocking=True, context=context)
    except HomeAssistantError as err:
        refused.append(f"I could not put everything back: {err}.")
    result: dict[str, Any] = {"name": "undo", "arguments": {}, "executed": True, "changes": []}
    for entity_id, old_state in before.items():
        if old_state is not None and (done := state_change(old_state, hass.states.get(entity_id))) is not None:
            result["changes"].append(asdict(done))
    hass.bus.async_fire(EVENT_CALL_EXECUTED, {"user_id": context.user_id, **result}, context=context)
    return _said(hass, result, list_undos, refused) if wanted or list_undos else " ".join(refused) or None


@dataclass(frozen=True)
class _ListUndo:
    """The call that undoes one change to a list's items, and how the reply says it."""

    entity_id: str
    service: str
    data: dict[str, Any]
    said: str  # "Took {item} off {list}.": of `data`, and the list's name


def _list_undoing(call: ToolCall) -> list[_ListUndo]:
    """What undoes a to-do call (those offered: add and update): an added item comes off,
    an item ticked off (and renamed with it) is as it was; nothing for any other call."""
    args = call.arguments
    item, entity_id = args.get("item"), str(args.get("entity_id"))
    if call.name != "todo" or not item:
        return []
    match args.get(ACTION):
        case "add_item":
            return [_ListUndo(entity_id, "remove_item", {"item": item}, "Took {item} off {list}.")]
        case "update_item":
            now = args.get("rename") or item
            data: dict[str, Any] = {"item": now}
            if args.get("rename"):
                data["rename"] = item
            # Only a change of status changes the list's state (its count), so only that
            # is a change to undo.
            if (status := args.get("status")) in ("completed", "needs_action"):
                data["status"] = "needs_action" if status == "completed" else "completed"
                done = "not done" if status == "completed" else "done"
                return [_ListUndo(entity_id, "update_item", data, f"Put {{item}} back as {done} on {{list}}.")]
    return []


def _said(hass: HomeAssistant, result: dict[str, Any], list_undos: list[_ListUndo], refused: list[str]) -> str:
    """What undoing did: the states put back, the list items as they were, and what was not done."""
    said = []
    put_back = [c for c in result["changes"] if not str(c.get("entity_id")).startswith("todo.")]
    if put_back or not list_undos:
        said.append(
            "Put back. " + (describe([{**result, "changes": put_back}]) if put_back else "Nothing needed putting back.")
        )
    for undone in list_undos:
        state = hass.states.get(undone.entity_id)
        said.append(undone.said.format(**undone.data, list=state.name if state else undone.entity_id))
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
