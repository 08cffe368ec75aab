"""Base entity of BotPsy's agents: the request path from chat log to executed calls and reply.

utterance -> shortlist of entities -> prompt (the model's chat template, tools in it) ->
generation under a grammar compiled from the shortlisted tools -> parse calls -> the
ChatLog runs them through the LLM API (validation, HA's checks, execution) -> reply that
says what changed, built from the results, or the model's own text answer.

The prompt is a stable prefix (instructions and every tool, the same for each request
while the home's structure and the agent's options stay the same; prefilled in the
background, see `prefix_warmup`) and a dynamic suffix: the history, then the turn with
the clock and the shortlisted devices' states. Earlier turns render as they were sent, so
a follow-up extends the previous prompt (see `turns`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field, replace
import json
import re
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import (
    area_registry as ar,
    chat_session,
    device_registry as dr,
    llm,
    template as ha_template,
)
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.json import json_dumps
import probatio

from . import BotPsyConfigEntry
from .actions import async_check, live_state
from .confirmation import PendingAction, pending_actions, snapshot
from .const import (
    CONF_CONFIRM_RISKY,
    CONF_ENGINE,
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_MAX_TOOL_ROUNDS,
    CONF_N_CTX,
    CONF_PROMPT,
    CONF_TEMPERATURE,
    DEFAULT_CONFIRM_RISKY,
    DEFAULT_MAX_HISTORY,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_N_CTX,
    DEFAULT_TEMPERATURE,
    DOMAIN,
    ENGINE_EMBEDDED,
    LOGGER,
)
from .core.engine import Engine, EngineError, Finished, GenerateRequest, TextDelta, Timings, ToolCallDelta
from .core.formats import CallFormat, ParsedOutput, ToolCall, detect_format
from .core.grammar import compile_grammar
from .core.home import Home
from .core.json_grammar import json_schema_grammar
from .core.policy import is_confirmation, is_question, is_refusal, needs_confirmation
from .core.prompt import turn_text
from .core.reply import describe, describe_states
from .core.requested import NAMES_NOTHING, Named, named_in
from .core.shortlist import restrict, shortlist
from .core.tools import ACTION, Tool, function_schemas, home_vocabulary, schema_tool
from .core.validate import CallRejectedError, validate_call
from .home_snapshot import exposed_entities
from .llm_api import CompiledTool
from .prefix_warmup import PrefixWarmup
from .stats import EngineStats
from .turns import ConversationPrompts, GenerationExtra, generation_extra

# HA ends the system prompt with the date and time (llm.DATE_TIME_PROMPT), which change
# every second: the line moves from the cacheable prefix into the request's own turn.
_CLOCK = re.compile(r"\nCurrent time is \d{2}:\d{2}:\d{2}\. Today's date is \d{4}-\d{2}-\d{2}\.")
# Tokens a prompt needs besides the tools: instructions, history, the turn and the answer.
TURN_RESERVE = 2048
# Stands for the user's turn when the prefix is rendered alone: the prefix ends where it is.
_TURN_SENTINEL = "\x00botpsy-turn\x00"


def split_clock(system: str) -> tuple[str, str]:
    """HA's system prompt without its date and time line, and the line."""
    match = _CLOCK.search(system)
    if match is None:
        return system, ""
    return system[: match.start()] + system[match.end() :], match.group().strip()


def chat_messages(
    chat_log: conversation.ChatLog,
    max_history: int,
    user_text: Callable[[conversation.UserContent], str] = lambda content: content.content,
) -> list[dict[str, Any]]:
    """The chat log as OpenAI-style messages, keeping the last `max_history` user turns.

    The system prompt comes without HA's clock line; user turns read `user_text`.
    """
    messages: list[dict[str, Any]] = []
    for content in chat_log.content:
        if isinstance(content, conversation.SystemContent):
            messages.append({"role": "system", "content": split_clock(content.content)[0]})
        elif isinstance(content, conversation.UserContent):
            messages.append({"role": "user", "content": user_text(content)})
        elif isinstance(content, conversation.ToolResultContent):
            payload = {"data": content.result.data, "error": content.result.error}
            messages.append({"role": "tool", "content": json_dumps(payload)})
        else:
            message: dict[str, Any] = {"role": "assistant", "content": content.content or ""}
            if content.tool_calls:
                message["tool_calls"] = [
                    {"type": "function", "function": {"name": c.tool_name, "arguments": c.tool_args}}
                    for c in content.tool_calls
                ]
            messages.append(message)
    user_turns = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if max_history > 0 and len(user_turns) > max_history:
        first_kept = user_turns[-max_history]
        system = [m for m in messages[:1] if m["role"] == "system"]
        messages = system + messages[first_kept:]
    return messages


@dataclass(slots=True)
class Toolbox:
    """The tools of one request: BotPsy's compiled ones and any others (HA's Assist API)."""

    compiled: list[Tool] = field(default_factory=list)
    others: list[llm.Tool] = field(default_factory=list)
    home: Home = field(default_factory=lambda: Home((), ()))
    # The other tools' JSON schemas (converted once), and the tools as the grammar writes
    # them; None if one of them cannot be.
    others_parameters: list[dict[str, Any]] = field(default_factory=list)
    others_grammar: list[Tool] | None = field(default_factory=list)

    @classmethod
    def from_api(cls, hass: HomeAssistant, api: llm.APIInstance | None) -> Toolbox:
        box = cls()
        for tool in api.tools if api else []:
            inner = tool.tool if isinstance(tool, llm.NamespacedTool) else tool
            if isinstance(inner, CompiledTool):
                box.compiled.extend(replace(compiled, name=tool.name) for compiled in inner.compiled)
                box.home = inner.home
            else:
                box.others.append(tool)
        if box.others:
            if not box.home.entities:  # for the shortlist and the names HA's intents take
                box.home = Home(exposed_entities(hass), ())
            vocabulary = home_vocabulary(box.home.entities)
            serializer = api.custom_serializer if api else None
            box.others_parameters = [
                probatio.to_openapi(t.parameters, custom_serializer=serializer) for t in box.others
            ]
            converted = [
                schema_tool(t.name, p, vocabulary) for t, p in zip(box.others, box.others_parameters, strict=True)
            ]
            box.others_grammar = [t for t in converted if t is not None] if None not in converted else None
        return box

    def for_request(self, entity_ids: Sequence[str], named: Named, *, read_only: bool = False) -> list[Tool]:
        """Compiled tools restricted to the shortlisted entities that fit what the request
        names (tools without targets stay); only those that read if `read_only`.

        For the grammar: the prompt shows every tool (`schemas`), the grammar only these.
        """
        fitting = [e for e in entity_ids if (entity := self.home.entity(e)) is None or named.fits(entity)]
        tools = [
            *(t for t in restrict(self.compiled, fitting) if t.read_only or not read_only),
            *(t for t in self.compiled if not t.targets),
        ]
        order = {t.key: i for i, t in enumerate(self.compiled)}
        return sorted(tools, key=lambda t: order[t.key])

    def unfit(self, call: ToolCall, named: Named) -> bool:
        """Whether `call` acts on a device that does not fit what the request names."""
        entity = self.home.entity(str(call.arguments.get("entity_id")))
        return _is_action(self.compiled, call.name) and entity is not None and not named.fits(entity)

    def nothing_fits(self, named: Named) -> bool:
        """Whether the request names an area, floor or kind of device, and no device that
        BotPsy can act on fits it."""
        if not (named.areas or named.floors or named.kinds) or not self.compiled:
            return False
        actionable = {e for t in self.compiled if not t.read_only for e in t.targets}
        return not any(named.fits(e) for e in self.home.entities if e.entity_id in actionable)

    def schemas(self, tools: Sequence[Tool] | None = None) -> list[dict[str, Any]]:
        """Every tool (or only `tools` of the compiled ones), in a fixed order and naming no
        entity: the same for every request."""
        result = function_schemas(self.compiled if tools is None else tools)
        for tool, parameters in zip(self.others, self.others_parameters, strict=True):
            function = {"name": tool.name, "description": tool.description or "", "parameters": parameters}
            result.append({"type": "function", "function": function})
        return result


def _is_action(tools: Sequence[Tool], name: str) -> bool:
    """A compiled device action (reported from its result, not by the model)."""
    return any(t.name == name and not t.read_only for t in tools)


class BotPsyLLMEntity(Entity):
    """An agent of one subentry, on its entry's engine."""

    _attr_has_entity_name = True
    _attr_name = None

    def __init__(self, entry: BotPsyConfigEntry, subentry: ConfigSubentry) -> None:
        self.entry = entry
        self.subentry = subentry
        self._attr_unique_id = subentry.subentry_id
        info = entry.runtime_data.engine.model_info
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="BotPsy",
            model=info.name if info else None,
            entry_type=dr.DeviceEntryType.SERVICE,
        )
        self._prompts = ConversationPrompts()
        # Keeps the engine warm for this agent's prompts (conversation agents set it).
        self.warmup: PrefixWarmup | None = None
        self._too_big_logged = False
        self._extra: tuple[object, GenerationExtra] = (None, GenerationExtra())

    @property
    def _engine(self) -> Engine:
        return self.entry.runtime_data.engine

    def _generation_extra(self) -> GenerationExtra:
        """The engine's template's generation extras (worked out once per template)."""
        template = self._engine.chat_template
        if template is None:
            return GenerationExtra()
        if self._extra[0] is not template:
            self._extra = (template, generation_extra(template))
        return self._extra[1]

    def _round(
        self,
        chat_log: conversation.ChatLog,
        toolbox: Toolbox,
        fmt: CallFormat,
        entity_ids: Sequence[str],
        *,
        with_tools: bool,
        read_only: bool = False,
        named: Named = NAMES_NOTHING,
    ) -> GenerateRequest:
        """The request of one generation round (calls allowed only if `with_tools`, and only
        BotPsy's reading ones if `read_only`).

        The prompt shows every tool in every round (a stable prefix); the grammar allows
        the shortlisted targets only, and no call at all when calls are not allowed. An
        engine without grammars gets no tools when calls are not allowed.
        """
        options = self.subentry.data
        template = self._engine.chat_template
        constrained = self._engine.supports_grammar and template is not None and toolbox.others_grammar is not None
        offered = bool(toolbox.compiled or toolbox.others) and (with_tools or constrained)
        tools = toolbox.for_request(entity_ids, named, read_only=read_only) if with_tools else []
        schemas = toolbox.schemas() if offered else []
        if not self._fits(schemas):
            schemas = toolbox.schemas(tools)
        if with_tools and toolbox.others_grammar:
            tools += toolbox.others_grammar
        grammar = compile_grammar(tuple(tools), fmt) if constrained and offered else None
        conversation_id = chat_log.conversation_id
        turn = next((c for c in reversed(chat_log.content) if isinstance(c, conversation.UserContent)), None)
        if turn is not None and self._prompts.user_text(conversation_id, turn) is None:
            # The dynamic suffix: clock and live states of the shortlisted entities, in the
            # turn itself, after the cacheable prefix. Fixed for the turn's rounds and for
            # later turns, so each prompt extends the one before.
            system = chat_log.content[0] if chat_log.content else None
            clock = split_clock(system.content)[1] if isinstance(system, conversation.SystemContent) else ""
            states = [
                (state, toolbox.home.entity(e)) for e in sorted(set(entity_ids)) if (state := live_state(self.hass, e))
            ]
            self._prompts.set_user_text(conversation_id, turn, turn_text(clock, states, turn.content))

        def user_text(content: conversation.UserContent) -> str:
            return self._prompts.user_text(conversation_id, content) or content.content

        messages = chat_messages(chat_log, int(options.get(CONF_MAX_HISTORY, DEFAULT_MAX_HISTORY)), user_text)
        decoding: dict[str, Any] = {
            "max_tokens": int(options.get(CONF_MAX_TOKENS, DEFAULT_MAX_TOKENS)),
            "temperature": float(options.get(CONF_TEMPERATURE, DEFAULT_TEMPERATURE)),
        }
        if template is None:
            return GenerateRequest(messages=messages, tools=schemas or None, **decoding)
        try:
            prompt = template.render(messages, tools=schemas or None)
        except EngineError as err:
            raise _failure("prompt_failed", err) from err
        prompt = self._prompts.extend(conversation_id, prompt, self._generation_extra())
        info = self._engine.model_info
        stop = (info.eos_token,) if info and info.eos_token else ()
        return GenerateRequest(prompt=prompt, stop=stop, grammar=grammar, **decoding)

    def _fits(self, schemas: list[dict[str, Any]]) -> bool:
        """Whether every tool fits a stable prefix, leaving TURN_RESERVE tokens for the turn,
        the history and the answer (at about three characters a token). Otherwise prompts
        show only the request's tools, and no prefix is reused (a home with many kinds of
        devices on a small context)."""
        if self.entry.data.get(CONF_ENGINE) == ENGINE_EMBEDDED:
            context = int(self.entry.data.get(CONF_N_CTX, DEFAULT_N_CTX))
        else:
            context = self._engine.model_info.context_length if self._engine.model_info else 0
        if not context or len(json_dumps(schemas)) <= 3 * (context - TURN_RESERVE):
            return True
        if not self._too_big_logged:
            self._too_big_logged = True
            LOGGER.info(
                "The tools of every exposed device take about %d tokens, too many for a context of %d: "
                "prompts show only each request's tools, and their prefix is not reused. A larger context "
                "size reuses it",
                len(json_dumps(schemas)) // 3,
                context,
            )
        return False

    async def async_stable_prefix(self) -> str | None:
        """The prompt's stable prefix, rendered exactly as a request renders it (instructions
        and tools, up to where the user's turn begins); None if the engine renders its own."""
        template = self._engine.chat_template
        if template is None:
            return None
        llm_context = llm.LLMContext(
            platform=DOMAIN,
            context=Context(),
            language=self.hass.config.language,
            assistant=conversation.DOMAIN,
            device_id=None,
        )
        api_ids = self.subentry.data.get(CONF_LLM_HASS_API) or None
        api = await llm.async_get_api(self.hass, api_ids, llm_context) if api_ids else None
        # As ChatLog.async_provide_llm_data builds it (no user name, no extra prompt),
        # less the clock line.
        instructions = ha_template.Template(
            self.subentry.data.get(CONF_PROMPT) or llm.DEFAULT_INSTRUCTIONS_PROMPT, self.hass
        ).async_render(
            {"ha_name": self.hass.config.location_name, "user_name": None, "llm_context": llm_context},
            parse_result=False,
        )
        system = "\n".join([instructions, api.api_prompt] if api else [instructions])
        toolbox = Toolbox.from_api(self.hass, api)
        schemas = toolbox.schemas()
        if not self._fits(schemas):
            return None
        messages = [{"role": "system", "content": system}, {"role": "user", "content": _TURN_SENTINEL}]
        rendered = template.render(messages, tools=schemas or None)
        cut = rendered.find(_TURN_SENTINEL)
        return rendered[:cut] if cut > 0 else None

    async def async_plan(self, text: str, context: Context, language: str | None) -> list[dict[str, Any]]:
        """The calls this agent would make for `text`, each validated; none is run."""
        user_input = conversation.ConversationInput(
            text=text,
            context=context,
            conversation_id=None,
            device_id=None,
            satellite_id=None,
            language=language or self.hass.config.language,
            agent_id=self.entity_id,
        )
        with (
            chat_session.async_get_chat_session(self.hass, None) as session,
            conversation.async_get_chat_log(self.hass, session, user_input) as chat_log,
        ):
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                self.subentry.data.get(CONF_LLM_HASS_API) or None,
                self.subentry.data.get(CONF_PROMPT),
                None,
            )
            toolbox = Toolbox.from_api(self.hass, chat_log.llm_api)
            template = self._engine.chat_template
            fmt = detect_format(template.source if template else None)
            entity_ids = shortlist(toolbox.home.entities, text)
            named = named_in(text, toolbox.home.entities)
            request = self._round(chat_log, toolbox, fmt, entity_ids, with_tools=True, named=named)
            output = ""
            try:
                async for event in self._engine.generate(request):
                    if isinstance(event, TextDelta):
                        output += event.text
            except EngineError as err:
                raise _failure("engine_error", err) from err
        tools = {t.key: t for t in toolbox.compiled}
        plan: list[dict[str, Any]] = []
        for call in fmt.parse(output).calls:
            step: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
            try:
                valid = validate_call(call, tools)
                await async_check(self.hass, valid, context)
            except CallRejectedError as err:
                plan.append({**step, "valid": False, "error": str(err)})
                continue
            risky = needs_confirmation(valid.domain, valid.tool.service, toolbox.home.entity(valid.entity_id))
            plan.append({**step, "arguments": valid.arguments, "valid": True, "needs_confirmation": risky})
        return plan

    def _area_of_device(self, chat_log: conversation.ChatLog) -> str | None:
        """The area of the device that heard the request (a voice satellite): "here"."""
        device_id = chat_log.llm_api.llm_context.device_id if chat_log.llm_api else None
        device = dr.async_get(self.hass).async_get(device_id) if device_id else None
        area = ar.async_get(self.hass).async_get_area(device.area_id) if device and device.area_id else None
        return area.name if area else None

    def _hold_rule(self, toolbox: Toolbox) -> Callable[[ToolCall], bool]:
        """Which calls wait for the user's confirmation (valid, high-impact ones)."""
        if not self.subentry.data.get(CONF_CONFIRM_RISKY, DEFAULT_CONFIRM_RISKY):
            return lambda _call: False
        tools = {t.key: t for t in toolbox.compiled}

        def hold(call: ToolCall) -> bool:
            try:
                valid = validate_call(call, tools)
            except CallRejectedError:
                return False  # runs (and is refused) like any invalid call
            return needs_confirmation(valid.domain, valid.tool.service, toolbox.home.entity(valid.entity_id))

        return hold

    async def _async_answer_pending(self, chat_log: conversation.ChatLog, utterance: str) -> bool:
        """Act on a call held for confirmation; True if this turn was about it."""
        pending = pending_actions(self.hass).pop(chat_log.conversation_id, None)
        if pending is None:
            return False
        if not is_confirmation(utterance):
            if is_refusal(utterance):
                await self._async_say(chat_log, f"OK, I left {pending.name} as it is.")
                return True
            return False  # another request: the held call is dropped
        state = self.hass.states.get(pending.entity_id)
        if state is None or snapshot(state) != pending.snapshot:
            now = state.state if state else "gone"
            await self._async_say(
                chat_log, f"{pending.name} changed since you asked (it is now {now}), so I did not act."
            )
            return True
        call = llm.ToolInput(tool_name=pending.call.name, tool_args=pending.call.arguments)

        async def confirmed() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
            yield {"role": "assistant", "tool_calls": [call]}

        results = [
            {**dict(content.result.data or {}), "name": content.tool_name}
            async for content in chat_log.async_add_delta_content_stream(self.entity_id, confirmed())
            if isinstance(content, conversation.ToolResultContent)
        ]
        await self._async_say(chat_log, describe(results))
        return True

    async def _async_ask_confirmation(self, chat_log: conversation.ChatLog, call: ToolCall) -> None:
        entity_id = str(call.arguments.get("entity_id"))
        state = self.hass.states.get(entity_id)
        name = state.name if state else entity_id
        pending_actions(self.hass)[chat_log.conversation_id] = PendingAction(
            call, entity_id, name, snapshot(state) if state else None
        )
        # "unlock", "open" (open_cover), "disarm" (alarm_disarm): the action without its domain.
        noise = {entity_id.partition(".")[0], "alarm"}
        words = str(call.arguments.get(ACTION) or call.name.split("__")[-1]).split("_")
        action = " ".join(w for w in words if w not in noise)
        await self._async_say(chat_log, f"To be safe, I ask first: do you want me to {action} {name}?")

    async def _async_handle_chat_log(self, chat_log: conversation.ChatLog, utterance: str) -> None:
        """Answer the chat log's last turn: calls run through the ChatLog, then a reply."""
        if await self._async_answer_pending(chat_log, utterance):
            return
        rounds = int(self.subentry.data.get(CONF_MAX_TOOL_ROUNDS, DEFAULT_MAX_TOOL_ROUNDS))
        toolbox = Toolbox.from_api(self.hass, chat_log.llm_api)
        hold = self._hold_rule(toolbox)
        template = self._engine.chat_template
        fmt = detect_format(template.source if template else None)
        recent = [
            str(call.tool_args.get("entity_id"))
            for content in chat_log.content
            if isinstance(content, conversation.AssistantContent)
            for call in content.tool_calls or ()
        ]
        # A follow-up ("and the other one?") is about what the last turns named too.
        earlier = [c.content for c in chat_log.content if isinstance(c, conversation.UserContent)][-3:-1]
        entity_ids = list(shortlist(toolbox.home.entities, " ".join([*earlier, utterance]), recent=recent))
        results: list[dict[str, Any]] = []
        ran: set[str] = set()  # every call run this turn: a repeat is not run again
        question = is_question(utterance)
        here = self._area_of_device(chat_log)
        named = named_in(utterance, toolbox.home.entities, here=here, recent=recent)
        if named.nothing and earlier:
            # Names nothing and points at nothing ("turn them off"): about the turns before.
            named = named_in(" ".join(earlier), toolbox.home.entities, here=here, recent=recent)
        if not question and toolbox.nothing_fits(named):
            await self._async_say(chat_log, f"I found no {named.describe()} that I can control, so I did nothing.")
            return
        for round_number in range(rounds + 1):
            failed = [r for r in results if r.get("error") and _is_action(toolbox.compiled, r["name"])]
            if round_number == rounds and failed:
                break
            # A question, once something was read, is answered with what was read.
            if question and (facts := describe_states(results)):
                await self._async_say(chat_log, facts)
                return
            with_tools = round_number < rounds and not (question and results)
            request = self._round(
                chat_log, toolbox, fmt, entity_ids, with_tools=with_tools, read_only=question, named=named
            )
            # After a failed action, text is held back: it could claim what did not happen.
            # The last round allows no calls: those the model still writes are not run.
            turn = _Turn(
                fmt,
                self.entry.runtime_data.stats,
                stream_text=not failed,
                hold=hold,
                allow_calls=with_tools,
                ran=ran,
                # Whatever the model writes, a question runs no action,
                # and no action on a device that does not fit what the request names.
                refuse=lambda call: (question and _is_action(toolbox.compiled, call.name))
                or toolbox.unfit(call, named),
            )
            async for content in chat_log.async_add_delta_content_stream(
                self.entity_id, turn.stream(self._engine, request)
            ):
                if isinstance(content, conversation.ToolResultContent):
                    data: dict[str, Any] = dict(content.result.data or {})
                    results.append({**data, "name": content.tool_name})
                    # What the search found can be acted on in the next round.
                    entity_ids += [str(found["entity_id"]) for found in data.get("entities") or []]
            if request.prompt is not None:
                self._prompts.record(chat_log.conversation_id, request.prompt, turn.text)
            chat_log.async_trace(turn.trace())
            if self.warmup is not None and request.prompt is not None and turn.timings is not None:
                self.warmup.async_served(request.prompt, turn.timings)
            LOGGER.debug(
                "Request %r, round %d: %d entities shortlisted, grammar %d bytes, calls %s, held %s, results %s",
                utterance,
                round_number,
                len(entity_ids),
                len(request.grammar or ""),
                [(c.tool_name, c.tool_args) for c in turn.calls],
                turn.held,
                results[len(results) - len(turn.calls) :] if turn.calls else [],
            )
            if turn.held:
                # Whatever else ran is reported with the question.
                done = [r for r in results[len(results) - len(turn.calls) :] if _is_action(toolbox.compiled, r["name"])]
                if done:
                    await self._async_say(chat_log, describe(done))
                await self._async_ask_confirmation(chat_log, turn.held[0])
                return
            if not turn.calls:
                if not failed and turn.parsed is not None and turn.parsed.errors and not turn.parsed.content:
                    await self._async_say(chat_log, "Sorry, I could not make sense of the model's answer.")
                    return
                break
            new = results[-len(turn.calls) :]
            actions = [r for r in new if _is_action(toolbox.compiled, r["name"])]
            # Only BotPsy's own actions, all done: say what changed. Reads, HA's intent
            # tools and failures go back to the model for another round.
            if actions and len(actions) == len(new) and not any(r.get("error") for r in new):
                await self._async_say(chat_log, describe(actions))
                return
        actions = [r for r in results if _is_action(toolbox.compiled, r["name"])]
        if actions:
            await self._async_say(chat_log, describe(actions))
        elif not isinstance(chat_log.content[-1], conversation.AssistantContent) or not chat_log.content[-1].content:
            await self._async_say(chat_log, "Sorry, I could not finish that request.")

    async def _async_generate_text(self, chat_log: conversation.ChatLog, json_schema: dict[str, Any] | None) -> str:
        """One round without tools (JSON matching `json_schema` if given), streamed into the log."""
        template = self._engine.chat_template
        fmt = detect_format(template.source if template else None)
        request = self._round(chat_log, Toolbox(), fmt, (), with_tools=False)
        if json_schema is not None:
            # Our grammar spells out ranges; llama.cpp's converter (or the server's) covers the rest.
            grammar = json_schema_grammar(json_schema) if self._engine.supports_grammar else None
            request = replace(request, grammar=grammar) if grammar else replace(request, json_schema=json_schema)
        turn = _Turn(None, self.entry.runtime_data.stats)  # no tools: all of it is the answer
        async for _content in chat_log.async_add_delta_content_stream(
            self.entity_id, turn.stream(self._engine, request)
        ):
            pass
        if request.prompt is not None:
            self._prompts.record(chat_log.conversation_id, request.prompt, turn.text)
        return turn.parsed.content if turn.parsed else ""

    async def _async_say(self, chat_log: conversation.ChatLog, text: str) -> None:
        async def reply() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
            yield {"role": "assistant", "content": text}

        async for _content in chat_log.async_add_delta_content_stream(self.entity_id, reply()):
            pass


class _Turn:
    """One generation: streams plain text as it comes, holds back and parses calls."""

    def __init__(
        self,
        fmt: CallFormat | None,
        stats: EngineStats,
        *,
        stream_text: bool = True,
        hold: Callable[[ToolCall], bool] = lambda _call: False,
        allow_calls: bool = True,
        ran: set[str] | None = None,
        refuse: Callable[[ToolCall], bool] = lambda _call: False,
    ) -> None:
        self.fmt = fmt
        self._ran = ran if ran is not None else set()
        self._refuse = refuse
        self.allow_calls = allow_calls
        self.stats = stats
        self.stream_text = stream_text
        self._hold = hold
        self.held: list[ToolCall] = []
        self.text = ""  # the model's whole output
        self.parsed: ParsedOutput | None = None
        self.timings: Timings | None = None
        self.calls: list[llm.ToolInput] = []

    def trace(self) -> dict[str, Any]:
        """The round for the conversation's trace: token figures as HA's AI integrations
        report them, and model output that could not be used."""
        details: dict[str, Any] = {}
        if (t := self.timings) is not None:
            details["stats"] = {
                "input_tokens": t.prompt_tokens,
                "cached_input_tokens": t.cached_tokens,
                "output_tokens": t.decoded_tokens + t.forced_tokens,
            }
        if self.parsed is not None and self.parsed.errors:
            details["format_errors"] = list(self.parsed.errors)
        return details

    async def stream(
        self, engine: Engine, request: GenerateRequest
    ) -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant"}
        started = time.monotonic()
        text = ""
        sent = 0
        server_calls: list[ToolCall] = []
        try:
            async for event in engine.generate(request):
                if isinstance(event, TextDelta):
                    text += event.text
                    # Stream what cannot be (the start of) a call.
                    limit = self.fmt.shown_length(text) if self.fmt else len(text)
                    if limit > sent and self.stream_text:
                        yield {"content": text[sent:limit]}
                        sent = limit
                elif isinstance(event, ToolCallDelta):
                    server_calls.append(ToolCall(event.name, _arguments(event.arguments)))
                elif isinstance(event, Finished):
                    LOGGER.debug("Generation finished (%s): %s", event.reason, event.timings.as_dict())
                    self.stats.async_record(event.timings, time.monotonic() - started)
                    self.timings = event.timings
        except EngineError as err:
            LOGGER.error("BotPsy engine error: %s", err)
            self.stats.async_record_error(str(err))
            raise _failure("engine_error", err) from err
        self.text = text
        self.parsed = self.fmt.parse(text) if self.fmt else ParsedOutput(content=text.strip())
        if self.parsed.errors:
            LOGGER.debug("Unusable calls in model output: %s", self.parsed.errors)
        limit = self.fmt.shown_length(text, final=True) if self.fmt else len(text)
        if limit > sent and self.stream_text:
            yield {"content": text[sent:limit]}
        calls: list[ToolCall] = []
        for call in self.parsed.calls + server_calls if self.allow_calls else []:
            if (signature := json_dumps([call.name, call.arguments])) in self._ran or self._refuse(call):
                continue  # the same call again (a small model's loop, its result is known), or not allowed
            self._ran.add(signature)
            (self.held if self._hold(call) else calls).append(call)
        if calls:
            self.calls = [llm.ToolInput(tool_name=c.name, tool_args=c.arguments) for c in calls]
            yield {"tool_calls": self.calls}


def _failure(key: str, err: EngineError) -> HomeAssistantError:
    """The engine's error as a translated one, for the user."""
    return HomeAssistantError(
        translation_domain=DOMAIN, translation_key=key, translation_placeholders={"error": str(err)}
    )


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_unparsed": raw}
    return value if isinstance(value, dict) else {"_unparsed": raw}
