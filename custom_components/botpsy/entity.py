"""Base entity of BotPsy's agents: one per subentry, on its entry's shared engine.

The request path itself is in `request`; each round's prompt in `prompt_builder`.
"""

from __future__ import annotations

from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import Context
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.entity import Entity

from botpsy_runtime.engine import Engine

from . import BotPsyConfigEntry
from .const import DOMAIN
from .prefix_warmup import PrefixWarmup
from .prompt_builder import PromptBuilder
from .request import async_handle_request, async_plan
from .stats import EngineStats


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
        self.prompts: PromptBuilder
        # Keeps the engine warm for this agent's prompts (conversation agents set it).
        self.warmup: PrefixWarmup | None = None

    async def async_added_to_hass(self) -> None:
        """Start the agent's prompt builder, which needs `hass`."""
        await super().async_added_to_hass()
        self.prompts = PromptBuilder(self.hass, self.entry, self.subentry)

    @property
    def engine(self) -> Engine:
        """The entry's engine, which the agent runs on."""
        return self.entry.runtime_data.engine

    @property
    def stats(self) -> EngineStats:
        """The figures of the entry's engine, which its sensors show."""
        return self.entry.runtime_data.stats

    async def _async_handle_chat_log(self, chat_log: conversation.ChatLog, utterance: str) -> None:
        await async_handle_request(self, chat_log, utterance)

    async def async_plan(self, text: str, context: Context, language: str | None) -> list[dict[str, Any]]:
        """The calls this agent would make for `text`, each validated; none is run."""
        return await async_plan(self, text, context, language)
