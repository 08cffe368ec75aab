"""Which devices a call will act on, and with which service: the one rule for it.

The confirmation hold, the permission check before an intent runs, the plan (dry run) and
the "same name as a sensor" repair all ask this module, so that none of them can disagree
with what runs:
- BotPsy's own tools name one entity, checked by `validate_call`, the check they run.
- HA's intent tools are resolved by the intent handler's own code: its slot validation
  and target matching (names and aliases case- and space-insensitively, entity ids, areas
  and floors by name, id or alias, the satellite's area preferred, exposure) run with the
  slots the tool will pass, and are stopped where the handler would start acting.
"""

from __future__ import annotations

from collections.abc import Sequence
import copy
from dataclasses import dataclass, field
from typing import Any

from homeassistant.components.intent import OnOffIntentHandler
from homeassistant.const import ATTR_DEVICE_CLASS
from homeassistant.core import Context, HomeAssistant, State
from homeassistant.helpers import intent, llm
import probatio

from botpsy_runtime.formats import ToolCall

from .core.home import Home
from .core.policy import CONFIRMED_DOMAINS
from .core.tools import Tool
from .core.validate import CallRejectedError, validate_call
from .language import NOTHING_INTENTS, ON_OFF_SERVICES, TIMER_INTENTS

# HA's intents that act on no device: timers, announcements, answers.
_DEVICELESS_INTENTS = TIMER_INTENTS | NOTHING_INTENTS | {intent.INTENT_TIMER_STATUS, intent.INTENT_BROADCAST}


@dataclass(frozen=True, slots=True)
class Target:
    """A device a call acts on, and the service it gets."""

    entity_id: str
    name: str
    service: str  # of the device's own domain ("unlock", "open_cover")
    device_class: str | None = None
    # The service data an HA intent passes besides the entity ({"brightness_pct": 30}).
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def domain(self) -> str:
        """The device's domain, from its entity id."""
        return self.entity_id.partition(".")[0]


class UnresolvedError(Exception):
    """Which devices a writing call acts on cannot be known before it runs; str() says why."""


class _Matched(Exception):
    """Raised by the probe where the handler would start acting: what it matched."""

    def __init__(self, intent_obj: intent.Intent, states: Sequence[State]) -> None:
        super().__init__()
        self.intent_obj = intent_obj
        self.states = states


def intent_tool(tools: Sequence[llm.Tool], name: str) -> llm.IntentTool | None:
    """The HA intent tool called `name` (namespaced or not), if it is one."""
    tool = next((t for t in tools if t.name == name), None)
    inner = tool.tool if isinstance(tool, llm.NamespacedTool) else tool
    return inner if isinstance(inner, llm.IntentTool) else None


def _handler(hass: HomeAssistant, intent_type: str) -> intent.IntentHandler | None:
    return next((h for h in intent.async_get(hass) if h.intent_type == intent_type), None)


def _intent_slots(
    hass: HomeAssistant, tool: llm.IntentTool, arguments: dict[str, Any], llm_context: llm.LLMContext
) -> dict[str, Any]:
    """The slots `tool` passes HA's intent for `arguments`, as `IntentTool.async_call` builds them."""
    slots: dict[str, Any] = {k: {"value": v} for k, v in arguments.items() if not intent.is_blank_slot_value(v)}
    if tool.extra_slots:
        preferences = llm.async_get_match_preferences(hass, llm_context)
        for slot, value in (("preferred_area_id", preferences.area_id), ("preferred_floor_id", preferences.floor_id)):
            if value and slot in tool.extra_slots:
                slots[slot] = {"value": value}
    return slots


def _service_data(handler: intent.DynamicServiceIntentHandler, intent_obj: intent.Intent) -> dict[str, Any]:
    """What the handler passes the service besides the entity, from its validated slots
    (as `DynamicServiceIntentHandler.async_call_service` builds it)."""
    data: dict[str, Any] = {}
    for key, info in (handler.required_slots or {}).items():
        data[info.service_data_name or key] = intent_obj.slots[key]["value"]
    for key, info in (handler.optional_slots or {}).items():
        if value := intent_obj.slots.get(key):
            data[info.service_data_name or key] = value["value"]
    return data


def _service(handler: intent.DynamicServiceIntentHandler, intent_obj: intent.Intent, state: State) -> str:
    """The service of the device's own domain that the handler calls on `state`."""
    domain, service = handler.get_domain_and_service(intent_obj, state)
    if domain != "homeassistant":
        return service
    special = ON_OFF_SERVICES.get((state.domain, service)) if isinstance(handler, OnOffIntentHandler) else None
    return special or service


async def _async_intent_targets(
    hass: HomeAssistant, tool: llm.IntentTool, arguments: dict[str, Any], llm_context: llm.LLMContext
) -> list[Target]:
    handler = _handler(hass, tool.intent_type)
    if handler is None or tool.intent_type in _DEVICELESS_INTENTS:
        return []  # HA answers "unknown intent"; a timer or an announcement acts on no device
    if not isinstance(handler, intent.DynamicServiceIntentHandler):
        # A handler of its own: it acts only on the domains it declares (climate, todo, …).
        if handler.platforms is not None and not handler.platforms & CONFIRMED_DOMAINS:
            return []
        raise UnresolvedError(f"I cannot tell which devices {tool.intent_type} would act on, so I did not run it")
    intent_obj = intent.Intent(
        hass,
        platform=llm_context.platform,
        intent_type=tool.intent_type,
        slots=_intent_slots(hass, tool, arguments, llm_context),
        text_input=None,
        context=llm_context.context or Context(),
        language=llm_context.language or hass.config.language,
        assistant=llm_context.assistant,
        device_id=llm_context.device_id,
    )

    async def matched(
        intent_obj: intent.Intent,
        match_result: intent.MatchTargetsResult,
        match_constraints: intent.MatchTargetsConstraints,
        match_preferences: intent.MatchTargetsPreferences | None = None,
    ) -> intent.IntentResponse:
        raise _Matched(intent_obj, match_result.states)

    # The handler's own `async_handle` up to the point where it acts on what it matched.
    probe = copy.copy(handler)
    probe.async_handle_states = matched  # type: ignore[method-assign]
    try:
        await probe.async_handle(intent_obj)
    except _Matched as found:
        data = _service_data(handler, found.intent_obj)
        return [
            Target(
                s.entity_id,
                s.name,
                _service(handler, found.intent_obj, s),
                s.attributes.get(ATTR_DEVICE_CLASS),
                data,
            )
            for s in found.states
        ]
    except (intent.IntentError, probatio.Invalid):
        return []  # HA refuses the call the same way when it runs: it acts on nothing
    except Exception as err:
        raise UnresolvedError(f"I could not check which devices {tool.intent_type} would act on: {err}") from err
    raise UnresolvedError(f"{tool.intent_type} answered without acting on a device I could check")


def own_call_targets(call: ToolCall, compiled: Sequence[Tool], home: Home) -> list[Target] | None:
    """The device a call of BotPsy's own tools will act on, with its service ([] for a read,
    or a call that will be refused); None where `call` is not one of them."""
    if not any(t.name == call.name for t in compiled):
        return None
    try:
        valid = validate_call(call, {t.key: t for t in compiled})
    except CallRejectedError:
        return []  # refused the same way when it runs
    if not valid.entity_id or valid.tool.read_only:
        return []
    entity = home.entity(valid.entity_id)
    name = entity.name if entity else valid.entity_id
    return [Target(valid.entity_id, name, valid.tool.service, entity.device_class if entity else None)]


async def async_intent_call_targets(
    hass: HomeAssistant, call: ToolCall, others: Sequence[llm.Tool], llm_context: llm.LLMContext | None
) -> list[Target]:
    """The devices a call of another API's tool (HA's intents) will act on when it runs,
    each with its service; [] for a tool that acts on no device. UnresolvedError if a call
    that may act on a device cannot be checked: it must not run unchecked."""
    tool = intent_tool(others, call.name)
    if tool is None:
        return []  # not a device tool (a script the user exposed, another API's tool)
    if llm_context is None:
        raise UnresolvedError(f"I cannot check {call.name} without the request's context")
    return await _async_intent_targets(hass, tool, dict(call.arguments), llm_context)


async def async_intent_targets(
    hass: HomeAssistant, intent_type: str, slots: dict[str, Any], llm_context: llm.LLMContext
) -> list[Target]:
    """The devices HA's intent `intent_type` acts on with `slots` (values, as an intent
    tool passes them), each with its service and data; [] where it acts on none."""
    handler = _handler(hass, intent_type)
    if handler is None:
        return []
    return await _async_intent_targets(hass, llm.IntentTool(intent_type, handler), slots, llm_context)


def states_named(hass: HomeAssistant, name: str, area: str | None, assistant: str | None) -> list[State]:
    """The exposed entities HA's intents match by `name` (in `area`), duplicates included."""
    constraints = intent.MatchTargetsConstraints(
        name=name, area_name=area, assistant=assistant, allow_duplicate_names=True
    )
    return intent.async_match_targets(hass, constraints).states
