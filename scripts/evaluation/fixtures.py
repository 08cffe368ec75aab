"""Test homes of the evaluation datasets, parsed into plain dataclasses.

Three shapes exist: the assist-mini `_fixtures.yaml` (areas, devices, entities with ids),
the intents `_fixtures.yaml` (floors, areas, entities with hassil-template names) and the
newer intents case files (entities with only `name` and `domain`). `home_from_mapping`
reads all three. Nothing here imports Home Assistant, so the dataset code can use it
without starting one; enum references such as `cover.CoverDeviceClass.GARAGE` stay strings
and the home loader resolves them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
import re
from typing import Any, Protocol

from slugify import slugify as _unicode_slugify
import yaml

# Domains whose YAML booleans mean "on"/"off"; others map true/false to their own words.
_BOOLEAN_STATES: dict[str, tuple[str, str]] = {
    "cover": ("open", "closed"),
    "valve": ("open", "closed"),
    "lock": ("locked", "unlocked"),
    "person": ("home", "not_home"),
    "device_tracker": ("home", "not_home"),
}
_VALID_ENTITY_ID = re.compile(r"^(?!.+__)(?!_)[\da-z_]+(?<!_)\.(?!_)[\da-z_]+(?<!_)$")
SHOPPING_LIST_ENTITY_ID = "todo.shopping_list"


def slugify(text: str) -> str:
    """Home Assistant's slugify (python-slugify with `_`), so derived ids match HA's."""
    if not text:
        return ""
    slug: str = _unicode_slugify(text, separator="_")
    return slug or "unknown"


@dataclass(frozen=True)
class FloorFixture:
    """A floor of the home."""

    floor_id: str
    name: str
    level: int | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class AreaFixture:
    """An area (room), optionally on a floor."""

    area_id: str
    name: str
    floor_id: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceFixture:
    """A device; its entities inherit its area unless they name their own."""

    device_id: str
    name: str
    area_id: str | None = None
    manufacturer: str | None = None
    model: str | None = None
    sw_version: str | None = None
    # The id as the fixture wrote it, when another device had it too (public homes reuse ids).
    source_id: str | None = None


@dataclass(frozen=True)
class EntityFixture:
    """One entity: `state` None means the domain's sensible default.

    `attributes` are raw fixture values: enum references stay strings like
    `cover.CoverEntityFeature.OPEN` for the loader to resolve inside Home Assistant.
    `source_id` is the id as the fixture wrote it, when it had to be made valid.
    """

    entity_id: str
    name: str
    area_id: str | None = None
    device_id: str | None = None
    state: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    source_id: str | None = None

    @property
    def domain(self) -> str:
        """The entity's domain (`light` for `light.porch`)."""
        return self.entity_id.split(".", 1)[0]

    @property
    def object_id(self) -> str:
        """The part after the dot."""
        return self.entity_id.split(".", 1)[1]


@dataclass(frozen=True)
class HomeFixture:
    """A whole test home.

    `shopping_list` asks the loader for Home Assistant's real shopping list (needed by the
    HassShoppingList* intents); `media` are titles a media player's search finds.
    """

    areas: tuple[AreaFixture, ...] = ()
    floors: tuple[FloorFixture, ...] = ()
    devices: tuple[DeviceFixture, ...] = ()
    entities: tuple[EntityFixture, ...] = ()
    language: str = "en"
    shopping_list: bool = False
    media: tuple[str, ...] = ()
    timers: tuple[Mapping[str, Any], ...] = ()

    def entity(self, entity_id: str) -> EntityFixture:
        """The entity with that id (or the fixture's original spelling of it)."""
        for entity in self.entities:
            if entity_id in (entity.entity_id, entity.source_id):
                return entity
        raise KeyError(entity_id)


# --- hassil template names --------------------------------------------------------------


def expand_template(text: str) -> list[str]:
    """All plain phrasings of a hassil template: `[x]` optional, `(a|b)` alternatives.

    The first item is the natural name: every optional part kept and the first
    alternative taken ("Trader Joe[']s" -> "Trader Joe's", then "Trader Joes").
    """
    options = _expand(text, 0, stop="")[0]
    seen: dict[str, None] = {}
    for option in options:
        cleaned = " ".join(option.split())
        if cleaned:
            seen.setdefault(cleaned, None)
    return list(seen) or [text]


def _expand(text: str, pos: int, stop: str) -> tuple[list[str], int]:
    """Parse a sequence of alternatives until `stop`; returns its phrasings and the end."""
    alternatives: list[list[str]] = []
    current = [""]
    while pos < len(text):
        char = text[pos]
        if char in stop:
            break
        if char == "|":
            alternatives.append(current)
            current = [""]
            pos += 1
        elif char in "([":
            closing = ")" if char == "(" else "]"
            inner, pos = _expand(text, pos + 1, stop=closing)
            pos += 1  # the closing bracket
            if char == "[":
                inner = [*inner, ""]
            current = [prefix + part for prefix in current for part in inner]
        elif char == "<":  # hassil rule reference: keep it readable, it cannot be expanded here
            end = text.find(">", pos)
            end = len(text) if end < 0 else end + 1
            current = [prefix + text[pos + 1 : end - 1] for prefix in current]
            pos = end
        elif char == "{":  # slot list reference
            end = text.find("}", pos)
            end = len(text) if end < 0 else end + 1
            current = [prefix + text[pos + 1 : end - 1] for prefix in current]
            pos = end
        else:
            current = [prefix + char for prefix in current]
            pos += 1
    alternatives.append(current)
    return [phrase for group in alternatives for phrase in group], pos


def _names(raw: Any) -> tuple[str, list[str]]:
    """The display name and alias phrasings of a (possibly templated) fixture name."""
    text = str(raw or "").strip()
    if not any(char in text for char in "[]()|"):
        return text, []
    phrasings = expand_template(text)
    return phrasings[0], phrasings[1:]


# --- parsing ----------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _aliases(raw: Any) -> list[str]:
    if raw is None:
        return []
    items = [raw] if isinstance(raw, str) else list(raw)
    out: list[str] = []
    for item in items:
        name, more = _names(item)
        out.extend([name, *more])
    return [alias for alias in out if alias]


def normalize_state(domain: str, raw: Any) -> str | None:
    """A fixture state as Home Assistant writes it (`false` -> `off`, `closed`, ...).

    The intents fixtures give `{in: "text in the sentence", out: "real state"}`: the real
    state is `out`. An empty string or a missing state means "the domain's default".
    """
    if isinstance(raw, Mapping):
        raw = raw.get("out", raw.get("state"))
    if raw is None:
        return None
    if isinstance(raw, bool):
        on, off = _BOOLEAN_STATES.get(domain, ("on", "off"))
        return on if raw else off
    text = str(raw)
    return text if text.strip() else None


def valid_entity_id(entity_id: str) -> bool:
    """Whether Home Assistant accepts this id as written."""
    return bool(_VALID_ENTITY_ID.match(entity_id))


def _make_entity_id(raw_id: str | None, domain: str | None, name: str, taken: set[str]) -> str:
    """The fixture's id when valid, else a valid one made from it (or from domain + name)."""
    if raw_id and valid_entity_id(raw_id):
        entity_id = raw_id
    else:
        if raw_id and "." in raw_id:
            domain, _, object_part = raw_id.partition(".")
        else:
            object_part = name
        entity_id = f"{slugify(domain or 'sensor')}.{slugify(object_part) or 'unnamed'}"
    return _unique(entity_id, taken)


def _unique(wanted: str, taken: set[str]) -> str:
    """`wanted`, or `wanted_2`, `wanted_3`... if taken; taken from then on."""
    result, number = wanted, 2
    while result in taken:
        result = f"{wanted}_{number}"
        number += 1
    taken.add(result)
    return result


class _InArea(Protocol):
    @property
    def area_id(self) -> str | None: ...


def in_area[T: _InArea](same: Sequence[T], area_id: str | None) -> T | None:
    """Of fixture items that share an id, the one in `area_id` (else the first)."""
    return next((item for item in same if item.area_id == area_id), same[0] if same else None)


class _AreaIndex:
    """Resolves area references by id or by name, creating areas for unknown names."""

    def __init__(self, areas: list[AreaFixture]) -> None:
        self.areas = areas

    def resolve(self, ref: Any) -> str | None:
        if ref is None or str(ref).strip() == "":
            return None
        text = str(ref)
        for area in self.areas:
            if text == area.area_id:
                return area.area_id
        for area in self.areas:
            if text.casefold() == area.name.casefold() or text.casefold() in (a.casefold() for a in area.aliases):
                return area.area_id
        area_id = slugify(text)
        if not any(area.area_id == area_id for area in self.areas):
            self.areas.append(AreaFixture(area_id=area_id, name=text))
        return area_id


def _floors(raw: Iterable[Any]) -> list[FloorFixture]:
    floors: list[FloorFixture] = []
    for item in raw:
        name, alternates = _names(item.get("name") or item.get("id"))
        floors.append(
            FloorFixture(
                floor_id=str(item.get("id") or item.get("floor_id") or slugify(name)),
                name=name,
                level=item.get("level"),
                aliases=tuple(dict.fromkeys([*alternates, *_aliases(item.get("aliases"))])),
            )
        )
    return floors


def _resolve_floor(ref: Any, floors: list[FloorFixture]) -> str | None:
    if ref is None:
        return None
    text = str(ref)
    for floor in floors:
        if text in (floor.floor_id, floor.name) or text.casefold() == floor.name.casefold():
            return floor.floor_id
    floor_id = slugify(text)
    floors.append(FloorFixture(floor_id=floor_id, name=text))
    return floor_id


def _areas(raw: Iterable[Any], floors: list[FloorFixture]) -> list[AreaFixture]:
    areas: list[AreaFixture] = []
    for item in raw:
        name, alternates = _names(item.get("name") or item.get("id"))
        areas.append(
            AreaFixture(
                area_id=str(item.get("id") or item.get("area_id") or slugify(name)),
                name=name,
                floor_id=_resolve_floor(item.get("floor"), floors),
                aliases=tuple(dict.fromkeys([*alternates, *_aliases(item.get("aliases"))])),
            )
        )
    return areas


def _devices(raw: Iterable[Any], areas: _AreaIndex) -> list[DeviceFixture]:
    devices: list[DeviceFixture] = []
    taken: set[str] = set()
    for item in raw:
        info = item.get("info") or {}
        name = str(item.get("name") or item.get("id"))
        raw_id = str(item.get("id") or slugify(name))
        device_id = _unique(raw_id, taken)
        devices.append(
            DeviceFixture(
                device_id=device_id,
                source_id=raw_id if device_id != raw_id else None,
                name=name,
                area_id=areas.resolve(item.get("area")),
                manufacturer=_text(info.get("manufacturer")),
                model=_text(info.get("model")),
                sw_version=_text(info.get("sw_version")),
            )
        )
    return devices


def _device_of(ref: str | None, area_id: str | None, devices: list[DeviceFixture]) -> DeviceFixture | None:
    """The device an entity names: of several with that id, the one in the entity's area."""
    return in_area([d for d in devices if ref in (d.device_id, d.source_id)], area_id) if ref else None


def _entities(raw: Iterable[Any], areas: _AreaIndex, devices: list[DeviceFixture]) -> list[EntityFixture]:
    taken: set[str] = set()
    entities: list[EntityFixture] = []
    for item in raw:
        raw_id = _text(item.get("id") or item.get("entity_id"))
        domain = _text(item.get("domain")) or (raw_id.split(".", 1)[0] if raw_id and "." in raw_id else None)
        name, alternates = _names(item.get("name") or (raw_id.split(".", 1)[-1].replace("_", " ") if raw_id else ""))
        entity_id = _make_entity_id(raw_id, domain, name, taken)
        domain = entity_id.split(".", 1)[0]
        area_id = areas.resolve(item.get("area"))
        device = _device_of(_text(item.get("device")), area_id, devices)
        if area_id is None and device is not None:
            area_id = device.area_id
        entities.append(
            EntityFixture(
                entity_id=entity_id,
                name=name,
                area_id=area_id,
                device_id=device.device_id if device else None,
                state=normalize_state(domain, item.get("state")),
                attributes=dict(item.get("attributes") or {}),
                aliases=tuple(dict.fromkeys([*alternates, *_aliases(item.get("aliases"))])),
                source_id=raw_id if raw_id and raw_id != entity_id else None,
            )
        )
    return entities


def home_from_mapping(data: Mapping[str, Any]) -> HomeFixture:
    """Parse any of the three fixture shapes (assist-mini, intents, intents case file)."""
    floors = _floors(data.get("floors") or [])
    areas = _AreaIndex(_areas(data.get("areas") or [], floors))
    devices = _devices(data.get("devices") or [], areas)
    entities = _entities(data.get("entities") or [], areas, devices)
    is_intents = "language" in data or any("domain" in (item or {}) for item in data.get("entities") or [])
    media = tuple(
        str(item.get("title") if isinstance(item, Mapping) else item)
        for item in data.get("media") or []
        if item is not None
    )
    return HomeFixture(
        areas=tuple(areas.areas),
        floors=tuple(floors),
        devices=tuple(devices),
        entities=tuple(entities),
        language=str(data.get("language") or "en"),
        shopping_list=is_intents or any(entity.entity_id == SHOPPING_LIST_ENTITY_ID for entity in entities),
        media=media,
        timers=tuple(dict(timer) for timer in data.get("timers") or []),
    )


def load_home(path: Path) -> HomeFixture:
    """Read a fixture file (any of the three shapes) from disk."""
    with path.open(encoding="utf-8") as stream:
        data = yaml.safe_load(stream) or {}
    return home_from_mapping(data)
