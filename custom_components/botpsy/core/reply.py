"""Say what happened, from the call results alone: no claim without a call that did it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
import re
from typing import Any
import unicodedata

# A device as a model may name it: an entity id or a name, letters of any script.
_SPEAKABLE = re.compile(r"[\w .,'\u2019&()+-]{1,80}")
_TAG = re.compile(r"<[^<>\n]{0,60}>?")
# A call's JSON that a model wrote into a value: from its first brace on.
_JSON = re.compile(r"\{.*", re.S)
_REASON_LIMIT = 200


def _target(value: Any) -> str:
    """The device a call named, if it can be said: never call syntax or a wall of text."""
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return text if _SPEAKABLE.fullmatch(text) else "a device I could not make out"


def _reason(text: str) -> str:
    """A rejection's reason, said to a person: without tags of call syntax, invisible
    characters or the length of a value a model made up."""
    text = _JSON.sub("…", _TAG.sub("…", text))
    text = "".join(c for c in text if unicodedata.category(c)[0] != "C" or c == " ")
    text = " ".join(text.split())
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 1] + "…"


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # "20 → 21", as it is said, not "20.0 → 21.0"
    return "unset" if value is None else str(value)


def _attribute(name: str, old: Any, new: Any) -> str:
    if name == "brightness":  # HA's 0-255 scale; people speak in percent
        old, new = (None if v is None else f"{round(v * 100 / 255)} %" for v in (old, new))
    return f"{name.replace('_', ' ')} {_value(old)} → {_value(new)}"


def describe(results: Sequence[Mapping[str, Any]]) -> str:
    """One sentence per call: what changed, what ran without a visible change, or why not."""
    sentences = []
    for result in results:
        arguments = result.get("arguments") or {}
        # HA's intents name a device by `name`; a tool's own name is call syntax, not said.
        # A device that exists is said by its name; one a model made up, as it wrote it.
        target = _target(result.get("target_name") or arguments.get("entity_id") or arguments.get("name") or "anything")
        if result.get("error"):
            # HA's intents put the reason in `error_text` beside the error's type.
            sentences.append(f"I did not change {target}: {_reason(result.get('error_text') or result['error'])}.")
            continue
        changes = result.get("changes") or []
        for change in changes:
            parts = []
            switched = change.get("old_state") != change.get("new_state")
            if switched:
                parts.append(f"{_value(change.get('old_state'))} → {_value(change.get('new_state'))}")
            for key, (old, new) in (change.get("attributes") or {}).items():
                # Attributes that vanished with the new state (a light's brightness when
                # it turns off) are no news; of those that came with it (a light turned
                # on), only what people ask about or the call set, said as it is now.
                if new is None or (switched and old is None and key not in _FACTS and key not in arguments):
                    continue
                parts.append(
                    f"{_FACTS.get(key, key.replace('_', ' '))} {attribute_value(key, new)}"
                    if switched and old is None
                    else _attribute(key, old, new)
                )
            sentences.append(f"{change.get('name') or change['entity_id']}: {', '.join(parts)}.")
        if not changes:
            # HA's intents report no states: one it ran may change its device a moment later.
            if result.get("intent"):
                sentences.append(f"Done: {target}.")
            elif unchanged := result.get("unchanged_state"):
                sentences.append(f"{target} was already {unchanged}: nothing changed.")
            else:
                sentences.append(f"{target}: nothing changed.")
    return " ".join(dict.fromkeys(sentences))  # the same failure twice is said once


# Attributes a question about a device is usually about, as people say them.
_FACTS = {
    "current_temperature": "current temperature",
    "temperature": "target temperature",
    "current_position": "position",
    "brightness": "brightness",
    "percentage": "speed",
    "volume_level": "volume",
    "media_title": "playing",
    "hvac_mode": "mode",
}


def describe_states(results: Sequence[Mapping[str, Any]], days: frozenset[date] = frozenset()) -> str:
    """The facts read for a question, a sentence per device: read from HA, never made up.
    `days`: the dates a question asks of, which a forecast says alone where it has them."""
    states = [r["state"] for r in results if isinstance(r.get("state"), Mapping)]
    states += [s for r in results for s in r.get("entities") or () if isinstance(s, Mapping) and "state" in s]
    sentences = []
    for state in states:
        name = state.get("name") or state.get("entity_id")
        if (contents := _contents(name, state, days)) is not None:
            sentences.append(contents)
            continue
        unit = f" {state['unit_of_measurement']}" if state.get("unit_of_measurement") else ""
        weather = str(state.get("entity_id", "")).startswith("weather.")
        facts = [
            f"{'temperature' if weather and key == 'temperature' else label} {attribute_value(key, state[key])}"
            for key, label in _FACTS.items()
            if state.get(key) is not None
        ]
        text = f"{name} is {state.get('state_said') or state.get('state')}{unit}"
        sentences.append(f"{text}, {', '.join(facts)}." if facts else f"{text}.")
    return " ".join(dict.fromkeys(sentences))


def _contents(name: Any, state: Mapping[str, Any], days: frozenset[date]) -> str | None:
    """What a list, a forecast or a calendar holds, as read (None: not one of those)."""
    if isinstance(items := state.get("items"), list):
        summaries = [str(i.get("summary")) for i in items if isinstance(i, Mapping) and i.get("summary")]
        more = f" and {state['items_more']} more" if state.get("items_more") else ""
        if not summaries:
            return f"{name} has nothing on it."
        # How many too ("how many things are on it?"): the list's state is the count.
        count = str(state.get("state", ""))
        head = f"{name}, {count} item{'' if count == '1' else 's'}" if count.isdigit() else str(name)
        return f"{head}: {', '.join(summaries)}{more}."
    if isinstance(events := state.get("events"), list):
        said = [
            f"{e.get('summary')} {_when(e.get('start'))}{_until(e.get('start'), e.get('end'))}"
            for e in events
            if isinstance(e, Mapping)
        ]
        return f"{name}: {'; '.join(said)}." if said else f"{name} has no events in the next 7 days."
    if isinstance(forecast := state.get("forecast"), list):
        now = f"{name} is {state.get('state')}" + "".join(
            f", {said} {state[key]}{unit}"
            for key, said, unit in (
                ("temperature", "temperature", ""),
                ("humidity", "humidity", " %"),
                ("wind_speed", "wind", f" {state.get('wind_speed_unit') or ''}".rstrip()),
            )
            if state.get(key) is not None
        )
        listed = [day for day in forecast if isinstance(day, Mapping)]
        # "And on Monday?": that day, wherever it is in the forecast; else the next three.
        asked = [day for day in listed if _date(day.get("datetime")) in days]
        said = [_forecast_day(day) for day in (asked or listed)[:3]]
        return f"{now}. Forecast: {'; '.join(said)}." if said else f"{now}."
    return None


def _when(start: Any) -> str:
    """An event's start as a person reads it ("on Thu 3 Dec at 09:00"; all day: the date)."""
    text = str(start or "")
    try:
        if "T" not in text:
            return f"on {date.fromisoformat(text):%a %d %b}"
        return f"on {datetime.fromisoformat(text):%a %d %b at %H:%M}"
    except ValueError:
        return f"at {text}" if text else ""


def _until(start: Any, end: Any) -> str:
    """When an event of one day ends (" until 17:00"): "when does it finish?"."""
    try:
        begins, ends = datetime.fromisoformat(str(start)), datetime.fromisoformat(str(end))
    except ValueError:
        return ""
    return f" until {ends:%H:%M}" if "T" in str(end) and ends.date() == begins.date() else ""


def _date(when: Any) -> date | None:
    """The date of a forecast's day, None if it is none."""
    try:
        return datetime.fromisoformat(str(when)).date()
    except ValueError:
        return None


def _forecast_day(day: Mapping[str, Any]) -> str:
    """One day of a forecast: its date, sky, high and low, chance of rain."""
    when = _when(day.get("datetime")).removeprefix("on ").split(" at ")[0]
    parts = [f"{when} {day.get('condition') or ''}".strip()]
    if day.get("temperature") is not None:
        low = f" (low {day['templow']})" if day.get("templow") is not None else ""
        parts.append(f"{day['temperature']}{low}")
    if day.get("precipitation_probability") is not None:
        parts.append(f"{day['precipitation_probability']} % chance of precipitation")
    return ", ".join(parts)


def attribute_value(name: str, value: Any) -> str:
    """An attribute's value as a person reads it (brightness and volume in percent)."""
    if name == "brightness":
        return f"{round(value * 100 / 255)} %"
    if name == "volume_level":
        return f"{round(value * 100)} %"
    return str(value)
