"""The agents under evaluation, behind one interface: BotPsy and HA's built-in agent.

Both are asked through HA's own conversation API (`conversation.async_converse`), as the
Assist pipeline asks them. What an agent did is read from HA's records of the turn: the
chat log's tool calls and results (BotPsy), and for every agent the service calls it made
(the scorer resolves their targets).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.components.conversation.chat_log import async_subscribe_chat_logs
from homeassistant.components.conversation.const import DATA_COMPONENT, ChatLogEventType
from homeassistant.const import CONF_LLM_HASS_API, EVENT_CALL_SERVICE
from homeassistant.core import Context, Event, HomeAssistant, State, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.target import TargetSelection, async_extract_referenced_entity_ids
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.botpsy.const import (
    CONF_ENGINE,
    CONF_MODEL_PATH,
    CONF_N_BATCH,
    CONF_N_CTX,
    CONF_N_THREADS,
    CONF_URL,
    DEFAULT_SUBENTRIES,
    DOMAIN,
    ENGINE_EMBEDDED,
    ENGINE_REMOTE,
)

from .scoring import Call

BUILTIN_AGENT_ID = conversation.HOME_ASSISTANT_AGENT
# Services that only read or talk: not actions on the home.
PASSIVE_DOMAINS = frozenset({"conversation", "intent", "system_log", "logger", "persistent_notification", "tts"})


@dataclass(slots=True)
class Turn:
    """One answer of an agent."""

    reply: str
    asks_back: bool
    calls: list[Call] = field(default_factory=list)
    prompt_tokens: int = 0
    decoded_tokens: int = 0
    error: str | None = None
    # The states an answer was about, where the agent says (HA's built-in agent does).
    matched_states: list[State] = field(default_factory=list)


@dataclass(slots=True)
class ServiceCalls:
    """Service calls made while listening, with the entities they targeted."""

    hass: HomeAssistant
    home_entities: frozenset[str]
    targets: set[str] = field(default_factory=set)
    _unsub: Callable[[], None] | None = None

    def __enter__(self) -> ServiceCalls:
        self._unsub = self.hass.bus.async_listen(EVENT_CALL_SERVICE, self._on_call)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._unsub:
            self._unsub()

    @callback
    def _on_call(self, event: Event[Any]) -> None:
        domain = event.data["domain"]
        if domain in PASSIVE_DOMAINS:
            return
        data = dict(event.data.get("service_data") or {})
        selected = async_extract_referenced_entity_ids(self.hass, TargetSelection(data))
        self.targets |= (selected.referenced | selected.indirectly_referenced) & self.home_entities


class Agent:
    """A conversation agent of the HA instance, by agent id."""

    def __init__(self, hass: HomeAssistant, name: str, agent_id: str) -> None:
        self.hass = hass
        self.name = name
        self.agent_id = agent_id

    async def async_settle(self, timeout_s: float = 600.0) -> None:
        """Wait until the agent's background prefix warm-up (if it has one) is idle, so
        that every case meets the engine in the same state: runs then agree."""
        component = self.hass.data.get(DATA_COMPONENT)
        entity = component.get_entity(self.agent_id) if component else None
        warmup = getattr(entity, "warmup", None)
        async with asyncio.timeout(timeout_s):
            while warmup is not None and not warmup.idle:  # noqa: ASYNC110 (polling its state is all it offers)
                await asyncio.sleep(0.1)

    async def async_ask(
        self, text: str, conversation_id: str, device_id: str | None, context: Context | None = None
    ) -> Turn:
        """One turn, as `context`'s user (None: no user, as an automation asks)."""
        contents: list[dict[str, Any]] = []

        @callback
        def on_chat_log(cid: str, event: ChatLogEventType, data: dict[str, Any]) -> None:
            if cid == conversation_id and event == ChatLogEventType.CONTENT_ADDED:
                contents.append(data["content"])

        unsubscribe = async_subscribe_chat_logs(self.hass, on_chat_log)
        try:
            result = await conversation.async_converse(
                self.hass,
                text,
                conversation_id,
                context or Context(),
                # The home's language, as a voice assistant set up for it converses.
                language=self.hass.config.language,
                agent_id=self.agent_id,
                device_id=device_id,
            )
        finally:
            unsubscribe()
        response = result.response
        reply = str(response.speech.get("plain", {}).get("speech", ""))
        error = None
        if response.response_type == conversation.intent.IntentResponseType.ERROR:
            error = f"{response.error_code}: {reply}" if response.error_code else reply
        turn = Turn(
            reply=reply,
            asks_back=result.continue_conversation,
            calls=_calls(contents),
            error=error,
            matched_states=list(response.matched_states),
        )
        # What the agent reported in the turn's trace, as HA's AI integrations report it.
        traces = trace.async_get_traces()
        for event in traces[-1].as_dict()["events"] if traces else ():
            if event["event_type"] != trace.ConversationTraceEventType.AGENT_DETAIL:
                continue
            details = event["data"] or {}
            stats = details.get("stats") or {}
            turn.prompt_tokens += int(stats.get("input_tokens", 0))
            turn.decoded_tokens += int(stats.get("output_tokens", 0))
            turn.calls += [
                Call("(unusable output)", {"text": e}, valid=False) for e in details.get("format_errors", ())
            ]
        return turn


def _calls(contents: list[dict[str, Any]]) -> list[Call]:
    """The tool calls of a turn, with their results."""
    calls: dict[str, Call] = {}
    for content in contents:
        for tool_input in content.get("tool_calls") or ():
            calls[tool_input.id] = Call(tool_input.tool_name, dict(tool_input.tool_args))
        if content.get("role") == "tool_result":
            data = (content.get("result") or {}).get("data") or {}
            # A streamed answer's calls are announced with their results only.
            call = calls.setdefault(
                content["tool_call_id"], Call(content["tool_name"], dict(data.get("arguments") or {}))
            )
            call.executed = bool(data.get("executed", not content["result"].get("error")))
            call.error = data.get("error")
            call.valid = call.executed or call.error is None
    return list(calls.values())


def _subentry(subentry: Mapping[str, Any], tools: Sequence[str] | None) -> dict[str, Any]:
    """A default subentry for a mock entry; the conversation agent's LLM APIs replaced by `tools`."""
    data = dict(subentry["data"])
    if tools is not None and subentry["subentry_type"] == "conversation":
        data[CONF_LLM_HASS_API] = list(tools)
    return {**subentry, "data": data, "unique_id": None}


async def async_builtin_agent(hass: HomeAssistant) -> Agent:
    return Agent(hass, "builtin", BUILTIN_AGENT_ID)


async def async_botpsy_agent(
    hass: HomeAssistant, model: Path | None, server: str | None, threads: int, tools: Sequence[str] | None = None
) -> Agent:
    """BotPsy's conversation agent on the embedded engine (`model`) or a server (`server`),
    using the HA LLM APIs `tools` (None: those a new entry starts with)."""
    if server:
        data: dict[str, Any] = {CONF_ENGINE: ENGINE_REMOTE, CONF_URL: server}
    else:
        assert model is not None
        data = {
            CONF_ENGINE: ENGINE_EMBEDDED,
            CONF_MODEL_PATH: str(model),
            CONF_N_CTX: 8192,
            CONF_N_THREADS: threads,
            CONF_N_BATCH: 512,
        }
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="BotPsy",
        data=data,
        subentries_data=[_subentry(subentry, tools) for subentry in DEFAULT_SUBENTRIES],
    )
    entry.add_to_hass(hass)
    if not await hass.config_entries.async_setup(entry.entry_id):
        raise RuntimeError(f"BotPsy did not set up: {entry.reason or entry.state}")
    await hass.async_block_till_done()
    registry = er.async_get(hass)
    entity_id = next(
        e.entity_id for e in er.async_entries_for_config_entry(registry, entry.entry_id) if e.domain == "conversation"
    )
    return Agent(hass, "botpsy", entity_id)
