"""A small home in the shapes HA's adapters produce: entities and service descriptions.

The descriptions follow HA's `async_get_all_descriptions` output (filters already turned
into feature numbers and attribute values), for the services the core tests need.
"""

from __future__ import annotations

from typing import Any

from custom_components.botpsy.core.home import Home, HomeEntity, services_from_descriptions

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

ENTITIES = (
    HomeEntity("light.kitchen", "Kitchen light", "on", area="Kitchen",
               attributes={"supported_color_modes": ["color_temp", "hs"], "min_color_temp_kelvin": 2200,
                       "max_color_temp_kelvin": 6000, "effect_list": ["rainbow", "none"]},
               supported_features=4),
    HomeEntity("light.hallway", "Hallway light", "off", area="Hallway",
               attributes={"supported_color_modes": ["onoff"]}),
    HomeEntity("light.desk", "Desk lamp", "off", aliases=("study lamp",), area="Office",
               attributes={"supported_color_modes": ["brightness"]}),
    HomeEntity("switch.coffee", "Coffee machine", "off", area="Kitchen"),
    HomeEntity("fan.bedroom", "Bedroom fan", "off", area="Bedroom", supported_features=FAN_SET_SPEED | FAN_PRESET,
               attributes={"preset_modes": ["auto", "sleep"]}),
    HomeEntity("fan.attic", "Attic fan", "off", area="Attic", supported_features=FAN_SET_SPEED),
    HomeEntity("climate.living", "Living room thermostat", "heat", area="Living room", supported_features=1,
               attributes={"hvac_modes": ["off", "heat", "auto"], "min_temp": 7, "max_temp": 35}),
    HomeEntity("media_player.tv", "TV", "on", area="Living room",
               supported_features=PLAYER_VOLUME_SET | PLAYER_SELECT_SOURCE,
               attributes={"source_list": ["HDMI 1", "Netflix"]}),
    HomeEntity("lock.front_door", "Front door", "locked", area="Hallway"),
    HomeEntity("todo.shopping", "Shopping list", "2", area=None),
    HomeEntity("sensor.outside_temperature", "Outside temperature", "12.5", device_class="temperature"),
)  # fmt: skip


def sample_home() -> Home:
    return Home(ENTITIES, services_from_descriptions(DESCRIPTIONS))


ROOMS = (
    "Kitchen", "Living room", "Bedroom", "Office", "Hallway", "Garage", "Bathroom", "Porch", "Attic", "Basement",
    "Dining room", "Guest room", "Nursery", "Laundry", "Garden", "Study", "Pantry", "Den", "Loft", "Patio",
)  # fmt: skip
_KINDS = (
    ("light", "ceiling light", {"supported_color_modes": ["brightness"]}, 0),
    ("light", "lamp", {"supported_color_modes": ["onoff"]}, 0),
    ("switch", "plug", {}, 0),
    ("fan", "fan", {"preset_modes": ["auto", "sleep"]}, FAN_SET_SPEED | FAN_PRESET),
    ("climate", "thermostat", {"hvac_modes": ["off", "heat"]}, 1),
    ("media_player", "speaker", {"source_list": ["Radio", "Spotify"]}, PLAYER_VOLUME_SET | PLAYER_SELECT_SOURCE),
    ("sensor", "temperature", {}, 0),
    ("lock", "door lock", {}, 0),
)


def generated_home(count: int) -> Home:
    """`count` entities spread over rooms and device kinds, for shortlist and scaling runs."""
    entities = []
    for i in range(count):
        domain, kind, attributes, features = _KINDS[i % len(_KINDS)]
        room = ROOMS[(i // len(_KINDS)) % len(ROOMS)]
        copy = i // (len(_KINDS) * len(ROOMS))
        suffix = f" {copy + 1}" if copy else ""
        slug = f"{room}_{kind}{suffix}".lower().replace(" ", "_")
        entities.append(
            HomeEntity(f"{domain}.{slug}", f"{room} {kind}{suffix}", "off", area=room,
                   supported_features=features, attributes=attributes)
        )  # fmt: skip
    return Home(tuple(entities), services_from_descriptions(DESCRIPTIONS))
