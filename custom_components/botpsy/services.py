"""Actions for automations: `botpsy.process` (do it) and `botpsy.plan` (say what would be done)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from homeassistant.components import conversation
from homeassistant.const import ATTR_ENTITY_ID
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import chat_session, config_validation as cv
from homeassistant.util.json import JsonValueType
import probatio

from .const import DOMAIN

if TYPE_CHECKING:
    from .conversation import BotPsyConversationEntity

SERVICE_PROCESS = "process"
SERVICE_PLAN = "plan"
ATTR_TEXT = "text"
ATTR_CONVERSATION_ID = "conversation_id"
ATTR_LANGUAGE = "language"

SCHEMA = probatio.Schema(
    {
        probatio.Required(ATTR_ENTITY_ID): cv.entity_id,
        probatio.Required(ATTR_TEXT): cv.string,
        probatio.Optional(ATTR_CONVERSATION_ID): cv.string,
        probatio.Optional(ATTR_LANGUAGE): cv.string,
    }
)


def _agent(hass: HomeAssistant, entity_id: str) -> BotPsyConversationEntity:
    """The BotPsy agent entity, or a clear error: a conversation entity of this
    integration's platform (its class is not imported here: the platform module imports
    the integration's package, which registers these services)."""
    entity = hass.data["entity_components"]["conversation"].get_entity(entity_id)
    platform = getattr(entity, "platform", None)
    if entity is None or platform is None or platform.platform_name != DOMAIN:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="not_an_agent", translation_placeholders={"entity_id": entity_id}
        )
    return cast("BotPsyConversationEntity", entity)


def _turn_results(hass: HomeAssistant, conversation_id: str) -> list[dict[str, Any]]:
    """The tool results of the conversation's last turn."""
    with (
        chat_session.async_get_chat_session(hass, conversation_id) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        content = list(chat_log.content)
    last_user = max((i for i, c in enumerate(content) if isinstance(c, conversation.UserContent)), default=-1)
    return [
        {"name": c.tool_name, **dict(c.result.data or {})}
        for c in content[last_user + 1 :]
        if isinstance(c, conversation.ToolResultContent)
    ]


async def _async_process(call: ServiceCall) -> ServiceResponse:
    hass = call.hass
    _agent(hass, call.data[ATTR_ENTITY_ID])
    result = await conversation.async_converse(
        hass,
        call.data[ATTR_TEXT],
        call.data.get(ATTR_CONVERSATION_ID),
        call.context,
        call.data.get(ATTR_LANGUAGE),
        agent_id=call.data[ATTR_ENTITY_ID],
    )
    calls = _turn_results(hass, result.conversation_id) if result.conversation_id else []
    return {
        "reply": result.response.speech.get("plain", {}).get("speech", ""),
        "conversation_id": result.conversation_id,
        "continue_conversation": result.continue_conversation,
        "calls": calls,
        "changes": [change for c in calls for change in c.get("changes", [])],
    }


async def _async_plan(call: ServiceCall) -> ServiceResponse:
    entity = _agent(call.hass, call.data[ATTR_ENTITY_ID])
    plan: list[dict[str, Any]] = await entity.async_plan(
        call.data[ATTR_TEXT], call.context, call.data.get(ATTR_LANGUAGE)
    )
    return {"calls": cast("list[JsonValueType]", plan)}


def async_register_services(hass: HomeAssistant) -> None:
    """Register `botpsy.process` and `botpsy.plan`, which answer with what was (or would be) done."""
    hass.services.async_register(DOMAIN, SERVICE_PROCESS, _async_process, SCHEMA, SupportsResponse.ONLY)
    hass.services.async_register(DOMAIN, SERVICE_PLAN, _async_plan, SCHEMA, SupportsResponse.ONLY)
