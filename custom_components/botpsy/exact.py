"""Requests that HA's own sentences read exactly, as BotPsy's calls, without the model.

HA's intent matching (hassil over home-assistant-intents, strict: the home's exposed
names, aliases, areas and floors as they are) reads "turn off the lights in the kitchen"
as HassTurnOff of the kitchen's lights; HA's handler decides which devices that is and
what each gets (`targets`, its own code stopped before it acts). Those become calls of
BotPsy's own tools, one a device, and run as the model's calls run: validated, held for
the asker's yes where one is needed, reported by what changed. This is the Assist
pipeline's "prefer handling commands locally" for LLM agents, inside the agent, so that
automations and AI tasks get it too. A reading BotPsy cannot call exactly (a handler
of its own, a device without that action, a value the action does not take) is left to
the model whole: nothing of it runs.

A request HA's sentences do not read whole may join several it reads ("turn off the
hall light and switch on the kettle"): each part is read on its own (a part without a
verb takes the one before it: "... and the kettle"), and only if every part reads as an
action, each as exactly, do they run together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
import re

from homeassistant.components import conversation
from homeassistant.components.conversation.agent_manager import get_agent_manager
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import intent, llm

from botpsy_runtime.formats import ToolCall

from .core.tools import ACTION, Tool
from .core.validate import CallRejectedError, find_tool, validate_call
from .language import QUESTION_INTENTS, TIMER_INTENTS, Recognized, async_recognize, joined_parts
from .service_calls import async_state_said
from .targets import Target, UnresolvedError, async_intent_targets
from .toolbox import Toolbox


async def async_exact_calls(
    hass: HomeAssistant, toolbox: Toolbox, recognized: Recognized | None, llm_context: llm.LLMContext | None
) -> list[ToolCall] | None:
    """BotPsy's calls for what HA's sentences read in the request; None if they read no
    action, or one BotPsy's own tools cannot make exactly as HA would."""
    if recognized is None or recognized.intent is None or recognized.intent in QUESTION_INTENTS:
        return None
    if llm_context is None or not toolbox.compiled:
        return None
    try:
        targets = await async_intent_targets(hass, recognized.intent, recognized.values, llm_context)
    except UnresolvedError:
        return None
    tools = {t.key: t for t in toolbox.compiled}
    calls: list[ToolCall] = []
    for target in targets:
        try:
            calls.append(ToolCall(target.domain, validate_call(_call_of(target, tools), tools).arguments))
        except CallRejectedError:
            return None
    return calls or None


def _call_of(target: Target, tools: Mapping[str, Tool]) -> ToolCall:
    """The call of BotPsy's tools that does what HA's handler does to `target`: its data
    as the tools take it (a colour as a list: HA's is a named tuple), and a light given
    only what it can take ("the upstairs lights to 13 %" switches an on/off light on:
    HA's lights drop the rest, `filter_turn_on_params`)."""
    data = {key: list(value) if isinstance(value, tuple) else value for key, value in target.data.items()}
    call = ToolCall(target.domain, {ACTION: target.service, "entity_id": target.entity_id, **data})
    if target.domain != "light":
        return call
    try:
        params = {p.name for p in find_tool(call, tools).targets.get(target.entity_id, ())}
    except CallRejectedError:
        return call  # refused as it is
    return ToolCall(call.name, {k: v for k, v in call.arguments.items() if k in (ACTION, "entity_id") or k in params})


@dataclass(frozen=True, slots=True)
class Heard:
    """A request as HA's sentences hear it: the words, their language, HA's reading of the
    whole (None where it reads none), and who asks from which device."""

    utterance: str
    language: str
    recognized: Recognized | None
    llm_context: llm.LLMContext | None
    context: Context | None = None
    # A request HA's sentences do not read whole, joining several ("X and Y"): each part,
    # with HA's reading of it (see `_async_read_parts`).
    parts: tuple[tuple[str, Recognized | None], ...] = ()


# Slots that say where or what a reading acts on; a reading with none acts on a kind of
# device wherever the asker is (the satellite's area) or everywhere.
_PLACING = ("name", "area", "floor")
_VERB_BEFORE = ("name", "area", "floor", "domain", "device_class")


async def async_exact_request(hass: HomeAssistant, toolbox: Toolbox, heard: Heard) -> list[ToolCall] | None:
    """BotPsy's calls for the request as HA's sentences read it: the whole, or every part
    it joins; None where any of it is not read exactly."""
    llm_context = heard.llm_context
    if heard.recognized is not None and heard.recognized.intent is not None:
        return await async_exact_calls(hass, toolbox, heard.recognized, llm_context)
    readings = [reading for _part, reading in heard.parts if reading is not None and reading.intent is not None]
    if len(readings) < 2 or len(readings) < len(heard.parts) or llm_context is None:
        return None
    # "Turn on the lights and the fan in the bedroom": the lights are the bedroom's too,
    # which a part read alone would not say.
    placed = [any(r.slots.get(slot) for slot in _PLACING) for r in readings]
    if any(placed) and not all(placed):
        return None
    calls: list[ToolCall] = []
    for reading in readings:
        part_calls = await async_exact_calls(hass, toolbox, reading, llm_context)
        if part_calls is None:
            return None
        calls += part_calls
    return calls


async def async_heard(hass: HomeAssistant, heard: Heard) -> Heard:
    """`heard`, with its parts where HA's sentences do not read it whole but it may join
    several requests that they read apart."""
    if heard.recognized is None or heard.recognized.intent is not None:
        return heard
    return replace(heard, parts=await _async_read_parts(hass, heard))


async def _async_read_parts(hass: HomeAssistant, heard: Heard) -> tuple[tuple[str, Recognized | None], ...]:
    """The parts a request joins ("X and Y", "X, then Y"), each with HA's reading of it as
    an action (its intent, or unrecognised: the intents its first word starts; None for
    a question); none where it joins nothing."""
    parts = joined_parts(heard.utterance, heard.language)
    if len(parts) < 2:
        return ()
    readings: list[tuple[str, Recognized | None]] = []
    verb = ""
    for part in parts:
        reading, own = await _async_read_part(hass, part, verb, heard)
        readings.append((part, reading))
        # A part read with the verb before it has none of its own: "los focos" of "Apaga
        # el plafón, los focos y la cafetera" leaves "Apaga" the verb (its article was taken
        # for one, and "la cafetera" alone was switched on).
        if own and reading is not None and reading.intent is not None:
            verb = _verb_of(part, reading) or verb
    return tuple(readings)


async def _async_read_part(hass: HomeAssistant, part: str, verb: str, heard: Heard) -> tuple[Recognized | None, bool]:
    """HA's reading of one part as an action: with the verb of the part before it ("the
    kettle" after "turn on the hall light"; that verb's last word, an article, left out
    where the part brings its own), else as said. The verb comes first: HA reads a bare
    name as switching it on. Unrecognised: what its own verb starts, else what the verb
    before it starts ("éteins la guirlande" after "ouvre les volets" is no opening).
    With it, whether the part was read as said (not with the verb before it)."""
    tried = [f"{verb} {part}", f"{verb.rsplit(maxsplit=1)[0]} {part}" if " " in verb else ""] if verb else []
    tried.append(part)
    device_id = heard.llm_context.device_id if heard.llm_context else None
    first: Recognized | None = None
    own: Recognized | None = None
    for number, text in enumerate(filter(None, tried)):
        reading = await async_recognize(hass, text, heard.language, device_id=device_id, context=heard.context)
        if reading is not None and reading.intent is not None:
            return (None if reading.question else reading), text == part
        first = reading if number == 0 else first
        own = reading  # the part as said is tried last
    unread = own if own is not None and own.services else first
    return (None if unread is None or unread.question else unread), unread is own


def _verb_of(part: str, reading: Recognized) -> str:
    """The words of `part` before what its reading names ("turn on the" of "turn on the
    hall light"); empty where none of its slots' words are found in it."""
    folded = part.casefold()
    found = [folded.find(text.casefold()) for slot in _VERB_BEFORE if (text := reading.texts.get(slot, "").strip())]
    starts = [i for i in found if i > 0]
    return part[: min(starts)].strip() if starts else ""


# A value missing from HA's own response template, as Python writes it.
_UNFILLED = re.compile(r"\bNone\b")


async def async_exact_answer(hass: HomeAssistant, chat_log: conversation.ChatLog, heard: Heard) -> str | None:
    """HA's own answer to a question its sentences read exactly ("is the kitchen window
    open?", "how many lights are on?", the weather): its intents that only read, handled
    as the Assist pipeline handles them locally, and said in the request's language with
    HA's own responses. None where HA reads no question or cannot answer it. A timer
    ("set a timer for five minutes") is HA's to start, stop or change for the device that
    asks, as its own agent does; where that device has no timers HA says so."""
    if heard.recognized is None:
        return None
    timer = heard.recognized.intent in TIMER_INTENTS
    if not timer and heard.recognized.intent not in QUESTION_INTENTS:
        return None
    # HA's sentences read "what's the weather?" in a home that has no weather entity, whose
    # intent is then not registered: HA would answer "Unknown intent HassGetWeather".
    if not any(handler.intent_type == heard.recognized.intent for handler in intent.async_get(hass)):
        return None
    agent = get_agent_manager(hass).default_agent
    if agent is None:
        return None
    user_input = conversation.ConversationInput(
        text=heard.utterance,
        context=heard.context or Context(),
        conversation_id=chat_log.conversation_id,
        device_id=heard.llm_context.device_id if heard.llm_context else None,
        satellite_id=None,
        language=heard.language,
        agent_id=conversation.HOME_ASSISTANT_AGENT,
    )
    handled = QUESTION_INTENTS | TIMER_INTENTS
    response = await agent.async_handle_intents(
        user_input, chat_log, intent_filter=lambda result: result.intent.name not in handled
    )
    # Not where HA's response could not fill a value ("None °C" for a weather service with
    # no reading): BotPsy reads the state itself.
    if (
        response is None
        or (response.response_type is intent.IntentResponseType.ERROR and not timer)
        or _UNFILLED.search(speech := str(response.speech.get("plain", {}).get("speech") or "").strip())
    ):
        return None
    states = [*response.matched_states, *response.unmatched_states]
    if speech and heard.recognized.slots.get("state") and len(speech.split()) == 1 and len(states) == 1:
        # "Non" to "is the kitchen window open?": and how it is, as HA's frontend says it.
        said = await async_state_said(hass, states[0], heard.language) or states[0].state
        speech = f"{speech.rstrip('.')}, {states[0].name}: {said}."
    return speech or None
