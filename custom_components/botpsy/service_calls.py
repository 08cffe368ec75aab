"""Run a validated call through Home Assistant, as the requesting user, and report what changed.

After the core's checks (known function, target, typed and ranged values) a call must
still pass HA's: the entity exists and is exposed to agents, the user may control it, and
the service's own schema accepts the data. Only then does the service run, awaited; the
result lists each changed entity (old -> new state and changed attributes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
import contextlib
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from homeassistant.auth.permissions.const import POLICY_CONTROL
from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.components.media_player.browse_media import SearchMedia
from homeassistant.components.todo.const import DATA_COMPONENT as TODO_COMPONENT
from homeassistant.core import (
    Context,
    Event,
    EventStateChangedData,
    EventStateReportedData,
    HomeAssistant,
    State,
    callback,
)
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import translation
from homeassistant.helpers.event import async_track_state_change_event, async_track_state_report_event
import probatio

from .core.follow_up import item_words
from .core.tools import GET_STATE, MEDIA_QUERY, SEARCH_AND_PLAY
from .core.validate import CallRejectedError, ValidCall

# Fired for every call BotPsy runs (who asked, what, the result), for automations.
EVENT_CALL_EXECUTED = "botpsy_call_executed"
# How long to wait for a device to report its new state after the service returned.
STATE_SETTLE_SECONDS = 1.0
# Attributes worth reporting when they change (and readable through get_state).
REPORTED_ATTRIBUTES = (
    "brightness", "color_temp_kelvin", "rgb_color", "effect", "percentage", "preset_mode", "current_position",
    "temperature", "target_temp_high", "target_temp_low", "hvac_mode", "fan_mode", "current_temperature",
    "volume_level", "is_volume_muted", "source", "media_title", "unit_of_measurement",
)  # fmt: skip


@dataclass(slots=True)
class StateChange:
    """What a call changed on one entity: its state, and the reported attributes that differ."""

    entity_id: str
    name: str
    old_state: str | None
    new_state: str | None
    attributes: dict[str, list[Any]] = field(default_factory=dict)  # name -> [old, new]


@dataclass(slots=True)
class CallResult:
    """What happened to one call: the data of its tool result."""

    name: str
    arguments: dict[str, Any]
    executed: bool
    error: str | None = None
    changes: list[StateChange] = field(default_factory=list)
    state: dict[str, Any] | None = None
    # The target as a person calls it (its name, when it exists), and its state when the
    # call ran and changed nothing: what the reply says instead of an entity id.
    target_name: str | None = None
    unchanged_state: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The result as the tool's data, fields that are unset or empty left out."""
        return {k: v for k, v in asdict(self).items() if v not in (None, [])}


# ... and of the weather now, what a question about it asks ("and the humidity?").
_WEATHER_NOW = ("humidity", "wind_speed", "wind_speed_unit")


def _reported(state: State) -> dict[str, Any]:
    said = (*REPORTED_ATTRIBUTES, *_WEATHER_NOW) if state.domain == "weather" else REPORTED_ATTRIBUTES
    return {k: state.attributes[k] for k in said if k in state.attributes}


def live_state(hass: HomeAssistant, entity_id: str) -> dict[str, Any] | None:
    """The live state of one entity, as the read tools report it."""
    state = hass.states.get(entity_id)
    if state is None:
        return None
    return {"entity_id": entity_id, "name": state.name, "state": state.state, **_reported(state)}


# What a state does not tell: a list's items, a forecast, the coming events. HA's own
# services read them (as its LLM tools and intents do); the service, what it is given,
# and where its answer is. A question's get_state carries the first few.
_CONTENTS: dict[str, tuple[str, dict[str, Any], str]] = {
    "todo": ("get_items", {"status": ["needs_action"]}, "items"),
    "weather": ("get_forecasts", {"type": "daily"}, "forecast"),
    "calendar": ("get_events", {"duration": {"days": 7}}, "events"),
}
_CONTENT_ITEMS = 10
# Of each item, what answers a question: the rest is noise for a small model.
_CONTENT_FIELDS = (
    "summary", "status", "due", "start", "end", "location",
    "datetime", "condition", "temperature", "templow", "precipitation_probability", "precipitation", "wind_speed",
)  # fmt: skip


async def async_state_said(hass: HomeAssistant, state: State, language: str | None = None) -> str | None:
    """The state as HA's own frontend says it in `language` (HA's by default): "open"
    for a window sensor's "on", from HA's translations of the entity's domain and device
    class; None where it has none or it says the same."""
    translations = await translation.async_get_translations(
        hass, language or hass.config.language, "entity_component", [state.domain]
    )
    device_class = state.attributes.get("device_class") or "_"
    key = f"component.{state.domain}.entity_component.{device_class}.state.{state.state}"
    said = translations.get(key) or translations.get(f"component.{state.domain}.entity_component._.state.{state.state}")
    return said.lower() if said and said.lower() != state.state.replace("_", " ") else None


async def async_contents(hass: HomeAssistant, entity_id: str, context: Context) -> dict[str, Any]:
    """What `entity_id` holds beyond its state (a to-do list's open items, a weather
    forecast, a calendar's events of the next 7 days), read through HA's own service as
    the asking user; empty for other domains or when the entity cannot tell."""
    domain = entity_id.split(".", 1)[0]
    if domain not in _CONTENTS:
        return {}
    service, data, key = _CONTENTS[domain]
    if not hass.services.has_service(domain, service):
        return {}
    try:
        response = await hass.services.async_call(
            domain, service, {"entity_id": entity_id, **data}, blocking=True, context=context, return_response=True
        )
    except (HomeAssistantError, probatio.Invalid) as err:
        return {f"{key}_error": str(err)}
    found = cast(dict[str, Any], response or {}).get(entity_id) or {}
    items = [{f: item[f] for f in _CONTENT_FIELDS if item.get(f) not in (None, "")} for item in found.get(key, [])]
    more = len(items) - _CONTENT_ITEMS
    return {key: items[:_CONTENT_ITEMS]} | ({f"{key}_more": more} if more > 0 else {})


async def _async_call_service(hass: HomeAssistant, call: ValidCall, context: Context) -> None:
    """The call's service; "play X" searches the player's media and plays the first find."""
    if call.tool.service != SEARCH_AND_PLAY or MEDIA_QUERY not in call.data:
        await hass.services.async_call(
            call.domain, call.tool.service, call.service_data, blocking=True, context=context
        )
        return
    # Small models write titles like entity ids ("bohemian_rhapsody"): search the words.
    query = {"entity_id": call.entity_id, "search_query": str(call.data[MEDIA_QUERY]).replace("_", " ")}
    response = await hass.services.async_call(
        call.domain, "search_media", query, blocking=True, context=context, return_response=True
    )
    # Each player's SearchMedia (its `result`: BrowseMedia items), as HA's own media tool reads it.
    found: SearchMedia | None = cast(dict[str, SearchMedia], response or {}).get(call.entity_id)
    first = next((item for item in found.result if item.can_play), None) if found else None
    if first is None:
        raise HomeAssistantError(f"nothing found for {call.data[MEDIA_QUERY]!r}")
    media = {"media_content_id": first.media_content_id, "media_content_type": first.media_content_type}
    await hass.services.async_call(
        call.domain, "play_media", {"entity_id": call.entity_id, **media}, blocking=True, context=context
    )


def state_change(old: State, new: State | None) -> StateChange | None:
    """What differs between two states of an entity (its reported attributes), if anything."""
    before, after = _reported(old), _reported(new) if new else {}
    attributes = {
        k: [before.get(k), after.get(k)] for k in sorted(before.keys() | after.keys()) if before.get(k) != after.get(k)
    }
    if new is not None and old.state == new.state and not attributes:
        return None
    return StateChange(old.entity_id, old.name, old.state, new.state if new else None, attributes)


async def async_check(hass: HomeAssistant, call: ValidCall, context: Context) -> None:
    """HA's checks; CallRejectedError says which failed."""
    entity_id = call.entity_id
    if hass.states.get(entity_id) is None:
        raise CallRejectedError(f"{entity_id} no longer exists")
    if not async_should_expose(hass, CONVERSATION_DOMAIN, entity_id):
        raise CallRejectedError(f"{entity_id} is not exposed to voice assistants")
    if call.tool.read_only:
        return
    if context.user_id is not None:
        user = await hass.auth.async_get_user(context.user_id)
        if user is None or not user.permissions.check_entity(entity_id, POLICY_CONTROL):
            raise CallRejectedError(f"the user is not allowed to control {entity_id}")
    if call.tool.service == SEARCH_AND_PLAY and MEDIA_QUERY in call.data:
        if not hass.services.has_service(call.domain, "search_media"):
            raise CallRejectedError(f"the service {call.domain}.search_media is not available")
        return
    service = hass.services.async_services_for_domain(call.domain).get(call.tool.service)
    if service is None:
        raise CallRejectedError(f"the service {call.domain}.{call.tool.service} is not available")
    if service.schema is not None:
        try:
            service.schema(call.service_data)
        except probatio.Invalid as err:
            raise CallRejectedError(f"{call.domain}.{call.tool.service} refused the data: {err}") from err
    if call.domain == "todo" and call.tool.service == "update_item":
        _item_as_listed(hass, call)


def _item_as_listed(hass: HomeAssistant, call: ValidCall) -> None:
    """The item to update, as the list spells it ("lemons" is "Lemons": HA finds
    an item by its exact summary), written into `call`; CallRejectedError if it is not on
    the list, as HA's own intent checks before it acts (read from the entity, as the
    intent does: reading is not a service call)."""
    wanted = str(call.data.get("item", ""))
    if (listed := listed_item(hass, call.entity_id, wanted)) is not None:
        call.data["item"] = listed
        return
    name = state.name if (state := hass.states.get(call.entity_id)) else call.entity_id
    raise CallRejectedError(f"{wanted!r} is not on {name}")


def listed_item(hass: HomeAssistant, entity_id: str, wanted: str) -> str | None:
    """The item of to-do list `entity_id` that `wanted` means, as the list spells it: the
    same summary (or uid), the same without case or word ends, else the one item with all
    its words ("recycling": "Take out recycling"); `wanted` as it is where the list's items
    cannot be read, None where no one item fits."""
    component = hass.data.get(TODO_COMPONENT)
    entity = component.get_entity(entity_id) if component else None
    if entity is None or entity.todo_items is None:
        return wanted
    if any(wanted in (i.summary, i.uid) for i in entity.todo_items):
        return wanted
    words = item_words(wanted)
    for fits in (
        lambda summary: summary.casefold() == wanted.casefold(),
        lambda summary: item_words(summary) == words,
        lambda summary: bool(words) and words <= item_words(summary),
    ):
        fitting = {i.summary for i in entity.todo_items if i.summary and fits(i.summary)}
        if len(fitting) == 1:
            return fitting.pop()
    return None


async def async_run(hass: HomeAssistant, call: ValidCall, context: Context, language: str | None = None) -> CallResult:
    """Check and run `call`; the result says what changed, or why nothing ran (a state
    read, in `language`'s words too)."""
    result = CallResult(call.tool.name, call.arguments, executed=False)
    if (existing := hass.states.get(call.entity_id)) is not None:
        result.target_name = existing.name
    try:
        await async_check(hass, call, context)
    except CallRejectedError as err:
        result.error = str(err)
        return result
    result.arguments = call.arguments  # as the checks wrote it (an item as its list spells it)
    before = hass.states.get(call.entity_id)
    assert before is not None
    if call.tool.name == GET_STATE:
        result.executed = True
        result.state = live_state(hass, call.entity_id)
        if result.state is not None:
            result.state |= await async_contents(hass, call.entity_id, context)
            if said := await async_state_said(hass, before, language):
                result.state["state_said"] = said
        return result
    changed = asyncio.Event()

    @callback
    def state_written(_event: Event[EventStateChangedData] | Event[EventStateReportedData]) -> None:
        changed.set()

    # A device that writes its state unchanged (already off) has answered too: no waiting.
    unsubscribers = (
        async_track_state_change_event(hass, [call.entity_id], state_written),
        async_track_state_report_event(hass, [call.entity_id], state_written),
    )
    try:
        await _async_call_service(hass, call, context)
        # Many devices report their new state a moment after the service returns.
        if not changed.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), STATE_SETTLE_SECONDS)
    except (HomeAssistantError, probatio.Invalid, ValueError) as err:
        result.error = f"{call.domain}.{call.tool.service} failed: {err}"
        hass.bus.async_fire(EVENT_CALL_EXECUTED, {"user_id": context.user_id, **result.as_dict()}, context=context)
        return result
    finally:
        for unsubscribe in unsubscribers:
            unsubscribe()
    result.executed = True
    after = hass.states.get(call.entity_id)
    if (change := state_change(before, after)) is not None:
        result.changes.append(change)
    elif after is not None:
        result.unchanged_state = after.state
    hass.bus.async_fire(EVENT_CALL_EXECUTED, {"user_id": context.user_id, **result.as_dict()}, context=context)
    return result


def intent_successes(result: Mapping[str, Any], *, answers: bool = False) -> list[Mapping[str, Any]]:
    """The devices an HA intent's result says it acted on (its `success` entities), or
    with `answers` also those an answer to a question was about."""
    data = result.get("data")
    kinds = ("action_done", "query_answer") if answers else ("action_done",)
    if result.get("response_type") not in kinds or not isinstance(data, Mapping):
        return []
    return [t for t in data.get("success") or () if isinstance(t, Mapping) and t.get("type") == "entity"]


def intent_outcome(
    hass: HomeAssistant, result: Mapping[str, Any], before: Mapping[str, State]
) -> dict[str, Any] | None:
    """A result of HA's intent tools (Assist API) as one of ours, with what changed since
    `before`, if the intent acted on every target it matched; None otherwise (a failure,
    an answer to a question, another tool's result)."""
    data = result.get("data")
    targets = intent_successes(result)
    if not isinstance(data, Mapping) or data.get("failed") or not targets:
        return None
    changes = [
        asdict(change)
        for target in targets
        if (old := before.get(str(target.get("id")))) is not None
        and (change := state_change(old, hass.states.get(old.entity_id))) is not None
    ]
    names = ", ".join(str(t.get("name") or t.get("id")) for t in targets)
    # A device that reports its new state later shows no change yet: "Done", not "already".
    return {"name": result.get("name"), "arguments": {"entity_id": names}, "changes": changes, "intent": True}
