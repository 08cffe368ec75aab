"""Base entity of BotPsy's agents: chat log in, model reply streamed back.

The request path lives here: chat log -> messages -> prompt (the model's own chat
template) -> engine generation -> deltas into the chat log, which HA streams to the user.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.json import json_dumps

from . import BotPsyConfigEntry
from .const import (
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    DEFAULT_MAX_HISTORY,
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DOMAIN,
    LOGGER,
)
from .core.engine import EngineError, Finished, GenerateRequest, TextDelta


def chat_messages(chat_log: conversation.ChatLog, max_history: int) -> list[dict[str, Any]]:
    """The chat log as OpenAI-style messages, keeping the last `max_history` user turns."""
    messages: list[dict[str, Any]] = []
    for content in chat_log.content:
        if isinstance(content, conversation.ToolResultContent):
            payload = {"data": content.result.data, "error": content.result.error}
            messages.append({"role": "tool", "content": json_dumps(payload)})
        elif isinstance(content, conversation.AssistantContent):
            messages.append({"role": "assistant", "content": content.content or ""})
        else:
            messages.append({"role": content.role, "content": content.content})
    user_turns = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if max_history > 0 and len(user_turns) > max_history:
        first_kept = user_turns[-max_history]
        system = [m for m in messages[:1] if m["role"] == "system"]
        messages = system + messages[first_kept:]
    return messages


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

    def _request(self, messages: list[dict[str, Any]]) -> GenerateRequest:
        options = self.subentry.data
        decoding: dict[str, Any] = {
            "max_tokens": int(options.get(CONF_MAX_TOKENS, DEFAULT_MAX_TOKENS)),
            "temperature": float(options.get(CONF_TEMPERATURE, DEFAULT_TEMPERATURE)),
        }
        engine = self.entry.runtime_data.engine
        if engine.chat_template is None:
            return GenerateRequest(messages=messages, **decoding)
        prompt = engine.chat_template.render(messages, add_generation_prompt=True)
        info = engine.model_info
        stop = (info.eos_token,) if info and info.eos_token else ()
        return GenerateRequest(prompt=prompt, stop=stop, **decoding)

    async def _async_handle_chat_log(self, chat_log: conversation.ChatLog) -> None:
        """Generate the reply to the chat log's last turn, streaming it into the log."""
        max_history = int(self.subentry.data.get(CONF_MAX_HISTORY, DEFAULT_MAX_HISTORY))
        try:
            request = self._request(chat_messages(chat_log, max_history))
        except EngineError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="prompt_failed", translation_placeholders={"error": str(err)}
            ) from err
        async for _content in chat_log.async_add_delta_content_stream(self.entity_id, self._stream(request)):
            pass

    async def _stream(self, request: GenerateRequest) -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        engine = self.entry.runtime_data.engine
        yield {"role": "assistant"}
        try:
            async for event in engine.generate(request):
                if isinstance(event, TextDelta):
                    yield {"content": event.text}
                elif isinstance(event, Finished):
                    LOGGER.debug("Generation finished (%s): %s", event.reason, event.timings.as_dict())
        except EngineError as err:
            LOGGER.error("BotPsy engine error: %s", err)
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="engine_error", translation_placeholders={"error": str(err)}
            ) from err
