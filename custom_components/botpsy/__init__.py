"""BotPsy: a local agent for Home Assistant, on this hub or on a model server."""

from __future__ import annotations

from dataclasses import dataclass, field

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryError, ConfigEntryNotReady
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.typing import ConfigType

from botpsy_runtime.engine import Engine
from botpsy_runtime.errors import AuthenticationError, EngineUnavailableError, ModelLoadError

from . import llm_api
from .const import DOMAIN
from .engine_manager import async_get_engine_manager
from .services import async_register_services
from .stats import EngineStats

CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
PLATFORMS = (Platform.AI_TASK, Platform.CONVERSATION, Platform.SENSOR)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Offer BotPsy's compiled device-control tools as an LLM API, for any agent."""
    llm_api.async_register(hass)
    async_register_services(hass)
    return True


@dataclass(slots=True)
class BotPsyRuntimeData:
    """What the entry's platforms share."""

    engine: Engine
    stats: EngineStats = field(default_factory=EngineStats)


type BotPsyConfigEntry = ConfigEntry[BotPsyRuntimeData]


async def async_setup_entry(hass: HomeAssistant, entry: BotPsyConfigEntry) -> bool:
    """Acquire the entry's engine (shared with entries on the same model), then set up its platforms."""
    manager = async_get_engine_manager(hass)
    try:
        engine = await manager.async_acquire(entry.entry_id, entry.data)
    except AuthenticationError as err:
        raise ConfigEntryAuthFailed(
            translation_domain=DOMAIN, translation_key="auth_failed", translation_placeholders={"error": str(err)}
        ) from err
    except ModelLoadError as err:
        raise ConfigEntryError(
            translation_domain=DOMAIN, translation_key="model_unusable", translation_placeholders={"error": str(err)}
        ) from err
    except EngineUnavailableError as err:
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN,
            translation_key="engine_unavailable",
            translation_placeholders={"error": str(err)},
        ) from err
    entry.runtime_data = BotPsyRuntimeData(engine)
    entry.async_on_unload(entry.add_update_listener(_async_update_listener))
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: BotPsyConfigEntry) -> bool:
    """Unload the entry's platforms, then release its engine (unloaded with its last entry)."""
    if not await hass.config_entries.async_unload_platforms(entry, PLATFORMS):
        return False
    await async_get_engine_manager(hass).async_release(entry.entry_id, entry.data)
    return True


async def _async_update_listener(hass: HomeAssistant, entry: BotPsyConfigEntry) -> None:
    """Subentries or engine parameters changed: reload, no restart needed."""
    await hass.config_entries.async_reload(entry.entry_id)
