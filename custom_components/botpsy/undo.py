"""Undo: what the conversation's last action changed goes back as it was.

"Undo that", or a correction ("no, I meant the bedside lamp"): the states the last turn's
calls changed are put back through HA's own reproduce-state (the services each domain
uses to restore a scene), as the asking user, checked as any call is (exposed, allowed);
a change whose undoing would need a yes (unlocking, opening a garage door) is not undone
but said.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from homeassistant.auth.permissions.const import POLICY_CONTROL
from homeassistant.components import conversation
from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import Context, HomeAssistant, State
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.state import async_reproduce_state

from .core.policy import needs_confirmation, restoring_service
from .core.reply import describe
from .service_calls import EVENT_CALL_EXECUTED, state_change


def last_changes(chat_log: conversation.ChatLog) -> list[dict[str, Any]]:
    """The changes of the most recent turn (before the one being answered) whose calls
    changed something."""
    turns: list[list[dict[str, Any]]] = [[]]
    for content in chat_log.content[:-1]:
        if isinstance(content, conversation.UserContent):
            turns.append([])
        elif isinstance(content, conversation.ToolResultContent) and isinstance(data := content.result.data, dict):
            changes = data.get("changes")
            turns[-1] += [c for c in changes if isinstance(c, dict)] if isinstance(changes, list) else []
    return next((turn for turn in reversed(turns) if turn), [])


async def async_undo(hass: HomeAssistant, chat_log: conversation.ChatLog, context: Context) -> str | None:
    """Put back what the last turn changed; the reply, or None if it changed nothing."""
    changes = last_changes(chat_log)
    if not changes:
        return None
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
        else:
            attributes = {k: v[0] for k, v in (change.get("attributes") or {}).items() if v and v[0] is not None}
            wanted.append(State(entity_id, str(old), attributes))
    before = {s.entity_id: hass.states.get(s.entity_id) for s in wanted}
    try:
        await async_reproduce_state(hass, wanted, context=context)
    except HomeAssistantError as err:
        refused.append(f"I could not put everything back: {err}.")
    result: dict[str, Any] = {"name": "undo", "arguments": {}, "executed": True, "changes": []}
    for entity_id, old_state in before.items():
        if old_state is not None and (done := state_change(old_state, hass.states.get(entity_id))) is not None:
            result["changes"].append(asdict(done))
    hass.bus.async_fire(EVENT_CALL_EXECUTED, {"user_id": context.user_id, **result}, context=context)
    said = describe([result]) if result["changes"] else "Nothing needed putting back."
    return " ".join([f"Put back. {said}", *refused]) if wanted else " ".join(refused) or None
