"""Calls held until the user confirms them, per conversation.

A held call was validated when it was asked for; it runs only if the next turn of the same
conversation, by the same user, confirms it and the device is still as it was then.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant, State, callback
from homeassistant.helpers import llm
from homeassistant.util.hass_dict import HassKey

from .actions import REPORTED_ATTRIBUTES, intent_outcome
from .const import DOMAIN
from .core.formats import ToolCall
from .core.home import Entity
from .core.policy import is_confirmation, is_refusal, needs_confirmation
from .core.reply import describe
from .core.validate import CallRejectedError, validate_call
from .generation import async_say
from .toolbox import Toolbox, is_action

DATA_PENDING: HassKey[dict[str, tuple[PendingAction, ...]]] = HassKey(f"{DOMAIN}_pending")


@dataclass(frozen=True, slots=True)
class PendingAction:
    call: ToolCall
    entity_id: str
    name: str
    snapshot: tuple[str, tuple[tuple[str, Any], ...]] | None
    user_id: str | None  # who asked: only they can say yes


def _user_id(chat_log: conversation.ChatLog) -> str | None:
    """The user of the chat log's turn (None: an automation or a service call without one)."""
    return (
        chat_log.llm_api.llm_context.context.user_id
        if chat_log.llm_api and chat_log.llm_api.llm_context.context
        else None
    )


def snapshot(state: State) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What must not have changed for a held call to still be wanted."""
    return state.state, tuple((k, str(state.attributes.get(k))) for k in REPORTED_ATTRIBUTES)


@callback
def pending_actions(hass: HomeAssistant) -> dict[str, tuple[PendingAction, ...]]:
    return hass.data.setdefault(DATA_PENDING, {})


@dataclass(frozen=True, slots=True)
class Risk:
    """Why a call waits for a yes: the device it would act on, and what it would do."""

    entity_id: str
    action: str  # the service ("unlock", "open_cover")


# What HA's intents do to the devices of a domain, as the service they call.
_INTENT_SERVICES: dict[tuple[str, str], str] = {
    ("HassTurnOn", "lock"): "lock",
    ("HassTurnOff", "lock"): "unlock",
    ("HassTurnOn", "cover"): "open_cover",
    ("HassTurnOff", "cover"): "close_cover",
    ("HassSetPosition", "cover"): "set_cover_position",
}


def _intent_targets(toolbox: Toolbox, arguments: Mapping[str, Any]) -> list[Entity]:
    """The devices an intent call's slots could match (name, area, floor, domain, device class)."""

    def listed(key: str) -> set[str] | None:
        value = arguments.get(key)
        return None if value in (None, "", []) else {str(v) for v in (value if isinstance(value, list) else [value])}

    name, area, floor = listed("name"), listed("area"), listed("floor")
    domain, device_class = listed("domain"), listed("device_class")
    return [
        e
        for e in toolbox.home.entities
        if (name is None or bool(name & {e.name, *e.aliases}))
        and (area is None or e.area in area)
        and (floor is None or e.floor in floor)
        and (domain is None or e.domain in domain)
        and (device_class is None or e.device_class in device_class)
    ]


def hold_rule(toolbox: Toolbox, enabled: bool) -> Callable[[ToolCall], Risk | None]:
    """What makes a call wait for the user's confirmation, if `enabled`: a valid high-impact
    call of BotPsy's, or one of HA's intents that could do the same to a device it matches."""
    if not enabled:
        return lambda _call: None
    tools = {t.key: t for t in toolbox.compiled}

    def risk(call: ToolCall) -> Risk | None:
        if not toolbox.writes(call.name):
            return None
        if is_action(toolbox.compiled, call.name):
            try:
                valid = validate_call(call, tools)
            except CallRejectedError:
                return None  # runs (and is refused) like any invalid call
            entity = toolbox.home.entity(valid.entity_id)
            risky = needs_confirmation(valid.domain, valid.tool.service, entity)
            return Risk(valid.entity_id, valid.tool.service) if risky else None
        intent = call.name.rpartition("__")[2]
        for entity in _intent_targets(toolbox, call.arguments):
            service = _INTENT_SERVICES.get((intent, entity.domain), "")
            if service and needs_confirmation(entity.domain, service, entity):
                return Risk(entity.entity_id, service)
        return None

    return risk


async def async_ask_confirmation(
    hass: HomeAssistant, chat_log: conversation.ChatLog, agent_id: str, held: Sequence[tuple[ToolCall, Risk]]
) -> None:
    """Hold the calls for this conversation and ask the user about all of them (a question:
    the conversation stays open)."""
    pending = []
    asked = []
    for call, risk in held:
        state = hass.states.get(risk.entity_id)
        name = state.name if state else risk.entity_id
        pending.append(
            PendingAction(call, risk.entity_id, name, snapshot(state) if state else None, _user_id(chat_log))
        )
        # "unlock", "open" (open_cover), "disarm" (alarm_disarm): the action without its domain.
        noise = {risk.entity_id.partition(".")[0], "alarm"}
        asked.append(" ".join([*(w for w in risk.action.split("_") if w not in noise), name]))
    pending_actions(hass)[chat_log.conversation_id] = tuple(pending)
    await async_say(chat_log, agent_id, f"To be safe, I ask first: do you want me to {' and '.join(asked)}?")


async def async_answer_pending(
    hass: HomeAssistant, chat_log: conversation.ChatLog, agent_id: str, utterance: str
) -> bool:
    """Act on the call held in this conversation, if `utterance` answers it; True if it did.

    Anything but a yes or a no is another request, and the held call is dropped. A turn
    of another user in the same conversation answers nothing: it is a request of its own,
    and the held call waits for the user who asked.
    """
    held = pending_actions(hass)
    pending = held.get(chat_log.conversation_id, ())
    if not pending or any(p.user_id != _user_id(chat_log) for p in pending):
        return False
    del held[chat_log.conversation_id]
    names = " and ".join(p.name for p in pending)
    if not is_confirmation(utterance):
        if is_refusal(utterance):
            await async_say(chat_log, agent_id, f"OK, I left {names} as {'they are' if len(pending) > 1 else 'it is'}.")
            return True
        return False
    sentences = []
    calls = []
    before: dict[str, State] = {}
    for action in pending:
        state = hass.states.get(action.entity_id)
        if state is None or snapshot(state) != action.snapshot:
            now = state.state if state else "gone"
            sentences.append(f"{action.name} changed since you asked (it is now {now}), so I did not act.")
            continue
        before[action.entity_id] = state
        calls.append(llm.ToolInput(tool_name=action.call.name, tool_args=action.call.arguments))

    async def confirmed() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant", "tool_calls": calls}

    if calls:
        results = [
            {**dict(content.result.data or {}), "name": content.tool_name}
            async for content in chat_log.async_add_delta_content_stream(agent_id, confirmed())
            if isinstance(content, conversation.ToolResultContent)
        ]
        # BotPsy's results say what changed; an intent's is seen against the states before.
        sentences.append(describe([intent_outcome(hass, r, before) or r for r in results]))
    await async_say(chat_log, agent_id, " ".join(sentences))
    return True
