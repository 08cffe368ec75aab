"""AI Task: structured data from the model, its shape enforced by a grammar from the task's structure."""

from __future__ import annotations

from json import JSONDecodeError
from typing import Any

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util.json import json_loads
import probatio

from . import BotPsyConfigEntry
from .const import DOMAIN
from .entity import BotPsyLLMEntity


async def async_setup_entry(
    hass: HomeAssistant,
    entry: BotPsyConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
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
