"""Calls held until the user confirms them, per conversation.

A held call was validated when it was asked for, and the devices it acts on resolved as
they will be when it runs (`targets`); it runs only if the next turn of the same
conversation, by the same user, confirms it, it still acts on the same devices, and those
that needed the yes are still as they were then.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from homeassistant.auth.permissions.const import POLICY_CONTROL
from homeassistant.components import conversation
from homeassistant.core import HomeAssistant, State, callback
from homeassistant.helpers import llm
from homeassistant.util.hass_dict import HassKey

from botpsy_runtime.formats import ToolCall

from .const import DOMAIN
from .core.policy import is_confirmation, is_refusal, needs_confirmation
from .core.reply import describe
from .language import reads_english
from .phrases import Phrases, async_phrases
from .service_calls import REPORTED_ATTRIBUTES, intent_outcome
from .targets import Target, UnresolvedError
from .toolbox import Toolbox

DATA_PENDING: HassKey[dict[str, tuple[PendingAction, ...]]] = HassKey(f"{DOMAIN}_pending")


@dataclass(frozen=True, slots=True)
class PendingAction:
    """A call held for the user's yes, with what must still be so when the yes comes."""

    call: ToolCall
    targets: tuple[Target, ...]  # every device it acts on, as resolved when it was asked for
    risky: tuple[Target, ...]  # those that need the yes
    snapshots: tuple[tuple[str, tuple[tuple[str, Any], ...]] | None, ...]  # of `risky`, then
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
    """The held calls of every conversation, by conversation id."""
    return hass.data.setdefault(DATA_PENDING, {})


@dataclass(frozen=True, slots=True)
class Risk:
    """Why a call waits for a yes: every device it acts on, and those that need the yes."""

    targets: tuple[Target, ...]
    risky: tuple[Target, ...]


# What happens to a call before it runs: it runs (None), waits for a yes (Risk), or is
# refused for the reason given.
Verdict = Risk | str | None


def call_gate(hass: HomeAssistant, toolbox: Toolbox, *, confirm: bool) -> Callable[[ToolCall], Awaitable[Verdict]]:
    """The check every call passes before it runs, on the devices it will act on
    (`targets`): held for the user's yes if one of them needs it (when `confirm`), refused
    if the user may not control one of them or if they cannot be known (fail closed)."""

    async def verdict(call: ToolCall) -> Verdict:
        if not toolbox.writes(call.name):
            return None
        try:
            targets = tuple(await toolbox.async_targets(call))
        except UnresolvedError as err:
            return str(err)
        context = toolbox.llm_context.context if toolbox.llm_context else None
        if targets and context is not None and context.user_id is not None:
            # BotPsy's own tools check this when they run; HA's intents would act on the
            # devices the user may control and fail on the others: all or nothing.
            user = await hass.auth.async_get_user(context.user_id)
            allowed = user.permissions.check_entity if user else lambda _entity_id, _policy: False
            if denied := [t.name for t in targets if not allowed(t.entity_id, POLICY_CONTROL)]:
                return f"the user is not allowed to control {', '.join(denied)}"
        risky = tuple(t for t in targets if needs_confirmation(t.domain, t.service, t.device_class))
        return Risk(targets, risky) if confirm and risky else None

    return verdict


def _asked(target: Target) -> str:
    """The action as a question says it: "unlock Front Door", "open Garage Door", "disarm
    Home Alarm", "set the position of Driveway Gate" (the service without its domain)."""
    verb, *rest = [w for w in target.service.split("_") if w not in {target.domain, "alarm"}]
    if verb == "set" and rest:
        return f"set the {' '.join(rest)} of {target.name}"
    return " ".join([verb, *rest, target.name])


def hold_for_confirmation(
    hass: HomeAssistant,
    chat_log: conversation.ChatLog,
    held: Sequence[tuple[ToolCall, Risk]],
    phrases: Phrases | None = None,
) -> str:
    """Hold the calls for this conversation; the question that asks the user about all of
    them (a question: the conversation stays open), in the request's language (`phrases`,
    else English)."""
    pending = []
    asked = []
    for call, risk in held:
        snapshots = tuple(snapshot(s) if (s := hass.states.get(t.entity_id)) else None for t in risk.risky)
        pending.append(PendingAction(call, risk.targets, risk.risky, snapshots, _user_id(chat_log)))
        asked += [_asked(t) for t in risk.risky]
    pending_actions(hass)[chat_log.conversation_id] = tuple(pending)
    if phrases is not None:
        return phrases.asked((t.domain, t.service, t.name) for _call, risk in held for t in risk.risky)
    return f"To be safe, I ask first: do you want me to {' and '.join(asked)}?"


def _names(targets: Sequence[Target]) -> str:
    return " and ".join(dict.fromkeys(t.name for t in targets))


async def async_answer_pending(
    hass: HomeAssistant, chat_log: conversation.ChatLog, agent_id: str, utterance: str, language: str = "en"
) -> str | None:
    """Act on the call held in this conversation, if `utterance` answers it: the reply that
    says what was done, or None where the utterance answers nothing.

    Anything but a yes or a no is another request, and the held call is dropped. A turn
    of another user in the same conversation answers nothing: it is a request of its own,
    and the held call waits for the user who asked.
    """
    held = pending_actions(hass)
    pending = held.get(chat_log.conversation_id, ())
    if not pending or any(p.user_id != _user_id(chat_log) for p in pending):
        return None
    del held[chat_log.conversation_id]
    risky = [t for p in pending for t in p.risky]
    english = reads_english(language)
    phrases = None if english else await async_phrases(hass, language, {t.domain for p in pending for t in p.targets})
    if not is_confirmation(utterance, language):
        if is_refusal(utterance, language):
            are = "they are" if len(risky) > 1 else "it is"
            left = (
                phrases.say("left_as_is", names=_names(risky)) if phrases else f"OK, I left {_names(risky)} as {are}."
            )
            return left
        return None
    toolbox = Toolbox.from_api(hass, chat_log.llm_api)
    sentences = []
    calls = []
    before: dict[str, State] = {}
    for action in pending:
        # The devices the call acts on now, resolved as when it was asked for.
        try:
            now = tuple(await toolbox.async_targets(action.call))
        except UnresolvedError:
            now = ()
        if {t.entity_id for t in now} != {t.entity_id for t in action.targets}:
            sentences.append(f"What that acts on changed since you asked, so I did not act on {_names(action.risky)}.")
            continue
        states = [hass.states.get(t.entity_id) for t in action.risky]
        if changed := [
            f"{t.name} changed since you asked (it is now {s.state if s else 'gone'})"
            for t, s, then in zip(action.risky, states, action.snapshots, strict=True)
            if s is None or snapshot(s) != then
        ]:
            sentences.append(f"{', '.join(changed)}, so I did not act.")
            continue
        before |= {t.entity_id: s for t in now if (s := hass.states.get(t.entity_id)) is not None}
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
        outcomes = [intent_outcome(hass, r, before) or r for r in results]
        sentences.append(phrases.done(outcomes) if phrases else describe(outcomes))
    return " ".join(sentences)
