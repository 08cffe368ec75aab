"""Each generation round's prompt: the chat log rendered with the model's own template.

The prompt is a stable prefix (instructions and every tool, the same for each request
while the home's structure and the agent's options stay the same), the home's states
block at the head of a conversation's first turn (the devices' states and the clock to
the minute), both prefilled in the background (see `prefix_warmup`), then the user's
words: a warm request evaluates about its own words. The block holds every device of a
small home; in a bigger one, the devices requests were about lately (a working set),
and a request about others adds the lines of those it may act on or read after the
clock, so that it evaluates them and its words only. Follow-up turns carry the states
of the devices they may concern.

An engine reuses the state of the prompt it last evaluated (and the tokens it generated)
up to the first token a new prompt changes. A follow-up turn therefore evaluates only
its own turn if its prompt starts with the previous prompt and the model's output:

- an earlier user turn keeps the text it was sent with (its device states and clock as
  they were then), not the current ones;
- templates that render earlier replies without the generation prompt's extras (Qwen's
  empty think block) get them back where the model saw them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
import re
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm, template as ha_template
from homeassistant.helpers.json import json_dumps
from homeassistant.util import dt as dt_util

from botpsy_runtime.chat_template import ChatTemplate, neutralize
from botpsy_runtime.engine import Engine, GenerateRequest
from botpsy_runtime.errors import EngineError
from botpsy_runtime.formats import CallFormat
from botpsy_runtime.lru_cache import LruCache

from . import BotPsyConfigEntry
from .const import (
    CONF_ENGINE,
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_N_CTX,
    CONF_PROMPT,
    CONF_TEMPERATURE,
    DEFAULT_MAX_HISTORY,
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_TEMPERATURE,
    DOMAIN,
    ENGINE_EMBEDDED,
    LOGGER,
)
from .core.grammar import compile_grammar, said_spans
from .core.prompt import DeviceLines, clock_line, device_line, first_turn, later_turn
from .core.requested import NAMES_NOTHING, Named
from .core.shortlist import SMALL_HOME
from .generation import engine_failure
from .service_calls import live_state
from .toolbox import Toolbox

# Conversations remembered per agent; older ones only lose the reuse of their history.
MAX_CONVERSATIONS = 32
# HA ends the system prompt with the date and time (llm.DATE_TIME_PROMPT), which change
# every second: the line leaves the system prompt, the states block has the clock to the minute.
_CLOCK = re.compile(r"\nCurrent time is \d{2}:\d{2}:\d{2}\. Today's date is \d{4}-\d{2}-\d{2}\.")
# Tokens a prompt needs besides the tools: instructions, history, the turn and the answer.
TURN_RESERVE = 2048
# Stands for the user's words when the prefix is rendered alone: the prefix ends where they begin.
_TURN_SENTINEL = "\x00botpsy-turn\x00"
_PROBE_USER = "\x01botpsy-user\x01"
_PROBE_REPLY = "\x01botpsy-reply\x01"


@dataclass(slots=True)
class _Conversation:
    user_texts: dict[tuple[datetime, str], str] = field(default_factory=dict)
    seen: str = ""  # the last prompt and the model's output, as the engine saw them
    # The device lines its turns showed, the latest per device: a later turn repeats a
    # line only where the state changed since.
    shown: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GenerationExtra:
    """What a template's generation prompt adds to the header of a reply in the history."""

    header: str = ""
    extra: str = ""


def generation_extra(template: ChatTemplate) -> GenerationExtra:
    """Compare the template's generation prompt with a rendered earlier reply."""
    user = {"role": "user", "content": _PROBE_USER}
    try:
        base = template.render([user], add_generation_prompt=False)
        prompt = template.render([user])
        # A reply followed by another user turn: history, as a follow-up renders it.
        reply = {"role": "assistant", "content": _PROBE_REPLY}
        history = template.render([user, reply, user], add_generation_prompt=False)
    except EngineError:
        return GenerationExtra()
    if not (prompt.startswith(base) and history.startswith(base)) or _PROBE_REPLY not in history:
        return GenerationExtra()
    generation = prompt[len(base) :]
    header = history[len(base) :].split(_PROBE_REPLY)[0]
    if not header or not generation.startswith(header):
        return GenerationExtra()
    return GenerationExtra(header, generation[len(header) :])


def _common_length(a: str, b: str) -> int:
    """Length of the longest common prefix (compared in blocks, then by character)."""
    length = 0
    step = 256
    limit = min(len(a), len(b))
    while step:
        while length + step <= limit and a[length : length + step] == b[length : length + step]:
            length += step
        step //= 4
    return length


class ConversationPrompts:
    """Per conversation: the user turns as sent, and what the engine last saw."""

    def __init__(self, size: int = MAX_CONVERSATIONS) -> None:
        self._conversations: LruCache[str, _Conversation] = LruCache(size)

    def _get(self, conversation_id: str) -> _Conversation:
        """The conversation's record (a new one if it has none), now the most recent."""
        if conversation_id not in self._conversations:
            self._conversations[conversation_id] = _Conversation()
        return self._conversations[conversation_id]

    def user_text(self, conversation_id: str, content: conversation.UserContent) -> str | None:
        """The text `content` was sent to the model with, if it was."""
        item = self._conversations.peek(conversation_id)
        return item.user_texts.get((content.created, content.content)) if item else None

    def set_user_text(
        self, conversation_id: str, content: conversation.UserContent, text: str, lines: dict[str, str]
    ) -> None:
        """The text `content` is sent with, and the device lines it shows."""
        item = self._get(conversation_id)
        item.user_texts[(content.created, content.content)] = text
        item.shown |= lines

    def unseen(self, conversation_id: str, lines: dict[str, str]) -> dict[str, str]:
        """Of `lines`, those the conversation has not shown as they are now."""
        shown = self._get(conversation_id).shown
        return {e: line for e, line in lines.items() if shown.get(e) != line}

    def record(self, conversation_id: str, prompt: str, output: str) -> None:
        """The engine evaluated `prompt` and generated `output`."""
        self._get(conversation_id).seen = prompt + output

    def extend(self, conversation_id: str, prompt: str, extra: GenerationExtra) -> str:
        """`prompt` with the generation prompt's extras back wherever the model saw them.

        Only inserted after a reply's header, where the last prompt had them and this one
        does not; any other difference is left as rendered.
        """
        item = self._conversations.peek(conversation_id)
        if item is None or not item.seen or not extra.extra:
            return prompt
        seen = item.seen
        while True:
            common = _common_length(seen, prompt)
            if common == len(seen):
                return prompt
            # The reply's header before the difference (which may be a few characters into
            # the extras: "<think>" and "<tool_call>" share their "<").
            cut = prompt.rfind(extra.header, 0, common) + len(extra.header)
            if (
                cut < len(extra.header)
                or cut < common - len(extra.extra)
                or not seen.startswith(extra.extra, cut)
                or prompt.startswith(extra.extra, cut)
            ):
                return prompt
            prompt = prompt[:cut] + extra.extra + prompt[cut:]


def without_clock(system: str) -> str:
    """HA's system prompt without its date and time line."""
    return _CLOCK.sub("", system, count=1)


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
            messages.append({"role": "system", "content": without_clock(content.content)})
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


def _with_examples(system: str, toolbox: Toolbox) -> str:
    """The system prompt with examples for other APIs' tools (HA's intents), which a small
    model otherwise confuses ("pause" written as HassTurnOff). BotPsy's API has its own."""
    return "\n".join([system, "Examples:", *toolbox.examples]) if toolbox.examples else system


@dataclass(frozen=True, slots=True)
class Prefix:
    """What a request's prompt starts with, rendered as a request renders it: the stable
    prefix, and the prefix with the home's states block (up to the user's words)."""

    stable: str
    with_states: str
    # The devices whose states the block shows (their changes change it).
    entity_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class RoundCalls:
    """The calls a round may write: any only `with_tools`, only BotPsy's reading ones if
    `read_only`, on the shortlisted devices (`entity_ids`) and what the request names; no
    text instead of a call if `must_call`; at most one call if `one_call`; none that only
    reads if `acting`."""

    entity_ids: Sequence[str] = ()
    with_tools: bool = False
    read_only: bool = False
    acting: bool = False
    named: Named = NAMES_NOTHING
    must_call: bool = False
    one_call: bool = False
    # The devices whose states the turn shows: those of the shortlist a call of the whole
    # request may target (`Toolbox.fitting`; the grammar offers no other).
    shown: Sequence[str] = ()


class PromptBuilder:
    """One agent's prompts: each round's request, and the cacheable prefix alone."""

    def __init__(self, hass: HomeAssistant, entry: BotPsyConfigEntry, subentry: ConfigSubentry) -> None:
        self.hass = hass
        self.entry = entry
        self.subentry = subentry
        self._conversations = ConversationPrompts()
        self._extra: tuple[object, GenerationExtra] = (None, GenerationExtra())
        self._too_big_logged = False
        self._lines = DeviceLines()
        # A bigger home's devices that requests were about, the latest last.
        self._working: LruCache[str, None] = LruCache(SMALL_HOME)
        # Told when the block's devices change (the working set moved): the warm-up refreshes.
        self.on_block_change: Callable[[], None] | None = None
        # The template and what the prefix's stable part was last rendered from.
        self._structure: tuple[ChatTemplate, tuple[str, list[dict[str, Any]], Toolbox] | None] | None = None

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

    def round_request(
        self, chat_log: conversation.ChatLog, toolbox: Toolbox, fmt: CallFormat, calls: RoundCalls
    ) -> GenerateRequest:
        """The request of one generation round, allowing the `calls` it may write.

        The prompt shows every tool in every round (a stable prefix); the grammar allows
        the shortlisted targets only, and no call at all when calls are not allowed. An
        engine without grammars gets no tools when calls are not allowed.
        """
        entity_ids, named, with_tools, read_only = calls.entity_ids, calls.named, calls.with_tools, calls.read_only
        options = self.subentry.data
        template = self._engine.chat_template
        constrained = self._engine.supports_grammar and template is not None and toolbox.others_constrainable
        offered = bool(toolbox.compiled or toolbox.others) and (with_tools or constrained)
        tools = toolbox.for_request(entity_ids, named, read_only=read_only, acting=calls.acting) if with_tools else []
        schemas = toolbox.schemas() if offered else []
        if not self._fits(schemas):
            schemas = toolbox.schemas(tools)
        if with_tools:
            tools += toolbox.others_for_request(entity_ids, named, read_only=read_only)
        allow_text = not (calls.must_call and tools)
        users = [c for c in chat_log.content if isinstance(c, conversation.UserContent)]
        grammar = None
        if constrained and offered:
            # Free text a call carries is said by the user, in this turn or the two before it.
            said = said_spans([c.content for c in users[-3:]])
            grammar = compile_grammar(
                tuple(tools), fmt, allow_text=allow_text, said=said, **({"max_calls": 1} if calls.one_call else {})
            )
        conversation_id = chat_log.conversation_id
        turn = users[-1] if users else None
        if turn is not None and self._conversations.user_text(conversation_id, turn) is None:
            # Fixed for the turn's rounds and for later turns, so each prompt extends the
            # one before. The first turn opens with the home's states block (prefilled in
            # the background); a later one carries the states of what it may concern.
            about = set(calls.shown)
            if len(users) == 1:
                lines, shown = self.block_lines(toolbox)
                if named.entity_ids and named.entity_ids <= shown:
                    more: dict[str, str] = {}  # what it names is in the block: nothing else is needed
                else:
                    more = self._lines_of(toolbox, sorted(about - shown))
                text = first_turn(lines, clock_line(dt_util.now()), turn.content, list(more.values()))
                turn_lines = self._lines_of(toolbox, shown) | more
            else:
                now = self._lines_of(toolbox, sorted(about))
                turn_lines = self._conversations.unseen(conversation_id, now)
                text = later_turn(list(turn_lines.values()), turn.content)
            self._conversations.set_user_text(conversation_id, turn, text, turn_lines)

        messages = self._history(chat_log, toolbox)
        decoding: dict[str, Any] = {
            "max_tokens": int(options.get(CONF_MAX_TOKENS, DEFAULT_MAX_TOKENS)),
            "temperature": float(options.get(CONF_TEMPERATURE, DEFAULT_TEMPERATURE)),
        }
        if template is None:  # the server renders: the same text as ChatTemplate.render passes
            return GenerateRequest(messages=neutralize(messages), tools=neutralize(schemas) or None, **decoding)
        try:
            prompt = template.render(messages, tools=schemas or None)
        except EngineError as err:
            raise engine_failure("prompt_failed", err) from err
        prompt = self._conversations.extend(conversation_id, prompt, self._generation_extra())
        info = self._engine.model_info
        stop = (info.eos_token,) if info and info.eos_token else ()
        return GenerateRequest(prompt=prompt, stop=stop, grammar=grammar, **decoding)

    def _history(self, chat_log: conversation.ChatLog, toolbox: Toolbox) -> list[dict[str, Any]]:
        """The chat log as the model's messages: user turns as they were sent, the system
        prompt with the examples of other APIs' tools."""
        conversation_id = chat_log.conversation_id

        def user_text(content: conversation.UserContent) -> str:
            return self._conversations.user_text(conversation_id, content) or content.content

        max_history = int(self.subentry.data.get(CONF_MAX_HISTORY, DEFAULT_MAX_HISTORY))
        messages = chat_messages(chat_log, max_history, user_text)
        if messages and messages[0]["role"] == "system":
            messages[0]["content"] = _with_examples(messages[0]["content"], toolbox)
        return messages

    def next_turn_prefix(self, chat_log: conversation.ChatLog, toolbox: Toolbox) -> str | None:
        """The conversation's next prompt up to its user turn, as that turn will render it
        (its history: the calls, their results, the reply), or None if the engine renders
        its own prompts or the tools do not fit. Prefilled after a turn, a follow-up then
        evaluates about its own words."""
        template = self._engine.chat_template
        schemas = toolbox.schemas() if toolbox.compiled or toolbox.others else []
        if template is None or not self._fits(schemas):
            return None
        messages = [*self._history(chat_log, toolbox), {"role": "user", "content": _TURN_SENTINEL}]
        try:
            rendered = template.render(messages, tools=schemas or None)
        except EngineError:
            return None
        rendered = self._conversations.extend(chat_log.conversation_id, rendered, self._generation_extra())
        cut = rendered.find(_TURN_SENTINEL)
        return rendered[:cut] if cut > 0 else None

    def _lines_of(self, toolbox: Toolbox, entity_ids: Iterable[str]) -> dict[str, str]:
        """The device lines of `entity_ids`, with their states now."""
        return {
            e: device_line(state, toolbox.home.entity(e)) for e in entity_ids if (state := live_state(self.hass, e))
        }

    def block_lines(self, toolbox: Toolbox) -> tuple[list[str], frozenset[str]]:
        """The states block's device lines now, and the devices they show: every device of
        a small home, else the working set's."""
        home = [e.entity_id for e in toolbox.home.entities]
        if len(home) > SMALL_HOME:
            exposed = set(home)
            home = [e for e in self._working if e in exposed]
        lines = {e: device_line(state, toolbox.home.entity(e)) for e in home if (state := live_state(self.hass, e))}
        return self._lines.update(lines), frozenset(lines)

    def remember(self, entity_ids: Iterable[str]) -> None:
        """A request was about `entity_ids`: in a bigger home, the block shows them next."""
        before = list(self._working)
        for entity_id in entity_ids:
            self._working[entity_id] = None
        if set(self._working) != set(before) and self.on_block_change is not None:
            self.on_block_change()

    def record(self, conversation_id: str, request: GenerateRequest, output: str) -> None:
        """The engine evaluated `request` and generated `output`: a follow-up extends them."""
        if request.prompt is not None:
            self._conversations.record(conversation_id, request.prompt, output)

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

    async def async_prefix(self, *, structure_changed: bool = True) -> Prefix | None:
        """The prompt's cacheable prefix, rendered exactly as a first turn renders it
        (instructions and tools; then the states block, up to the user's words); None if
        the engine renders its own prompts or the tools do not fit. Unless
        `structure_changed`, the instructions and tools are those of the last call (a
        refresh of the block after a state change or a minute builds no tools)."""
        template = self._engine.chat_template
        if template is None:
            return None
        if structure_changed or self._structure is None or self._structure[0] is not template:
            self._structure = (template, await self._async_structure())
        parts = self._structure[1]
        if parts is None:
            return None
        system, schemas, toolbox = parts
        lines, shown = self.block_lines(toolbox)
        clock = clock_line(dt_util.now())

        def until_words(turn: str) -> str | None:
            messages = [{"role": "system", "content": system}, {"role": "user", "content": turn}]
            rendered = template.render(messages, tools=schemas or None)
            # Up to the words, less the space before them (it belongs to their first token).
            cut = rendered.find(_TURN_SENTINEL)
            return rendered[:cut].removesuffix(" ") if cut > 0 else None

        stable = until_words(_TURN_SENTINEL)
        with_states = until_words(first_turn(lines, clock, _TURN_SENTINEL))
        if stable is None or with_states is None or not with_states.startswith(stable):
            return None
        return Prefix(stable, with_states, shown)

    async def _async_structure(self) -> tuple[str, list[dict[str, Any]], Toolbox] | None:
        """The system prompt, the tool schemas and the toolbox a first turn renders with
        (as ChatLog.async_provide_llm_data builds them: no user name, no extra prompt,
        less the clock line); None if the tools do not fit."""
        llm_context = llm.LLMContext(
            platform=DOMAIN,
            context=Context(),
            language=self.hass.config.language,
            assistant=conversation.DOMAIN,
            device_id=None,
        )
        api_ids = self.subentry.data.get(CONF_LLM_HASS_API) or None
        api = await llm.async_get_api(self.hass, api_ids, llm_context) if api_ids else None
        instructions = ha_template.Template(
            self.subentry.data.get(CONF_PROMPT) or llm.DEFAULT_INSTRUCTIONS_PROMPT, self.hass
        ).async_render(
            {"ha_name": self.hass.config.location_name, "user_name": None, "llm_context": llm_context},
            parse_result=False,
        )
        toolbox = Toolbox.from_api(self.hass, api)
        system = _with_examples("\n".join([instructions, api.api_prompt] if api else [instructions]), toolbox)
        schemas = toolbox.schemas()
        return (system, schemas, toolbox) if self._fits(schemas) else None
