"""AI Task: structured data from the model, its shape enforced by a grammar from the task's structure."""

from __future__ import annotations

from dataclasses import replace
from json import JSONDecodeError
from typing import Any

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util.json import json_loads
import probatio

from botpsy_runtime.formats import detect_format
from botpsy_runtime.json_grammar import json_schema_grammar

from . import BotPsyConfigEntry
from .const import DOMAIN
from .entity import BotPsyLLMEntity
from .generation import Generation
from .prompt_builder import RoundCalls
from .toolbox import Toolbox

# The engine queues requests itself (one model, shared by every agent).
PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: BotPsyConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add an AI Task entity for each `ai_task_data` subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == "ai_task_data":
            async_add_entities([BotPsyTaskEntity(entry, subentry)], config_subentry_id=subentry.subentry_id)


class BotPsyTaskEntity(ai_task.AITaskEntity, BotPsyLLMEntity):
    """Generates text or data for `ai_task.generate_data`."""

    _attr_supported_features = ai_task.AITaskEntityFeature.GENERATE_DATA

    async def _async_generate_data(
        self, task: ai_task.GenDataTask, chat_log: conversation.ChatLog
    ) -> ai_task.GenDataTaskResult:
        if task.structure is None:
            text = await self._async_generate_text(chat_log, None)
            return ai_task.GenDataTaskResult(conversation_id=chat_log.conversation_id, data=text)
        schema: dict[str, Any] = probatio.to_openapi(task.structure, custom_serializer=llm.selector_serializer)
        text = await self._async_generate_text(chat_log, schema)
        try:
            data = task.structure(json_loads(text))
        except (JSONDecodeError, probatio.Invalid) as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="bad_structured_output",
                translation_placeholders={"text": text[:200]},
            ) from err
        return ai_task.GenDataTaskResult(conversation_id=chat_log.conversation_id, data=data)

    async def _async_generate_text(self, chat_log: conversation.ChatLog, json_schema: dict[str, Any] | None) -> str:
        """One round without tools (JSON matching `json_schema` if given), streamed into the log."""
        template = self.engine.chat_template
        fmt = detect_format(template.source if template else None)
        request = self.prompts.round_request(chat_log, Toolbox(), fmt, RoundCalls())
        if json_schema is not None:
            # Our grammar spells out ranges; llama.cpp's converter (or the server's) covers the rest.
            grammar = json_schema_grammar(json_schema) if self.engine.supports_grammar else None
            request = replace(request, grammar=grammar) if grammar else replace(request, json_schema=json_schema)
        generation = Generation(None, self.stats)  # no tools: all of it is the answer
        async for _content in chat_log.async_add_delta_content_stream(
            self.entity_id, generation.stream(self.engine, request)
        ):
            pass
        self.prompts.record(chat_log.conversation_id, request, generation.text)
        return generation.parsed.content if generation.parsed else ""
