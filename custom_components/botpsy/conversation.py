"""Conversation agents: one entity per `conversation` subentry."""

from __future__ import annotations

import asyncio
from typing import Literal

from homeassistant.components import conversation
from homeassistant.components.conversation.models import AbstractConversationAgent
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import BotPsyConfigEntry
from .const import CONF_PROMPT, DOMAIN, SUPPORTED_LANGUAGES
from .entity import BotPsyLLMEntity
from .prefix_warmup import PrefixWarmup

# The engine queues requests itself (one model, shared by every agent).
PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: BotPsyConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a conversation agent for each `conversation` subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == "conversation":
            async_add_entities([BotPsyConversationEntity(entry, subentry)], config_subentry_id=subentry.subentry_id)


class BotPsyConversationEntity(conversation.ConversationEntity, AbstractConversationAgent, BotPsyLLMEntity):
    """A BotPsy agent in HA's conversation and Assist pipelines."""

    _attr_supports_streaming = True

    def __init__(self, entry: BotPsyConfigEntry, subentry: ConfigSubentry) -> None:
        super().__init__(entry, subentry)
        # Conversation id -> (its turn lock, turns holding or awaiting it).
        self._turns: dict[str, tuple[asyncio.Lock, int]] = {}
        if subentry.data.get(CONF_LLM_HASS_API):
            self._attr_supported_features = conversation.ConversationEntityFeature.CONTROL

    async def async_added_to_hass(self) -> None:
        """Register as the entry's agent, and keep the engine warm for this agent's prompt prefix."""
        await super().async_added_to_hass()
        conversation.async_set_agent(self.hass, self.entry, self)
        self.warmup = PrefixWarmup(
            self.hass,
            self.entry,
            self.entity_id,
            lambda structure_changed: self.prompts.async_prefix(structure_changed=structure_changed),
            lambda: self.engine,
        )
        self.prompts.on_block_change = self.warmup.async_block_changed
        self.async_on_remove(self.warmup.async_start())

    async def async_will_remove_from_hass(self) -> None:
        """Unregister as the entry's agent."""
        conversation.async_unset_agent(self.hass, self.entry)
        await super().async_will_remove_from_hass()

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """The languages BotPsy reads and answers in."""
        return SUPPORTED_LANGUAGES

    async def async_process(self, user_input: conversation.ConversationInput) -> conversation.ConversationResult:
        """One turn at a time per conversation: a turn sent while the one before is being
        answered waits for it, so the chat log keeps each turn after the answer to the one
        before (HA's chat log would otherwise hold both questions, then both answers, and
        the later turn's copy would drop the earlier one's answer)."""
        conversation_id = user_input.conversation_id
        if conversation_id is None:
            return await super().async_process(user_input)
        lock, count = self._turns.get(conversation_id, (asyncio.Lock(), 0))
        self._turns[conversation_id] = (lock, count + 1)
        try:
            async with lock:
                return await super().async_process(user_input)
        finally:
            lock, count = self._turns[conversation_id]
            if count == 1:
                del self._turns[conversation_id]
            else:
                self._turns[conversation_id] = (lock, count - 1)

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                self.subentry.data.get(CONF_LLM_HASS_API) or None,
                self.subentry.data.get(CONF_PROMPT),
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()
        await self._async_handle_chat_log(chat_log, user_input.text)
        return _with_outcome(conversation.async_get_result_from_chat_log(user_input, chat_log), chat_log)


def _with_outcome(
    result: conversation.ConversationResult, chat_log: conversation.ChatLog
) -> conversation.ConversationResult:
    """HA's result carries the response of the turn's last HA intent. Where BotPsy's own
    tools ran last, and did not fail, their outcome is the turn's: an answer (they read)
    or an action done, with the same speech; not an intent's error before them (HA's
    reading found two thermostats, BotPsy's read answered)."""
    turn = chat_log.content[chat_log.llm_input_provided_index :]
    last = next((c for c in reversed(turn) if isinstance(c, conversation.ToolResultContent)), None)
    data = last.result.data if last is not None else None
    if last is None or isinstance(data, llm.IntentResponseDict) or (isinstance(data, dict) and data.get("error")):
        return result
    response = intent.IntentResponse(language=result.response.language)
    tool = next((t for t in chat_log.llm_api.tools if t.name == last.tool_name), None) if chat_log.llm_api else None
    if tool is not None and tool.annotations.read_only:
        response.response_type = intent.IntentResponseType.QUERY_ANSWER
    response.async_set_speech(result.response.speech.get("plain", {}).get("speech", ""))
    return conversation.ConversationResult(
        response=response,
        conversation_id=result.conversation_id,
        continue_conversation=result.continue_conversation,
    )
