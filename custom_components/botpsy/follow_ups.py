"""Follow-ups done without the model (`core.follow_up`), read from the chat log and HA's states.

"A bit brighter" after dimming the floor lamp moves that lamp a step from where it is now;
"and the towel heater" after switching on the coffee machine switches the heater on; "no,
not the fan, the sofa lamp" (the fan already put back) switches the lamp on. The calls run
as the model's would (validated, held for a yes where one is needed, reported by what
changed); where they cannot be written exactly, the model has the request.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant

from botpsy_runtime.formats import ToolCall

from .core.follow_up import (
    Relative,
    added_item,
    again_calls,
    asks_its_own_action,
    corrected_calls,
    for_the_air,
    further,
    is_again,
    is_done_with,
    items_meant,
    meant,
    moves,
    moving,
    option_corrected,
    relative_call,
    relative_change,
)
from .core.home import HomeEntity
from .core.policy import base_language
from .core.requested import Named, named_in
from .core.tools import ACTION
from .core.validate import CallRejectedError, validate_call
from .toolbox import Toolbox

if TYPE_CHECKING:
    from .request import Scope


def turns(chat_log: conversation.ChatLog) -> list[list[conversation.Content]]:
    """The chat log's earlier turns (before the one being answered), each from its user
    content to the next, oldest first."""
    found: list[list[conversation.Content]] = []
    for content in chat_log.content[:-1]:
        if isinstance(content, conversation.UserContent):
            found.append([])
        if found:
            found[-1].append(content)
    return found


def acted(turn: Iterable[conversation.Content]) -> list[ToolCall]:
    """The calls of BotPsy's actions in `turn` that ran without error."""
    turn = list(turn)
    results = [c for c in turn if isinstance(c, conversation.ToolResultContent)]
    ran = {c.tool_call_id for c in results}
    failed = {c.tool_call_id for c in results if isinstance(data := c.result.data, dict) and data.get("error")}
    return [
        ToolCall(call.tool_name, dict(call.tool_args))
        for content in turn
        if isinstance(content, conversation.AssistantContent)
        for call in content.tool_calls or ()
        if call.id in ran and call.id not in failed and {"entity_id", ACTION} <= call.tool_args.keys()
    ]


def follow_up_calls(
    hass: HomeAssistant, chat_log: conversation.ChatLog, scope: Scope, *, correction: bool = False
) -> list[ToolCall] | None:
    """The calls a follow-up asks for that can be written without the model: a relative
    change of what it names (or of what the turn before acted on), an item of the list
    just read done, the turn before again on what it names, or what a correction meant
    (in German, French and Spanish: the relative change, and the turn before again);
    None where it is none of these, or the calls cannot be exactly those."""
    if scope.question:
        return None
    language = base_language(scope.phrases.language) if scope.phrases else "en"
    # In another language, besides a relative change, only the turn before again ("et la
    # lumière de l'entrée aussi").
    again = is_again(scope.utterance, language)
    earlier = turns(chat_log) if scope.english or again else []
    # "A bit brighter"; "a bit more" after a change of a level.
    change = relative_change(scope.utterance, language)
    if change is None and earlier and scope.english:
        change = further(scope.utterance, changes_of(earlier[-1]))
    if change is not None:
        return _relative_calls(hass, scope, change)
    if not earlier:
        return None
    if scope.english and ((item := added_item(scope.utterance)) is not None or is_done_with(scope.utterance)):
        return _list_calls(scope, earlier[-1], item)
    if (correction and scope.english) or again:
        return _again_calls(scope, earlier[-1], correction=correction and scope.english)
    return None


def _relative_calls(hass: HomeAssistant, scope: Scope, change: Relative) -> list[ToolCall] | None:
    """ "A bit brighter": each device it is about, a step from its state now ("it's cold
    in the hallway": of the devices there that move its temperature)."""
    calls: list[ToolCall] = []
    # A place names its devices for sure; part of a name ("too dark by the bed") may not.
    named = scope.named
    if change.quantity == "light":
        return _for_the_dark(hass, scope) if named.areas or named.floors else None
    for entity in _targets(scope.toolbox, named, moving(change.quantity) if named.areas or named.floors else ()):
        if (quantity := moves(entity.domain)) is None or change.quantity not in (None, quantity):
            continue
        state = hass.states.get(entity.entity_id)
        call = relative_call(change, entity, state.state, state.attributes) if state else None
        if call is None:
            return None
        calls.append(call)
    if not calls and (named.areas or named.floors) and change.quantity in ("temperature", "air"):
        # Hot, cold or stuffy in a place where nothing sets a temperature: its fans (the
        # 0.5B opened or closed the curtains there).
        for entity in _targets(scope.toolbox, named, ("fan",)):
            state = hass.states.get(entity.entity_id)
            if state and (call := for_the_air(change, entity, state.state, state.attributes)):
                calls.append(call)
    return _valid(scope.toolbox, calls)


def _for_the_dark(hass: HomeAssistant, scope: Scope) -> list[ToolCall] | None:
    """ "It's dark in the study": the lights there that are off go on; if none is off,
    each a step brighter."""
    lights = [
        (entity, state)
        for entity in _targets(scope.toolbox, scope.named, ("light",))
        if (state := hass.states.get(entity.entity_id)) is not None
    ]
    off = [ToolCall("light", {"entity_id": e.entity_id, ACTION: "turn_on"}) for e, s in lights if s.state == "off"]
    brighter = [relative_call(Relative("brightness", up=True), e, s.state, s.attributes) for e, s in lights]
    return _valid(scope.toolbox, off or [c for c in brighter if c is not None])


def _list_calls(scope: Scope, before: list[conversation.Content], item: str | None) -> list[ToolCall] | None:
    """ "Tick that off", "add weed the borders" after reading a list: the items its words
    (or the question's) say done, or the `item` it adds, on that list."""
    if (read := _list_read(before)) is None:
        return None
    entity_id, items = read
    if item is not None:
        added = ToolCall("todo", {"entity_id": entity_id, ACTION: "add_item", "item": item})
        # Its words alone name no device (the conversation's list aside), only a list's kind.
        alone = named_in(scope.utterance, scope.toolbox.home.entities, here=scope.here)
        nothing_else = not (alone.entity_ids or alone.partly) and (alone.domains or frozenset()) <= {"todo"}
        return _valid(scope.toolbox, [added]) if nothing_else else None
    asked = [c.content for c in before if isinstance(c, conversation.UserContent)]
    done = [
        ToolCall("todo", {"entity_id": entity_id, ACTION: "update_item", "item": item, "status": "completed"})
        for item in items_meant(items, scope.utterance, *asked)
    ]
    return _valid(scope.toolbox, done) if done else None


def _again_calls(scope: Scope, before: list[conversation.Content], *, correction: bool) -> list[ToolCall] | None:
    """ "And the towel heater": the turn before's action on what this one names (for a
    correction, on what it meant)."""
    done = acted(before)
    if not done:
        return None
    toolbox = scope.toolbox
    # What it names now, without what the conversation named before (that is the turn before's).
    words = meant(scope.utterance) if correction else scope.utterance
    # (In another language, what HA's sentences and the names said read: `Scope.named`.)
    named = named_in(words, toolbox.home.entities, here=scope.here) if scope.english else scope.named
    # "Sorry, I meant heat" ("heat" is also a word of the Heat Pump's name): the turn
    # before's calls with the option said.
    if (
        correction
        and not (named.entity_ids or named.areas or named.floors)
        and (calls := option_corrected(done, partial(_options, toolbox), scope.utterance)) is not None
    ):
        return _valid(toolbox, calls)
    if correction and named.nothing:
        # "Sorry, I meant 22": the turn before's level, said again.
        asked = " ".join(c.content for c in before if isinstance(c, conversation.UserContent))
        return _valid(toolbox, corrected_calls(done, asked, scope.utterance) or [])
    # "No wait, I meant open the blinds": an action of its own, the model's.
    if correction and asks_its_own_action(scope.utterance):
        return None
    targets = _targets(toolbox, named, {call.name for call in done})
    offered: dict[str, frozenset[str]] = {}
    for tool in toolbox.compiled:
        for entity_id in tool.targets if not tool.read_only else ():
            offered[entity_id] = offered.get(entity_id, frozenset()) | {tool.service}
    return _valid(toolbox, again_calls(done, targets, offered) or [])


def _options(toolbox: Toolbox, call: ToolCall) -> dict[str, tuple[str, ...]]:
    """The arguments of `call` that take one of a list of options, on its target."""
    tool = next((t for t in toolbox.compiled if t.name == call.name and t.service == call.arguments.get(ACTION)), None)
    params = tool.targets.get(str(call.arguments.get("entity_id")), ()) if tool else ()
    return {p.name: p.options for p in params if p.type == "enum"}


def changes_of(turn: Iterable[conversation.Content]) -> list[dict[str, Any]]:
    """What the calls of `turn` changed, as their results say."""
    return [
        change
        for content in turn
        if isinstance(content, conversation.ToolResultContent)
        and isinstance(data := content.result.data, dict)
        and isinstance(listed := data.get("changes"), list)
        for change in listed
        if isinstance(change, dict)
    ]


def _list_read(turn: Iterable[conversation.Content]) -> tuple[str, list[str]] | None:
    """The one to-do list `turn` read, and its items as read; None if it read none or several."""
    lists = {}
    for content in turn:
        if isinstance(content, conversation.ToolResultContent) and isinstance(data := content.result.data, dict):
            state = data.get("state")
            if isinstance(state, dict) and str(state.get("entity_id")).startswith("todo."):
                items = state.get("items")
                listed = items if isinstance(items, list) else []
                said = [str(i["summary"]) for i in listed if isinstance(i, dict) and i.get("summary")]
                lists[str(state["entity_id"])] = said
    return next(iter(lists.items())) if len(lists) == 1 else None


def _targets(toolbox: Toolbox, named: Named, domains: Iterable[str] = ()) -> list[HomeEntity]:
    """The devices a follow-up is about: those it names by name, else those that fit the
    kinds and places it names; a place alone, or part of one name, means its devices of
    `domains` (those the turn before acted on)."""
    actionable = toolbox.actionable()
    if named.entity_ids and not (named.kinds or named.areas or named.floors):
        return [e for e in actionable if e.entity_id in named.entity_ids]
    if named.kinds:
        fitting = [e for e in actionable if named.fits(e)]
        if named.all_that_fit or len(fitting) < 2:
            return fitting
        # A kind said of one device ("I meant the lamp by the sofa"): the one its words
        # name best, if one; else the model reads it (it switched every light on).
        closest = [e for e in fitting if e.entity_id in named.closest]
        return closest if len(closest) == 1 else []
    if named.areas or named.floors:
        return [e for e in actionable if named.fits(e) and e.domain in set(domains)]
    # Part of one name, of a kind the turn before acted on ("that was for the shopping").
    partly = [e for e in actionable if e.entity_id in named.partly and e.domain in set(domains)]
    return partly if len(partly) == 1 else []


def _valid(toolbox: Toolbox, calls: list[ToolCall]) -> list[ToolCall] | None:
    """`calls` with their values typed, if every one is valid; else None (the model decides)."""
    tools = {t.key: t for t in toolbox.compiled}
    try:
        return [ToolCall(c.name, validate_call(c, tools).arguments) for c in calls] or None
    except CallRejectedError:
        return None
