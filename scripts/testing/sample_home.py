"""The core tests' homes: fixture homes turned into the core's entities, and HA's service descriptions.

Homes are written in the one fixture format of the evaluation, the benchmark and the
stress runs (`scripts/evaluation/fixtures.py`: `home_from_mapping`): the sample home is
the named fixture `homes/sample-home.yaml`, the generated homes a generated mapping.
`home_entities` fills the core's `HomeEntity` from a fixture as `home_snapshot.py` fills
it from Home Assistant, with no Home Assistant.

The descriptions follow HA's `async_get_all_descriptions` output (filters already turned
into feature numbers and attribute values), for the services the core tests need.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from custom_components.botpsy.core.home import Home, HomeEntity, services_from_descriptions
from scripts.evaluation.fixtures import HomeFixture, home_from_mapping, load_home

SAMPLE_HOME = Path(__file__).with_name("homes") / "sample-home.yaml"

BRIGHTNESS_MODES = ["brightness", "color_temp", "hs", "xy", "rgb", "rgbw", "rgbww"]
COLOR_MODES = ["hs", "xy", "rgb", "rgbw", "rgbww"]
FAN_SET_SPEED, FAN_PRESET = 1, 8
PLAYER_VOLUME_SET, PLAYER_SELECT_SOURCE = 4, 2048

DESCRIPTIONS: dict[str, dict[str, Any]] = {
    "light": {
        "turn_on": {
            "description": "Turns on one or more lights and adjusts their properties.",
            "target": {"entity": [{"domain": ["light"]}]},
            "fields": {
                "transition": {"filter": {"supported_features": [32]}, "selector": {"number": {"min": 0, "max": 300}}},
                "rgb_color": {
                    "filter": {"attribute": {"supported_color_modes": COLOR_MODES}},
                    "selector": {"color_rgb": {}},
                },
                "color_temp_kelvin": {
                    "filter": {"attribute": {"supported_color_modes": ["color_temp", *COLOR_MODES]}},
                    "selector": {"color_temp": {"unit": "kelvin", "min": 2000, "max": 6500}},
                },
                "brightness_pct": {
                    "filter": {"attribute": {"supported_color_modes": BRIGHTNESS_MODES}},
                    "selector": {"number": {"min": 0, "max": 100, "unit_of_measurement": "%"}},
                },
                "effect": {"filter": {"supported_features": [4]}, "selector": {"state": {"attribute": "effect"}}},
                "advanced_fields": {"collapsed": True, "fields": {"brightness": {"selector": {"number": {}}}}},
            },
        },
        "turn_off": {
            "description": "Turns off one or more lights.",
            "target": {"entity": [{"domain": ["light"]}]},
            "fields": {},
        },
        "toggle": {"description": "Toggles lights.", "target": {"entity": [{"domain": ["light"]}]}, "fields": {}},
    },
    "switch": {
        "turn_on": {"description": "Turns a switch on.", "target": {"entity": [{"domain": ["switch"]}]}, "fields": {}},
        "turn_off": {
            "description": "Turns a switch off.",
            "target": {"entity": [{"domain": ["switch"]}]},
            "fields": {},
        },
    },
    "fan": {
        "set_percentage": {
            "description": "Sets the speed of a fan.",
            "target": {"entity": [{"domain": ["fan"], "supported_features": [FAN_SET_SPEED]}]},
            "fields": {
                "percentage": {
                    "required": True,
                    "selector": {"number": {"min": 0, "max": 100, "unit_of_measurement": "%"}},
                }
            },
        },
        "set_preset_mode": {
            "description": "Sets the preset mode of a fan.",
            "target": {"entity": [{"domain": ["fan"], "supported_features": [FAN_PRESET]}]},
            "fields": {"preset_mode": {"required": True, "selector": {"state": {"attribute": "preset_mode"}}}},
        },
    },
    "climate": {
        "set_hvac_mode": {
            "description": "Sets HVAC operation mode.",
            "target": {"entity": [{"domain": ["climate"]}]},
            "fields": {"hvac_mode": {"selector": {"state": {"hide_states": ["unavailable", "unknown"]}}}},
        },
        "set_temperature": {
            "description": "Sets the target temperature.",
            "target": {"entity": [{"domain": ["climate"], "supported_features": [1]}]},
            "fields": {"temperature": {"selector": {"number": {"min": 0, "max": 250, "step": 0.1}}}},
        },
    },
    "media_player": {
        "volume_set": {
            "description": "Sets the volume level.",
            "target": {"entity": [{"domain": ["media_player"], "supported_features": [PLAYER_VOLUME_SET]}]},
            "fields": {"volume_level": {"required": True, "selector": {"number": {"min": 0, "max": 1, "step": 0.01}}}},
        },
        "select_source": {
            "description": "Sends the media player the command to change input source.",
            "target": {"entity": [{"domain": ["media_player"], "supported_features": [PLAYER_SELECT_SOURCE]}]},
            "fields": {"source": {"required": True, "selector": {"state": {"attribute": "source"}}}},
        },
    },
    "lock": {
        "lock": {
            "description": "Locks a lock.",
            "target": {"entity": [{"domain": ["lock"]}]},
            "fields": {"code": {"selector": {"text": {}}}},
        },
        "unlock": {
            "description": "Unlocks a lock.",
            "target": {"entity": [{"domain": ["lock"]}]},
            "fields": {"code": {"selector": {"text": {}}}},
        },
    },
    "todo": {
        "add_item": {
            "description": "Adds a new to-do list item.",
            "target": {"entity": [{"domain": ["todo"]}]},
            "fields": {"item": {"required": True, "selector": {"text": {}}}},
        },
        "get_items": {"description": "Gets items.", "target": {"entity": [{"domain": ["todo"]}]}, "fields": {}},
    },
    "homeassistant": {"restart": {"description": "Restarts Home Assistant.", "fields": {}}},
}


def _features(entity_id: str, value: Any) -> int:
    """A fixture's `supported_features` as a number: HA's enum names need HA to resolve."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"{entity_id}: supported_features {value!r} is no number (only HA resolves its names)")


def home_entities(fixture: HomeFixture) -> tuple[HomeEntity, ...]:
    """The fixture's entities as `home_snapshot.py` makes them of HA's: area and floor by
    name, aliases sorted, the device class and features read from the attributes (which
    keep them, as HA's state attributes do). A state the fixture leaves to the domain's
    default is "unknown" here: that default is the HA test home's to choose."""
    areas = {area.area_id: area for area in fixture.areas}
    floors = {floor.floor_id: floor for floor in fixture.floors}
    entities = []
    for item in fixture.entities:
        area = areas.get(item.area_id) if item.area_id else None
        floor = floors.get(area.floor_id) if area and area.floor_id else None
        device_class = item.attributes.get("device_class")
        entities.append(
            HomeEntity(
                entity_id=item.entity_id,
                name=item.name,
                state=item.state if item.state is not None else "unknown",
                aliases=tuple(sorted(item.aliases)),
                area=area.name if area else None,
                floor=floor.name if floor else None,
                area_aliases=tuple(sorted(area.aliases)) if area else (),
                floor_aliases=tuple(sorted(floor.aliases)) if floor else (),
                floor_level=floor.level if floor else None,
                device_class=str(device_class) if device_class is not None else None,
                supported_features=_features(item.entity_id, item.attributes.get("supported_features")),
                attributes=dict(item.attributes),
            )
        )
    return tuple(entities)


@cache
def _sample_entities() -> tuple[HomeEntity, ...]:
    return home_entities(load_home(SAMPLE_HOME))


def sample_home() -> Home:
    """The named sample home (`homes/sample-home.yaml`) with the descriptions' services."""
    return Home(_sample_entities(), services_from_descriptions(DESCRIPTIONS))


ROOMS = (
    "Kitchen", "Living room", "Bedroom", "Office", "Hallway", "Garage", "Bathroom", "Porch", "Attic", "Basement",
    "Dining room", "Guest room", "Nursery", "Laundry", "Garden", "Study", "Pantry", "Den", "Loft", "Patio",
)  # fmt: skip
# Domain, kind, attributes, features and state of each kind of device. Ceiling lights are
# on (the benchmark's measured request turns one off; lamps stay off, its warm-up request
# turns one on), locks locked, sensors and thermostats reading 21.5 °C, everything else off.
_KINDS: tuple[tuple[str, str, dict[str, Any], int, str], ...] = (
    ("light", "ceiling light", {"supported_color_modes": ["brightness"]}, 0, "on"),
    ("light", "lamp", {"supported_color_modes": ["onoff"]}, 0, "off"),
    ("switch", "plug", {}, 0, "off"),
    ("fan", "fan", {"preset_modes": ["auto", "sleep"]}, FAN_SET_SPEED | FAN_PRESET, "off"),
    ("climate", "thermostat", {"hvac_modes": ["off", "heat"], "current_temperature": 21.5}, 1, "off"),
    ("media_player", "speaker", {"source_list": ["Radio", "Spotify"]}, PLAYER_VOLUME_SET | PLAYER_SELECT_SOURCE, "off"),
    ("sensor", "temperature", {"device_class": "temperature", "unit_of_measurement": "°C"}, 0, "21.5"),
    ("lock", "door lock", {}, 0, "locked"),
)


def generated_mapping(count: int) -> dict[str, Any]:
    """A fixture home of `count` entities spread over rooms and device kinds, for shortlist
    and scaling runs (the core tests' `generated_home`, the benchmark's scaling homes)."""
    entities = []
    for i in range(count):
        domain, kind, kind_attributes, features, state = _KINDS[i % len(_KINDS)]
        room = ROOMS[(i // len(_KINDS)) % len(ROOMS)]
        copy = i // (len(_KINDS) * len(ROOMS))
        suffix = f" {copy + 1}" if copy else ""
        slug = f"{room}_{kind}{suffix}".lower().replace(" ", "_")
        attributes = dict(kind_attributes)
        if features:
            attributes["supported_features"] = features
        entities.append(
            {"id": f"{domain}.{slug}", "name": f"{room} {kind}{suffix}", "area": room, "state": state,
             "attributes": attributes}
        )  # fmt: skip
    rooms = sorted({str(entity["area"]) for entity in entities})
    return {"areas": [{"name": room, "id": room.lower().replace(" ", "_")} for room in rooms], "entities": entities}


def generated_home(count: int) -> Home:
    """`generated_mapping(count)` as the core sees it."""
    return Home(home_entities(home_from_mapping(generated_mapping(count))), services_from_descriptions(DESCRIPTIONS))
