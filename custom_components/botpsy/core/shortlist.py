"""Pick the entities a request can be about, so prompt and grammar stay small in big homes.

Scores names and aliases (fuzzy, so "kitchen lamp" finds "Kitchen light"), areas and
floors, domain words ("lights", "thermostat") and device classes; recently used entities
get a small bonus. Entities left out stay reachable through the `find_entities` tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from difflib import SequenceMatcher
from functools import lru_cache
import re

from .home import HomeEntity
from .tools import Tool

# Enough for a request about several devices; more costs the model attention and the
# prompt tokens (every line is evaluated on each request).
DEFAULT_LIMIT = 12
# Homes this small are shown whole: nothing is left out, at a few hundred tokens at most.
SMALL_HOME = 24
_WORD = re.compile(r"[\w']+")
# Words that point at a domain (English; other languages still match names and areas).
DOMAIN_WORDS: dict[str, tuple[str, ...]] = {
    "light": ("light", "lights", "lamp", "lamps", "bulb", "dim", "brightness", "bright", "dark"),
    "switch": ("switch", "plug", "socket", "outlet"),
    "fan": ("fan", "fans", "ventilator"),
    "cover": ("blind", "blinds", "shade", "shades", "curtain", "curtains", "cover", "shutter", "shutters", "garage"),
    "valve": ("valve", "water", "tap", "watering", "irrigation", "sprinkler"),
    "lock": ("lock", "unlock", "door", "locked"),
    "climate": (
        "thermostat",
        "heating",
        "heat",
        "temperature",
        "ac",
        "cooling",
        "warmer",
        "colder",
        "hvac",
        "degree",
        "degrees",
    ),
    "media_player": (
        "tv",
        "music",
        "speaker",
        "volume",
        "play",
        "pause",
        "song",
        "radio",
        "television",
        "skip",
        "track",
        "next",
        "previous",
        "resume",
        "unpause",
        "replay",
        "album",
        "playlist",
        "artist",
        # What is said of what plays, as HA's own media sentences say it.
        "louder",
        "quieter",
        "turn it up",
        "turn it down",
        "go back",
        "hold on",
        "continue",
        "audio",
        "playing",
    ),
    "vacuum": ("vacuum", "robot", "clean", "cleaning", "vacuuming", "base", "dock", "charging station"),
    "scene": ("scene", "mood"),
    "script": ("script", "routine"),
    "todo": ("list", "todo", "shopping", "add", "chores", "buy", "shop", "groceries", "grocery"),
    # What a forecast or a calendar answers.
    "weather": (
        "weather",
        "forecast",
        "rain",
        "snow",
        "sunny",
        "umbrella",
        "storm",
        "outside",
        # What people wear for it: "will I need a coat tomorrow?".
        "coat",
        "jacket",
        "sunglasses",
        "sunscreen",
        "windy",
        "frost",
        "icy",
    ),
    "calendar": (
        "calendar",
        "appointment",
        "appointments",
        "event",
        "events",
        "meeting",
        "meetings",
        "schedule",
        "agenda",
        "plans",
        "anything on",
        "happening",
        # "What's on tomorrow?" (not "what's on?": the devices that are).
        "on today",
        "on tonight",
        "on tomorrow",
        "on this week",
        "on this weekend",
        "on at the weekend",
    ),
    "sensor": ("temperature", "humidity", "sensor", "power", "energy"),
    "alarm_control_panel": ("alarm", "arm", "disarm"),
}


@lru_cache(maxsize=8192)
def words(text: str) -> tuple[str, ...]:
    """The lowercased words of `text`, apostrophes kept (`don't`)."""
    return tuple(_WORD.findall(text.lower()))


@lru_cache(maxsize=65536)
def _similar(a: str, b: str) -> bool:
    """Equal, or close enough to be a misspelling (cheap bounds first: this runs per word pair)."""
    if a == b:
        return True
    if len(a) <= 3 or len(b) <= 3 or abs(len(a) - len(b)) > 2:
        return False
    matcher = SequenceMatcher(None, a, b)
    return matcher.real_quick_ratio() >= 0.8 and matcher.quick_ratio() >= 0.8 and matcher.ratio() >= 0.8


def score(entity: HomeEntity, query: Sequence[str]) -> float:
    """How well `entity` fits the query's words (0: not at all)."""
    return _Scorer(query)(entity)


class _Scorer:
    """`score` for one query over many entities: what depends only on the query and a word,
    a phrase (an area's name), a domain or a device class is worked out once, not once per
    entity (a request scores every entity of the home)."""

    __slots__ = ("_classes", "_domains", "_found", "_joined", "_overlaps", "query")

    def __init__(self, query: Sequence[str]) -> None:
        self.query = query
        self._joined = " ".join(query)
        self._found: dict[str, bool] = {}  # word -> whether the query has it (fuzzily)
        self._overlaps: dict[str, float] = {}  # phrase -> share of its words found
        self._domains: dict[str, bool] = {}
        self._classes: dict[str, bool] = {}

    def overlap(self, phrase: str) -> float:
        """Share of the phrase's words found (fuzzily) in the query."""
        share = self._overlaps.get(phrase)
        if share is None:
            target = words(phrase)
            found = self._found
            hits = 0
            for t in target:
                hit = found.get(t)
                if hit is None:
                    hit = found[t] = any(_similar(q, t) for q in self.query)
                hits += hit
            share = self._overlaps[phrase] = hits / len(target) if target else 0.0
        return share

    def __call__(self, entity: HomeEntity) -> float:
        result = 3 * max([self.overlap(entity.name), *(self.overlap(a) for a in entity.aliases)])
        for place, aliases in ((entity.area, entity.area_aliases), (entity.floor, entity.floor_aliases)):
            if place and any(self.overlap(p) == 1.0 for p in (place, *aliases)):
                result += 2
        domain = entity.domain
        said = self._domains.get(domain)
        if said is None:
            said = self._domains[domain] = any(w in self.query for w in DOMAIN_WORDS.get(domain, ()))
        if said:
            result += 1.5
        if device_class := entity.device_class:
            named = self._classes.get(device_class)
            if named is None:
                named = self._classes[device_class] = device_class.replace("_", " ") in self._joined
            if named:
                result += 1
        return result


def shortlist(
    entities: Sequence[HomeEntity],
    utterance: str,
    *,
    limit: int = DEFAULT_LIMIT,
    small_home: int = SMALL_HOME,
    recent: Iterable[str] = (),
) -> tuple[str, ...]:
    """Ids of the entities `utterance` most likely concerns, at most `limit` (all of them
    in homes of up to `small_home` entities)."""
    if len(entities) <= max(limit, small_home):
        return tuple(e.entity_id for e in entities)
    query = words(utterance)
    recent_ids = set(recent)
    score_of = _Scorer(query)
    scored = [(score_of(e) + (0.5 if e.entity_id in recent_ids else 0), e.entity_id) for e in entities]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    return tuple(sorted(entity_id for _score, entity_id in ranked[:limit]))


def restrict(tools: Iterable[Tool], entity_ids: Iterable[str]) -> tuple[Tool, ...]:
    """The tools with only the given targets; tools left without targets are dropped."""
    keep = set(entity_ids)
    result = []
    for tool in tools:
        targets = {e: p for e, p in tool.targets.items() if e in keep}
        if targets:
            result.append(replace(tool, targets=targets))
    return tuple(result)


def find_entities(entities: Sequence[HomeEntity], query: str, *, limit: int = 8) -> list[dict[str, str | None]]:
    """The search behind the `find_entities` tool: best matches with name, area and state."""
    score_of = _Scorer(words(query))
    ranked = sorted(((score_of(e), e) for e in entities), key=lambda s: (-s[0], s[1].entity_id))
    return [
        {"entity_id": e.entity_id, "name": e.name, "area": e.area, "state": e.state} for s, e in ranked[:limit] if s > 0
    ]
