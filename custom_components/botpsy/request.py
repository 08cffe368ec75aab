"""One request to a BotPsy agent, from the user's words to the reply, in the order it runs.

1. `async_handle_request`: a yes or no to a held call answers it (`confirmation`), an undo
   puts the last turn back (`undo`; a correction puts it back and goes on), and HA's own
   intent matching reads the words (`language`, `exact.async_heard`);
2. `Scope.of`: what the request is about, the shortlisted entities and what it names
   (devices, areas, floors, kinds; "here" is the satellite's area);
3. calls without the model: what HA's sentences read exactly (`exact`), or what a
   follow-up says with the turn before (`follow_ups`); else an answer without the model:
   `Scope.early_answer` (no device fits, none named, which of several) or `_async_read`
   (a question about a list, a calendar, a forecast or a few devices of a kind);
4. `_async_rounds`, each round: the prompt (`PromptBuilder`, stable prefix, the home's
   states block + the user's words) ->
   the engine generates under a grammar compiled from the tools that fit (`Generation`)
   -> calls parsed, refused or held for confirmation -> run through the ChatLog (the
   tools validate them against our schema, HA's service schema, exposure and the user's
   permissions, then HA executes them: `llm_api`, `service_calls`);
5. the reply: what changed (`describe`), the states a question read (`describe_states`),
   or the model's own text, streamed as it came.

`async_plan` walks the same path up to validation and runs nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from functools import partial
import re
from typing import TYPE_CHECKING, Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import area_registry as ar, chat_session, device_registry as dr, llm
from homeassistant.util import dt as dt_util

from botpsy_runtime.engine import GenerateRequest, TextDelta
from botpsy_runtime.errors import EngineError
from botpsy_runtime.formats import CallFormat, ToolCall, detect_format

from .confirmation import Risk, async_answer_pending, call_gate, hold_for_confirmation
from .const import (
    CONF_CONFIRM_RISKY,
    CONF_MAX_TOOL_ROUNDS,
    CONF_PREFER_LOCAL_INTENTS,
    CONF_PROMPT,
    DEFAULT_CONFIRM_RISKY,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_PREFER_LOCAL_INTENTS,
    DOMAIN,
    LOGGER,
)
from .core.follow_up import asks_its_own_action, is_again, meant, relative_change, said_by_name, says_an_action
from .core.home import HomeEntity
from .core.policy import (
    as_asked,
    asks_both_ways,
    is_acknowledgement,
    is_question,
    is_undo,
    reply_to_nothing,
    undoes_only_a_change,
)
from .core.reply import describe, describe_states
from .core.requested import (
    NAMES_NOTHING,
    Named,
    level_words,
    muted_as_said,
    named_by_every_word,
    named_in,
    said_fraction,
)
from .core.shortlist import shortlist
from .core.validate import CallRejectedError, validate_call
from .exact import Heard, async_exact_answer, async_exact_request, async_heard
from .follow_ups import acted, follow_up_calls, turns
from .generation import CallPolicy, Generation, async_say, engine_failure
from .language import (
    asked_services,
    async_recognize,
    chat_language,
    in_another_script,
    joined_parts,
    named_parts,
    outdoors,
    read_in_language,
    reads_english,
    said_share,
    says_value,
)
from .phrases import Phrases, async_phrases
from .prompt_builder import RoundCalls
from .service_calls import async_check, intent_outcome, intent_successes
from .targets import UnresolvedError, intent_tool
from .toolbox import Toolbox, is_action
from .undo import async_undo, corrects, last_changes, puts_back_by_name

if TYPE_CHECKING:
    from .entity import BotPsyLLMEntity


async def async_handle_request(agent: BotPsyLLMEntity, chat_log: conversation.ChatLog, utterance: str) -> None:
    """Answer the chat log's last turn: calls run through the ChatLog, then the reply, said
    here and nowhere else (None: the model's streamed text is the reply)."""
    reply, scope = await _async_reply(agent, chat_log, utterance)
    if reply:
        await async_say(chat_log, agent.entity_id, reply)
    # A follow-up starts with this turn's history: the engine evaluates it meanwhile.
    if (
        scope is not None
        and agent.warmup is not None
        and (prefix := agent.prompts.next_turn_prefix(chat_log, scope.toolbox))
    ):
        agent.warmup.async_prefill_conversation(prefix)


async def _async_reply(
    agent: BotPsyLLMEntity, chat_log: conversation.ChatLog, utterance: str
) -> tuple[str | None, Scope | None]:
    """The request's path, top-down: its reply, and the scope it was read in (None where
    it answered a held confirmation or undid the conversation's changes)."""
    language = chat_language(agent.hass, chat_log)
    if (answer := await async_answer_pending(agent.hass, chat_log, agent.entity_id, utterance, language)) is not None:
        return answer, None
    if (is_undo(utterance) and (last_changes(chat_log)[0] or not undoes_only_a_change(utterance))) or puts_back_by_name(
        agent.hass, chat_log, utterance
    ):
        undone = await async_undo(agent.hass, chat_log, _context(chat_log))
        return undone or "I have changed nothing in this conversation to undo.", None
    if reads_english(language):
        # "How about switching on the fan?" asks for it (read as a question, nothing acted).
        utterance = as_asked(utterance)
    # "No, I meant the bedside lamp": the last action was on the wrong device; it is put
    # back, and the request is what the words name now.
    context = _context(chat_log)
    correction = corrects(agent.hass, chat_log, utterance)
    # ... and, where it says another device and no action of its own ("wrong lamp, I
    # meant the one by the sofa"), the devices it acted on are not the one meant.
    other = correction and not asks_its_own_action(utterance)
    changed = frozenset(str(c["entity_id"]) for c in last_changes(chat_log)[0]) if correction else frozenset()
    wrong = changed if other else frozenset()
    undone = await async_undo(agent.hass, chat_log, context) if correction else None
    llm_context = chat_log.llm_api.llm_context if chat_log.llm_api else None
    prefer_local = bool(agent.subentry.data.get(CONF_PREFER_LOCAL_INTENTS, DEFAULT_PREFER_LOCAL_INTENTS))
    # HA's intent matching reads the request where BotPsy's word rules cannot, and where
    # what it reads exactly is done without the model.
    recognized = (
        await async_recognize(
            agent.hass,
            utterance,
            language,
            device_id=llm_context.device_id if llm_context else None,
            context=context,
        )
        if prefer_local or not reads_english(language)
        else None
    )
    heard = await async_heard(agent.hass, Heard(utterance, language, recognized, llm_context, context))
    scope = Scope.of(agent.hass, chat_log, heard, wrong)
    scope.restored = changed if undone else frozenset()
    if prefer_local and scope.pointed and (recognized is None or recognized.intent is None):
        heard = await _async_heard_by_name(agent.hass, heard, scope.pointed)
    if not scope.english:
        scope.phrases = await async_phrases(agent.hass, language, {e.domain for e in scope.toolbox.home.entities})
    # What HA's own sentences read exactly is done as they read it (see `exact`); a
    # follow-up that the turn before says exactly, as it says it (see `follow_ups`).
    exact = await async_exact_request(agent.hass, scope.toolbox, heard) if prefer_local and not scope.answers else None
    if exact is None and not scope.answers and not (recognized and recognized.question):
        exact = follow_up_calls(agent.hass, chat_log, scope, correction=correction)
    # A question HA's sentences read exactly gets HA's own answer (see `exact`).
    reply = await async_exact_answer(agent.hass, chat_log, heard) if prefer_local and not exact else None
    if reply is None and not exact:
        reply = scope.early_answer()
    if reply is None and not exact and (holder := scope.holder_asked_about()) is not None:
        reply = await _async_read(agent, chat_log, scope, [holder])
    if reply is None and not exact and (readings := scope.readings_asked()):
        reply = await _async_read(agent, chat_log, scope, readings)
    if reply is None:
        reply = await _async_rounds(agent, chat_log, scope, exact)
        # In a bigger home, the states block shows what requests were about lately.
        agent.prompts.remember(scope.named.entity_ids | _targets_of_turn(chat_log))
    if undone:  # the reply says both (HA speaks the turn's last words)
        last = chat_log.content[-1]
        streamed = last.content if reply is None and isinstance(last, conversation.AssistantContent) else None
        reply = f"{undone} {reply or streamed or ''}".strip()
    return reply, scope


def _levels_said(named: Named, utterance: str, continued: list[str], entities: tuple[HomeEntity, ...]) -> Named:
    """`named`, with whether (and which) level an English request says. A level it does not
    say is not written ("turn on the floor lamp and the reading light": the 0.5B set both
    to 100 %, and the one on at 50 % changed), nor by a part of it that says none ("turn on
    the lamp and set the fan to 40 %"); a follow-up that goes on with the request
    `continued` ("and the bedroom too", "the one in the office", "no, the other lamp")
    says the level that one said. A share said in words ("down to a quarter") is that
    share: the 0.5B set 80 %. The names and options of the devices it may mean say no
    level (`level_words`)."""

    def says_a_level(text: str, of: Named) -> bool:
        # Most requests say no value at all: the home's devices are read only for those that do.
        if not says_value(text, "en"):
            return False
        meant = [e for e in entities if of.fits(e)] if of.entity_ids or of.kinds or of.areas else []
        return says_value(level_words(text, meant), "en")

    levels = any(says_a_level(text, named) for text in [utterance, *continued])
    parts = tuple(replace(part, levels=levels and says_a_level(part.words, part)) for part in named.parts)
    share = said_fraction(utterance) if named.share is None else named.share
    if share is None and not parts and relative_change(utterance) is None and not _BY_AMOUNT.search(utterance):
        # "The nursery humidifier on 45 percent": the one number said in percent is the
        # share set, as in the other languages (the 0.5B switched the humidifier on).
        share = said_share(utterance, "en")
    return replace(named, levels=levels, parts=parts, share=share)


# "Dim it by 20 %": an amount of a change, not the level.
_BY_AMOUNT = re.compile(r"\bby\s+\d", re.IGNORECASE)


def _pointed_at(named: Named, utterance: str, toolbox: Toolbox, here: str | None) -> HomeEntity | None:
    """The one device a request is about that its words point at and do not name ("switch it
    on then"): what the conversation was about."""
    if len(named.entity_ids) != 1 or named.areas or named.floors or named.kinds:
        return None
    alone = named_in(utterance, toolbox.home.entities, here=here)
    if alone.entity_ids or alone.areas or alone.floors or alone.kinds or alone.partly:
        return None
    return toolbox.home.entity(next(iter(named.entity_ids)))


async def _async_heard_by_name(hass: HomeAssistant, heard: Heard, name: str) -> Heard:
    """ "Switch it on then", after "is the desk lamp on?": the request as HA's sentences
    read it with the device it points at said by its `name`; `heard` if they do not."""
    if (said := said_by_name(heard.utterance, name)) is None:
        return heard
    device_id = heard.llm_context.device_id if heard.llm_context else None
    reading = await async_recognize(hass, said, heard.language, device_id=device_id, context=heard.context)
    return replace(heard, utterance=said, recognized=reading) if reading and reading.intent else heard


@dataclass(slots=True)
class Scope:
    """What a request is about: its tools, shortlisted entities, what it names, and
    whether it is a question (which reads and never acts)."""

    utterance: str
    toolbox: Toolbox
    entity_ids: list[str]
    named: Named
    question: bool
    # Whether BotPsy's own word rules read the request (they are written in English).
    english: bool = True
    # The wording of the request's language where it is not English (else BotPsy's own).
    phrases: Phrases | None = None
    # Whether it joins several requests ("X et Y") that BotPsy's word rules cannot tell
    # apart (another language): the model may write a call for each.
    joined: bool = False
    # ... and what each of them names, where each names something: the model is asked
    # for one at a time, and may act on nothing else (a small model otherwise does the
    # first, or the first's action on both).
    parts: tuple[Named, ...] = ()
    # The area of the device that heard it ("here").
    here: str | None = None
    # Whether it answers the agent's "which do you mean?" ("the bedroom one"): what it
    # names is the devices asked about, not what HA's sentences would make of its words.
    answers: bool = False
    # The forecast, calendar or list the turn before read, if that is all it did.
    holder_read: str | None = None
    # Of a correction: the devices the turn before acted on, which were not the ones meant.
    wrong: frozenset[str] = frozenset()
    # Of a question about outdoors ("Wie kalt ist es draußen?"): what tells of it.
    outside: frozenset[str] = frozenset()
    # The name of the one device its words point at ("switch it on then") and do not name.
    pointed: str | None = None
    # Of a correction: the devices its undo put back before it acts again.
    restored: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        hass: HomeAssistant,
        chat_log: conversation.ChatLog,
        heard: Heard,
        wrong: frozenset[str] = frozenset(),
    ) -> Scope:
        """What the request `heard` is about in this conversation; a follow-up reads the
        turns before it too. `wrong`: the devices a correction says were not meant."""
        utterance, language, recognized = heard.utterance, heard.language, heard.recognized
        correction = corrects(hass, chat_log, utterance)
        toolbox = Toolbox.from_api(hass, chat_log.llm_api)
        recent = [entity_id for content in chat_log.content for entity_id in _devices_of(content)]
        # "Turn it off", "make them dimmer": what the latest turn about any device was about.
        before = turns(chat_log)
        last = next((found for turn in reversed(before) if (found := [e for c in turn for e in _devices_of(c)])), [])
        # A follow-up ("and the other one?") is about what the last turns named too.
        earlier = [c.content for c in chat_log.content if isinstance(c, conversation.UserContent)][-3:-1]
        shortlisted = shortlist(toolbox.home.entities, " ".join([*earlier, utterance]), recent=recent)
        entity_ids = [e for e in shortlisted if e not in wrong]
        here = _area_of_device(hass, chat_log)
        named = named_in(utterance, toolbox.home.entities, here=here, recent=last)
        answer = None
        if earlier and _asked_which(chat_log):
            # The answer to "which one?" ("the one in the office", "both", "the second"):
            # what the request before it named, narrowed by the answer.
            answer = _answer_to_which(toolbox, earlier[-1], utterance, here, recent)
            named = answer or named
        elif last and correction and named_in(meant(utterance), toolbox.home.entities).nothing:
            # "Wrong one, I meant the one over the table": another device of the kind acted on.
            named = replace(NAMES_NOTHING, domains=frozenset(e.partition(".")[0] for e in last))
        elif named.nothing and earlier:
            # Names nothing and points at nothing ("turn them off"): about the turns before.
            named = named_in(" ".join(earlier), toolbox.home.entities, here=here, recent=recent)
        if earlier and recent and _OTHER.search(utterance):
            named = _the_other(toolbox, named, recent) or named
        if reads_english(language) and not answer and (excepted := _ALL_BUT.search(utterance)):
            named = _all_but(toolbox, utterance, excepted, here) or named
        if not reads_english(language):
            # BotPsy's word rules read English: HA's intent matching reads this language
            # (what it names, and whether it asks); unrecognised, the names said and a
            # question mark.
            if recognized is not None and recognized.said is not None:
                named = recognized.said.named(named, toolbox.home.entities, here)
            named, question = read_in_language(utterance, named, toolbox.home.entities, recognized, language)
            outside = outdoors(utterance, language, toolbox.home.entities) if question else frozenset()
            if named.entity_ids or named.areas or named.floors:
                outside = frozenset()
            if outside:
                # "Wie kalt ist es draußen?": the weather, or the outdoor sensors.
                named = replace(NAMES_NOTHING, entity_ids=outside)
                entity_ids = [*sorted(outside), *(e for e in entity_ids if e not in outside)]
            joined = len(joined_parts(utterance, language)) > 1
            whole = asked_services(utterance, recognized, language) if recognized is not None else ()
            return cls(
                utterance,
                toolbox,
                entity_ids,
                named,
                question,
                english=False,
                joined=joined,
                parts=()
                if question or answer
                else named_parts(heard.parts, toolbox.home.entities, here, language, whole),
                here=here,
                answers=bool(answer),
                wrong=wrong,
                outside=outside,
            )
        continued = earlier[-1:] if answer or correction or is_again(utterance) else []
        named = _levels_said(named, utterance, continued, toolbox.home.entities)
        # "And after that?", after a turn that only read: asked of what that turn read.
        read_before = bool(last) and not acted(before[-1])
        # "Sorry, I meant Monday" after a reading corrects the question, not an action.
        asked_again = utterance.rstrip().endswith("?") or correction
        asked_on = read_before and asked_again and not says_an_action(utterance)
        asked_on = asked_on and named.entity_ids <= set(last)
        question = is_question(utterance) or asked_on
        # The one forecast, calendar or list that turn read.
        holders = {e for e in last if e.partition(".")[0] in CONTENT_DOMAINS}
        holder = next(iter(holders)) if read_before and len(set(last)) == len(holders) == 1 else None
        places = named.entity_ids or named.areas or named.floors
        one = _pointed_at(named, utterance, toolbox, here)
        return cls(
            utterance,
            toolbox,
            entity_ids,
            named,
            question,
            here=here,
            answers=bool(answer),
            holder_read=holder,
            wrong=wrong,
            outside=outdoors(utterance, "en", toolbox.home.entities) if question and not places else frozenset(),
            pointed=one.name if one else None,
        )

    def early_answer(self) -> str | None:
        """The answer given without the model, to a request for an action that no device
        fits, that names nothing, or that could mean one of several devices; None if
        the model is asked (always in a language the rules do not read)."""
        if self.question or not self.english:
            return None
        # "Leave it there" is about the heating, and asks nothing of it ("good night" may
        # run a routine: the model's).
        if is_acknowledgement(self.utterance):
            return reply_to_nothing(self.utterance)
        if self.toolbox.nothing_fits(self.named):
            return f"I found no {self.named.describe()} that I can control, so I did nothing."
        if self.named.nothing:
            return reply_to_nothing(self.utterance)
        if several := self.toolbox.one_of_several(self.named):
            # Devices of the same name are told apart by their areas.
            repeated = {e.name for e in several if [o.name for o in several].count(e.name) > 1}
            names = [f"{e.name} in the {e.area}" if e.name in repeated and e.area else e.name for e in several]
            listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) <= 5 else ", ".join(names[:5]) + "…"
            return f"{WHICH} {self.named.describe(several)} do you mean: {listed}?"
        return None

    def said_done(self, results: list[dict[str, Any]]) -> str:
        """What the calls did, in the request's language. A call that found its device as
        the correction's undo left it is no news ("set the heat pump to 24", "sorry, I
        meant 22": it was 22; "Put back" says it, not "was already 22: nothing changed")."""
        results = [r for r in results if not self._restored_as_asked(r)]
        if not results:
            return ""
        return self.phrases.done(results) if self.phrases else describe(results)

    def _restored_as_asked(self, result: dict[str, Any]) -> bool:
        unchanged = not (result.get("error") or result.get("changes") or result.get("intent"))
        return unchanged and (result.get("arguments") or {}).get("entity_id") in self.restored

    def said_states(self, results: list[dict[str, Any]]) -> str:
        """The states a question read, in the request's language."""
        if self.phrases:
            return self.phrases.states(results, self.utterance if self.question else "")
        return describe_states(results, days_asked(self.utterance, dt_util.now().date()))

    def sorry(self, key: str, english: str) -> str:
        """A failure said in the request's language (BotPsy's phrase `key`)."""
        return self.phrases.say(key) if self.phrases else english

    def readings_asked(self) -> list[str]:
        """Of a question that names a kind of device in a place and no device of its own
        ("what is the temperature in the office?", "are the blinds upstairs open?"): every
        device of the kind there, as HA's intents read a kind in a place
        (`Named.all_that_fit`), when they are at most MAX_READINGS; else none, and the model
        reads (as it does when one of them has no reader, see `_async_read`). Asked only
        where HA's own sentences gave no answer."""
        named = self.named
        if not self.question or not named.kinds or not (named.areas or named.floors):
            return []
        if named.entity_ids or named.partly or self.outside:
            return []
        fitting = [e.entity_id for e in self.toolbox.home.entities if named.fits(e)]
        return fitting if len(fitting) <= MAX_READINGS else []

    def holder_asked_about(self) -> str | None:
        """The one to-do list, calendar or weather entity a question is about ("what's on my
        shopping list?", "will it rain tomorrow?"), or the one device that tells of
        outdoors, if it can be only one: it is read at once, as the model would read it
        (a small model reads the wrong thing there)."""
        if not self.question:
            return None
        if len(self.outside) == 1:  # the one device that tells of outdoors
            return next(iter(self.outside))
        holders = [e for e in self.toolbox.home.entities if e.domain in CONTENT_DOMAINS]
        named = self.named
        # "How cold will it get that day?" after the forecast: the forecast again; so for
        # "and the humidity?" after the weather, where no device of the home is what it asks about.
        about_it = not (named.areas or named.floors) and named.entity_ids <= {self.holder_read}
        if self.holder_read and about_it and (_LATER.search(self.utterance) or self._only_about(self.holder_read)):
            return self.holder_read
        if self.named.domains and self.named.domains <= CONTENT_DOMAINS:
            # Its words say the kind ("what's it like outside?"), whatever "it" was before.
            fitting = [e for e in holders if e.domain in self.named.domains]
        elif (
            not (named.entity_ids or named.areas or named.floors)
            and set(named.kinds) <= _FORECAST_KINDS
            and _LATER.search(self.utterance)
            and _FORECAST.search(self.utterance)
        ):
            # "What's the lowest it'll get over the next few days?", "how cold will it get on
            # Sunday?" (no thermostat tells what is to come): what a forecast tells.
            fitting = [e for e in holders if e.domain == "weather"]
        elif not (named.entity_ids or named.areas or named.floors or named.kinds or named.domains) and (
            _WHEN.match(self.utterance) or _ON_A_DAY.search(self.utterance)
        ):
            # "When is the dentist?", "is the dentist tomorrow?", naming no device: what a
            # calendar tells.
            fitting = [e for e in holders if e.domain == "calendar"]
        elif (
            not (named.entity_ids or named.areas or named.floors or named.kinds or named.domains)
            and (_TO_DO.search(self.utterance) or _BUYING.search(self.utterance))
            and not _WEEKDAY.search(self.utterance)
        ):
            # "What do I still have to do?", "what do I need from the shops?", naming no list:
            # a to-do list (which of several: below; a day's plans are a calendar's: not read here).
            fitting = [e for e in holders if e.domain == "todo"]
        elif self.named.entity_ids:
            fitting = [e for e in holders if e.entity_id in self.named.entity_ids]
            if len(fitting) != len(self.named.entity_ids):
                return None  # it is about other devices too
        else:
            return None
        said = self.utterance
        if len(fitting) > 1 and (_BUYING.search(said) or _TO_DO.search(said) or _TO_DO_LIST.search(said)):
            # Of several lists, "what do I need to buy?" is about the shopping list (HA's "the
            # list"); "what do I still have to do?", "my to-do list" about the others (the
            # 0.5B read a fan there, the 1.5B the shopping list).
            buying = bool(_BUYING.search(said))
            fitting = [e for e in fitting if e.domain == "todo" and _for_buying(e) == buying]
        return fitting[0].entity_id if len(fitting) == 1 else None

    def _only_about(self, holder: str) -> bool:
        """Whether the request only says what it asks of `holder`, read the turn before ("and
        the humidity?"): no other device of the home fits it."""
        others = (e for e in self.toolbox.home.entities if e.entity_id != holder)
        return bool(_ELLIPTIC.match(self.utterance)) and not any(map(self.named.fits, others))

    def refuses(self, call: ToolCall, named: Named) -> bool:
        """Whether `call` may not run: an action for a question, or on a device that does
        not fit what the request (or the part of it being done) names."""
        wrong = str(call.arguments.get("entity_id")) in self.wrong and self.toolbox.writes(call.name)
        return (self.question and self.toolbox.writes(call.name)) or wrong or self.toolbox.unfit(call, named)


# Words of a question about what comes later, which a forecast or a calendar tells.
_DAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_LATER = re.compile(
    rf"\b(?:will|going to|that day|then|after that|tomorrow|tonight|later|next|weekend|this week|{_DAYS})\b|'ll\b",
    re.I,
)
# Words of what is left to do ("what do I have to do?", "any jobs left?").
_TO_DO = re.compile(
    r"\b(?:have|need|got|left|still)\s+to\s+do\b|\bthings\s+(?:left\s+)?to\s+do\b"
    r"|\b(?:jobs|tasks)\b(?=.*\b(?:left|do|open|outstanding|pending|due)\b)",  # not "what things are on?"
    re.I,
)
# Words of buying, and of the list of what to buy.
_BUYING = re.compile(r"\b(?:buy|shops?|shopping|stores?|supermarkets?|groceries|grocery)\b", re.I)
_FOR_BUYING = re.compile(r"shop|grocer", re.I)


def _for_buying(entity: HomeEntity) -> bool:
    """Whether a to-do list is the list of what to buy (by its name or id)."""
    return bool(_FOR_BUYING.search(f"{entity.name} {entity.entity_id}"))


# "My to-do list", "the todo list", "my to-dos": a list of what to do, not to buy.
_TO_DO_LIST = re.compile(r"\bto[- ]?do(?:[- ]?lists?|s)\b", re.I)
# A question of when something is ("when's the dentist?", "what time is the meeting?").
_WHEN = re.compile(
    r"^\W*(?:when(?:'s|\s+(?:is|are|was|do|does|will))|what\s+(?:time|day)\s+(?:is|are|does|do))\b"
    r"(?!\s+(?:it|today|now)\b)",  # "what time is it?" is no event's
    re.I,
)
_WEEKDAY = re.compile(rf"\b({_DAYS}|today|tonight|tomorrow|weekend)\b", re.I)
_WEEKDAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def days_asked(text: str, today: date) -> frozenset[date]:
    """The dates a question asks of: "tomorrow", "on Sunday" (the next one), "the weekend"."""
    days: set[date] = set()
    for word in (w.lower() for w in _WEEKDAY.findall(text)):
        if word in ("today", "tonight", "tomorrow"):
            days.add(today + timedelta(days=word == "tomorrow"))
            continue
        weekdays = (5, 6) if word == "weekend" else (_WEEKDAY_NAMES.index(word[:3]),)
        days |= {today + timedelta(days=(weekday - today.weekday()) % 7) for weekday in weekdays}
    return frozenset(days)


# ... or of what is on a day ("is the dentist tomorrow?").
_ON_A_DAY = re.compile(
    rf"\b(?:today|tonight|tomorrow|this (?:morning|afternoon|evening|week|weekend)|next week|{_DAYS})\b", re.I
)
# A question that says only what it asks after a turn that read ("and the humidity?").
_ELLIPTIC = re.compile(r"^\W*(?:and|what about|how about)\b", re.I)
# ... and words of what a forecast tells of it.
_FORECAST = re.compile(r"\b(?:cold|warm|hot|low|high|freez|frost|degree|temperature)\w*", re.I)
# ... and the kinds of device such words name, which tell only of now.
_FORECAST_KINDS = frozenset({"temperature", "humidity"})
# Domains whose entities hold what their state does not tell (items, a forecast, events).
CONTENT_DOMAINS = frozenset({"todo", "calendar", "weather"})


async def _async_read(
    agent: BotPsyLLMEntity, chat_log: conversation.ChatLog, scope: Scope, entity_ids: list[str]
) -> str | None:
    """Read `entity_ids` with BotPsy's get_state through the chat log (calls like the
    model's, run by HA's LLM API); the answer is what was read. None, and nothing read, if
    any of them has no reader."""
    calls = [
        llm.ToolInput(tool_name=tool.name, tool_args={"entity_id": entity_id})
        for entity_id in entity_ids
        if (tool := scope.toolbox.reader(entity_id)) is not None
    ]
    if len(calls) < len(entity_ids) or chat_log.llm_api is None:
        return None
    results = [
        {"name": r.tool_name, **(r.result.data if isinstance(r.result.data, dict) else {})}
        async for r in chat_log.async_add_assistant_content(
            conversation.AssistantContent(agent.entity_id, tool_calls=calls)
        )
    ]
    return scope.said_states(results) or None


# The most devices a question is answered about without the model (each is said).
MAX_READINGS = 6
# How the question that asks which device begins (answered in the next turn).
WHICH = "Which"
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1}
# An answer that names which of them it does not mean: the words it names them by.
_EXCEPT = re.compile(
    r"(?:\b(?:not|except(?: for)?|apart from|other than|besides)|\b(?:all|everything|anything|every one|all of them)"
    r"\s+but)\s+(?:for\s+)?(.+?)(?=[,;.!?]|\bbut\b|$)",
    re.IGNORECASE,
)


def _asked_which(chat_log: conversation.ChatLog) -> bool:
    """Whether the agent's last words asked which device was meant."""
    said = [c for c in chat_log.content if isinstance(c, conversation.AssistantContent) and c.content]
    last = said[-1].content or "" if said else ""
    return last.startswith(f"{WHICH} ") and "do you mean" in last


def _answer_to_which(toolbox: Toolbox, asked: str, answer: str, here: str | None, recent: list[str]) -> Named | None:
    """What a request named, narrowed by the answer to "which do you mean?": by a place or a
    name ("the one in the office"), by its place in the list ("the second one"), all of
    them ("both"), or all but those it excepts ("not the office one"); None if the answer
    narrows nothing (then it is a request of its own)."""
    before = named_in(asked, toolbox.home.entities, here=here, recent=recent)
    listed = toolbox.one_of_several(before)
    if not listed:
        return None
    ids = frozenset(e.entity_id for e in listed)

    def fitting(said: str) -> frozenset[str]:
        """Those listed that `said` names: by a place or a name, else by a word of one name."""
        narrowed = named_in(f"{asked} {said}", toolbox.home.entities, here=here, recent=recent)
        fits = frozenset(e.entity_id for e in listed if narrowed.fits(e))
        return (named_in(said, listed).closest or fits) if fits == ids else fits

    said = answer.lower().replace(",", " ").split()
    ordinal = next((_ORDINALS[w] for w in said if w in _ORDINALS), None)
    # "Not the kids room, the other two", "all except the office one": those left, or of
    # them those the rest of the answer names.
    if (excepted := _EXCEPT.search(answer)) and 0 < len(out := fitting(excepted[1])) < len(ids):
        rest = fitting(answer[: excepted.start()] + " " + answer[excepted.end() :]) - out
        fitting_ids = rest if rest and len(rest) < len(ids - out) else ids - out
    elif ordinal is not None and -len(listed) <= ordinal < len(listed):
        return replace(before, entity_ids=frozenset({listed[ordinal].entity_id}), kinds=(), every=False)
    elif set(said) & {"both", "all", "every", "each"}:
        return replace(before, entity_ids=ids, kinds=(), every=True, anywhere=True)
    else:
        fitting_ids = fitting(answer)
    if not 0 < len(fitting_ids) < len(ids):
        return None
    # Those of the devices asked about that the answer names, and no other of their place.
    several = len(fitting_ids) > 1
    nowhere = frozenset[str]()
    return replace(
        before,
        entity_ids=fitting_ids,
        areas=nowhere,
        floors=nowhere,
        kinds=(),
        partly=nowhere,
        every=several,
        anywhere=several,
    )


_OTHER = re.compile(r"\bthe other\b", re.IGNORECASE)
# "All the lights except the reading light", "every blind but the office one", "... and
# leave the lamp on": what is left out of every device said.
_ALL_BUT = re.compile(
    r"(?:\b(?:except(?: for)?|apart from|other than|besides|save for|excluding|but(?: not)?(?: for)?)"
    r"|(?:,|\band)\s+(?:please\s+)?(?:leave|keep))\s+"
    r"(.+?)(?=[,;.!?]|$)",
    re.IGNORECASE,
)


def _all_but(toolbox: Toolbox, utterance: str, excepted: re.Match[str], here: str | None) -> Named | None:
    """A request for every device of a kind or place but some (the 0.5B switched off the one
    left out): each device it names without the clause, less those the clause names; None
    where it is not such a request."""
    entities = toolbox.home.entities
    whole = named_in(utterance[: excepted.start()] + utterance[excepted.end() :], entities, here=here)
    # "Everything but the night light" names no kind: every other one of the kind left out.
    everything = not (whole.all_that_fit or whole.entity_ids or whole.kinds or whole.domains)
    if not (whole.all_that_fit or everything):
        return None
    left_out = named_in(excepted[1], entities, here=here)
    fitting = {e.entity_id for e in entities if whole.fits(e)}
    # "Except the lamp" among the lounge lights, "but the kitchen one": those whose names
    # have the clause's words (every light is a lamp as a kind, and a speaker may be named
    # Kitchen); else every one of them the clause fits.
    out = named_by_every_word(excepted[1], (e for e in entities if e.entity_id in fitting)) or {
        e.entity_id for e in entities if e.entity_id in fitting and left_out.fits(e) and not left_out.nothing
    }
    return whole.all_but(fitting, out, of_their_kind=everything)


def _the_other(toolbox: Toolbox, named: Named, recent: list[str]) -> Named | None:
    """ "The other one", "no, the other lamp": the one device of the kind said (or of the
    last acted-on device's domain) that the conversation has not acted on, in the whole
    home or else in that device's area; None if that is not exactly one."""
    acted = [entity for e in recent if (entity := toolbox.home.entity(e)) is not None]
    if not acted:
        return None
    last = acted[-1]
    kinds = replace(named, entity_ids=frozenset(), every=False)
    left = [
        e
        for e in toolbox.actionable()
        if e.entity_id not in recent and (kinds.fits(e) if named.kinds else e.domain == last.domain)
    ]
    if len(left) > 1:
        left = [e for e in left if e.area == last.area]
    return Named(frozenset({left[0].entity_id}), frozenset(), frozenset(), ()) if len(left) == 1 else None


def _devices_of(content: conversation.Content) -> list[str]:
    """The devices one entry of the chat log is about: those BotPsy's calls name, and
    those an HA intent's result (its own answer, or an Assist tool's) says it matched,
    which its call names only by name or area."""
    if isinstance(content, conversation.AssistantContent):
        return [str(c.tool_args["entity_id"]) for c in content.tool_calls or () if "entity_id" in c.tool_args]
    if isinstance(content, conversation.ToolResultContent) and isinstance(result := content.result.data, dict):
        return [str(t.get("id")) for t in intent_successes(result, answers=True)]
    return []


def _targets_of_turn(chat_log: conversation.ChatLog) -> set[str]:
    """The devices the calls of the chat log's last turn were about."""
    targets: set[str] = set()
    for content in reversed(chat_log.content):
        if isinstance(content, conversation.UserContent):
            break
        targets.update(_devices_of(content))
    return targets


def _acted_on(result: dict[str, Any]) -> list[str]:
    """The entities one call's result says it acted on: BotPsy's action's device, or each
    device an HA intent reports success on."""
    if result.get("error"):
        return []
    if successes := intent_successes(result):
        return [str(t.get("id")) for t in successes]
    return [str(result["arguments"]["entity_id"])] if "entity_id" in result.get("arguments", {}) else []


def _context(chat_log: conversation.ChatLog) -> Context:
    """The request's context (who asks), as the tools get it."""
    api = chat_log.llm_api
    return api.llm_context.context if api and api.llm_context.context else Context()


def _area_of_device(hass: HomeAssistant, chat_log: conversation.ChatLog) -> str | None:
    """The area of the device that heard the request (a voice satellite): "here"."""
    device_id = chat_log.llm_api.llm_context.device_id if chat_log.llm_api else None
    device = dr.async_get(hass).async_get(device_id) if device_id else None
    area = ar.async_get(hass).async_get_area(device.area_id) if device and device.area_id else None
    return area.name if area else None


def _call_format(agent: BotPsyLLMEntity) -> CallFormat:
    template = agent.engine.chat_template
    return detect_format(template.source if template else None)


async def _async_rounds(
    agent: BotPsyLLMEntity, chat_log: conversation.ChatLog, scope: Scope, exact: list[ToolCall] | None = None
) -> str | None:
    """Generation rounds until the request is done; the reply (a confirmation's question
    too), or None if the model's text (already streamed) is the reply. `exact`: the
    first round's calls, as HA's sentences read the request (no model)."""
    rounds = _Rounds.start(agent, chat_log, scope)
    for number in range(rounds.limit + 1):
        # BotPsy's actions or HA's intents that failed (an intent HA refused is no less a failure).
        failed = rounds.failed()
        if number == rounds.limit and failed:
            break
        # A question, once something was read, is answered with what was read.
        if scope.question and (facts := scope.said_states(rounds.results)):
            return facts
        if exact is not None and number == 0:
            # HA's reading is whole: what it acts on is neither narrowed nor spread again.
            generation, request = Generation(rounds.fmt, agent.stats, rounds.policy), None
            stream = generation.stream_calls(exact)
        else:
            # After a failed action, text is held back: it could claim what did not happen.
            generation, request = rounds.generation(number, stream_text=not failed)
            stream = generation.stream(agent.engine, request)
        new, outcomes = await rounds.async_run(number, generation, request, stream)
        if generation.held:
            return rounds.ask(generation, new)
        if not generation.calls:
            parsed = generation.parsed
            if not failed and parsed is not None and parsed.errors and not parsed.content:
                return scope.sorry("no_sense", "Sorry, I could not make sense of the model's answer.")
            break
        if (reply := rounds.after(number, new, outcomes, has_request=request is not None)) is not None:
            return reply
    return rounds.reply_at_end()


@dataclass(slots=True)
class _Rounds:
    """The generation rounds of one request, and what they have done so far."""

    agent: BotPsyLLMEntity
    chat_log: conversation.ChatLog
    scope: Scope
    # Rounds with tools (one more may follow without them).
    limit: int
    fmt: CallFormat
    # The confirmation gate, and every call run this turn (a repeat is not run again).
    policy: CallPolicy
    # What is left to do: what the request names, or the rest of it after a round.
    named: Named
    # ... and the parts after it, of a request joining several in another language.
    parts_left: tuple[Named, ...] = ()
    results: list[dict[str, Any]] = field(default_factory=list)
    done: list[dict[str, Any]] = field(default_factory=list)  # HA's intents that acted, as our results say it
    said: list[dict[str, Any]] = field(default_factory=list)  # what earlier rounds did, when one does the rest

    @classmethod
    def start(cls, agent: BotPsyLLMEntity, chat_log: conversation.ChatLog, scope: Scope) -> _Rounds:
        """The rounds of a request, with the agent's options."""
        options = agent.subentry.data
        confirm = bool(options.get(CONF_CONFIRM_RISKY, DEFAULT_CONFIRM_RISKY))
        gate = call_gate(agent.hass, scope.toolbox, confirm=confirm)
        policy = CallPolicy(gate=gate, both_ways=asks_both_ways(scope.utterance))
        limit = int(options.get(CONF_MAX_TOOL_ROUNDS, DEFAULT_MAX_TOOL_ROUNDS))
        if scope.parts:  # one part at a time, the first first
            return cls(agent, chat_log, scope, limit, _call_format(agent), policy, scope.parts[0], scope.parts[1:])
        return cls(agent, chat_log, scope, limit, _call_format(agent), policy, scope.named)

    def failed(self) -> list[dict[str, Any]]:
        """BotPsy's actions or HA's intents that failed so far."""
        return [r for r in self.results if r.get("error") and self.scope.toolbox.writes(r["name"])]

    def shortlisted(self, named: Named) -> bool:
        """Whether the request names its devices by name alone, and each is shortlisted."""
        only = not (named.areas or named.floors or named.kinds)
        return only and bool(named.entity_ids) and named.entity_ids <= set(self.scope.entity_ids)

    def generation(self, number: int, *, stream_text: bool) -> tuple[Generation, GenerateRequest]:
        """Round `number`'s prompt, and what of the calls it writes may run."""
        scope, named = self.scope, self.named
        with_tools = number < self.limit and not (scope.question and self.results)
        calls = RoundCalls(
            scope.entity_ids,
            with_tools=with_tools,
            read_only=scope.question,
            named=named,
            # A request for an action on what fits it is answered by a call first: a
            # model that would rather explain the call (in text) makes it; so is the
            # rest of a request for several things.
            must_call=(number == 0 or named is not scope.named) and with_tools and not scope.question,
            # A request for one thing is one call (one for every device that fits is
            # spread over them), in any language: a small model otherwise writes it
            # again and again, or reads every area instead of acting.
            one_call=not (named.several or scope.question or (scope.joined and not scope.parts)),
            # A request whose words say its action on the devices it names, shortlisted ("add
            # tinned tomatoes to my list"), or a part of one joining several ("... und schalte
            # den Handtuchwärmer ein"), acts first: the 0.5B read the device instead (after
            # a turn that read it, again).
            acting=(named in scope.parts or (number == 0 and self.shortlisted(named)))
            and bool(named.services)
            and not scope.question,
            # The turn shows the states of what the whole request may act on or read (a
            # bigger home's shortlist is a dozen devices: ~300 tokens a request evaluates).
            shown=scope.toolbox.fitting(scope.entity_ids, scope.named, *scope.parts),
        )
        request = self.agent.prompts.round_request(self.chat_log, scope.toolbox, self.fmt, calls)
        # Whatever the model writes, a question runs no action, and no action on a device
        # that does not fit what the request names. The last round allows no calls: those
        # the model still writes are not run.
        policy = replace(
            self.policy,
            allow_calls=with_tools,
            refuse=partial(scope.refuses, named=named),
            spread=lambda call: scope.toolbox.spread(muted_as_said(call, scope.utterance), named),
        )
        return Generation(self.fmt, self.agent.stats, policy, stream_text=stream_text), request

    async def async_run(
        self,
        number: int,
        generation: Generation,
        request: GenerateRequest | None,
        stream: AsyncIterator[conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict],
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any] | None]]:
        """The round through the chat log (which runs its calls): its results, and the
        outcome of each (None where it did not do what was asked)."""
        agent, toolbox = self.agent, self.scope.toolbox
        # What HA's intents change is seen against the states before the round (BotPsy's
        # own tools report their changes themselves).
        before = (
            {e.entity_id: s for e in toolbox.home.entities if (s := agent.hass.states.get(e.entity_id))}
            if toolbox.others
            else {}
        )
        async for content in self.chat_log.async_add_delta_content_stream(agent.entity_id, stream):
            if isinstance(content, conversation.ToolResultContent):
                data: dict[str, Any] = dict(content.result.data or {})
                # HA's intents answer without the call's slots: the reply names what was asked.
                asked = next((c.tool_args for c in generation.calls if c.id == content.tool_call_id), {})
                self.results.append({"arguments": asked, **data, "name": content.tool_name})
                # What the search found can be acted on in the next round.
                self.scope.entity_ids += [str(found["entity_id"]) for found in data.get("entities") or []]
        if request is not None:
            agent.prompts.record(self.chat_log.conversation_id, request, generation.text)
            self.chat_log.async_trace(generation.trace())
            if agent.warmup is not None and request.prompt is not None and generation.timings is not None:
                agent.warmup.async_served(request.prompt, generation.timings)
        new = self.results[len(self.results) - len(generation.calls) :]
        LOGGER.debug(
            "Request %r, round %d: %d entities shortlisted, grammar %d bytes, calls %s, held %s, results %s",
            self.scope.utterance,
            number,
            len(self.scope.entity_ids),
            len(request.grammar or "") if request else 0,
            [(c.tool_name, c.tool_args) for c in generation.calls],
            generation.held,
            new,
        )
        ours = {r["name"] for r in new if is_action(toolbox.compiled, r["name"])}
        outcomes = [
            r if r["name"] in ours and not r.get("error") else intent_outcome(agent.hass, r, before) for r in new
        ]
        return new, outcomes

    def ask(self, generation: Generation, new: list[dict[str, Any]]) -> str:
        """Hold the calls the round held for the user's yes: the question, after what else
        the round did (one reply says both; HA speaks a turn's last words)."""
        scope = self.scope
        question = hold_for_confirmation(self.agent.hass, self.chat_log, generation.held, scope.phrases)
        if done := [r for r in new if is_action(scope.toolbox.compiled, r["name"])]:
            return f"{scope.said_done(done)} {question}"
        return question

    def after(
        self, number: int, new: list[dict[str, Any]], outcomes: list[dict[str, Any] | None], *, has_request: bool
    ) -> str | None:
        """After a round that ran calls: the reply, when its actions (BotPsy's, or HA's
        intents) all did what was asked and nothing is left; else None, and the next round
        does the rest or reads what failed."""
        self.done += [o for o in outcomes if o is not None and o.get("intent")]
        if not all(outcomes):
            return None
        self.said += [o for o in outcomes if o is not None]
        # "The kettle and the hall light", one call written: the next round does the rest.
        toolbox = self.scope.toolbox
        acted = [e for r in new for i in _acted_on(r) if (e := toolbox.home.entity(i)) is not None]
        rest = self.named.rest(acted, toolbox.actionable()) if number + 1 < self.limit and has_request else None
        if rest is None and self.parts_left and number + 1 < self.limit:
            rest, self.parts_left = self.parts_left[0], self.parts_left[1:]
        if rest is None:
            return self.scope.said_done(self.said)
        self.named = rest
        return None

    def reply_at_end(self) -> str | None:
        """The reply once no round is left or the model wrote no call: what the actions did,
        else None where the model's own text (streamed) is the reply."""
        toolbox = self.scope.toolbox
        # BotPsy's actions, and HA's intents that failed (those that acted are in `done`).
        writes = [
            r
            for r in self.results
            if is_action(toolbox.compiled, r["name"]) or (r.get("error") and toolbox.writes(r["name"]))
        ]
        if actions := writes + self.done:
            return self.scope.said_done(actions)
        last = self.chat_log.content[-1]
        language = self.scope.phrases.language if self.scope.phrases else "en"
        if not isinstance(last, conversation.AssistantContent) or not last.content:
            return self.scope.sorry("not_finished", "Sorry, I could not finish that request.")
        if in_another_script(last.content, language):
            return self.scope.sorry("not_finished", "Sorry, I could not finish that request.")
        return None


async def async_plan(agent: BotPsyLLMEntity, text: str, context: Context, language: str | None) -> list[dict[str, Any]]:
    """The calls `agent` would make for `text`, each validated; none is run."""
    user_input = conversation.ConversationInput(
        text=text,
        context=context,
        conversation_id=None,
        device_id=None,
        satellite_id=None,
        language=language or agent.hass.config.language,
        agent_id=agent.entity_id,
    )
    with (
        chat_session.async_get_chat_session(agent.hass, None) as session,
        conversation.async_get_chat_log(agent.hass, session, user_input) as chat_log,
    ):
        await chat_log.async_provide_llm_data(
            user_input.as_llm_context(DOMAIN),
            agent.subentry.data.get(CONF_LLM_HASS_API) or None,
            agent.subentry.data.get(CONF_PROMPT),
            None,
        )
        toolbox = Toolbox.from_api(agent.hass, chat_log.llm_api)
        fmt = _call_format(agent)
        entity_ids = shortlist(toolbox.home.entities, text)
        named = named_in(text, toolbox.home.entities)
        calls = RoundCalls(entity_ids, with_tools=True, named=named, shown=toolbox.fitting(entity_ids, named))
        request = agent.prompts.round_request(chat_log, toolbox, fmt, calls)
        output = ""
        try:
            async for event in agent.engine.generate(request):
                if isinstance(event, TextDelta):
                    output += event.text
        except EngineError as err:
            raise engine_failure("engine_error", err) from err
    tools = {t.key: t for t in toolbox.compiled}
    gate = call_gate(agent.hass, toolbox, confirm=True)
    plan: list[dict[str, Any]] = []
    for call in fmt.parse(output).calls:
        step: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
        try:
            if call.name in {t.name for t in toolbox.compiled}:
                valid = validate_call(call, tools)
                await async_check(agent.hass, valid, context)
                step["arguments"] = valid.arguments
            elif intent_tool(toolbox.others, call.name) is None:
                raise CallRejectedError(f"there is no function {call.name!r}")
            targets = await toolbox.async_targets(call)
            if not targets and toolbox.writes(call.name) and not is_action(toolbox.compiled, call.name):
                raise CallRejectedError(f"{call.name} matches no device that it can act on")
        except (CallRejectedError, UnresolvedError) as err:
            plan.append({**step, "valid": False, "error": str(err)})
            continue
        verdict = await gate(call)
        if isinstance(verdict, str):
            plan.append({**step, "valid": False, "error": verdict})
            continue
        step["targets"] = [t.entity_id for t in targets]
        plan.append({**step, "valid": True, "needs_confirmation": isinstance(verdict, Risk)})
    return plan
