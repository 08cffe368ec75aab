"""The tool compiler: targets and arguments per entity, stable output."""

from __future__ import annotations

from dataclasses import replace
import random

from homeassistant.helpers.llm import DEFAULT_INSTRUCTIONS_PROMPT
import pytest

from custom_components.botpsy.core.chat_template import ChatTemplate
from custom_components.botpsy.core.home import Home
from custom_components.botpsy.core.tools import FIND_ENTITIES, GET_AREA_STATE, GET_STATE, compile_tools
from custom_components.botpsy.llm_api import API_PROMPT
from tests.tiny_gguf import QWEN35_CHAT_TEMPLATE

from .sample_home import generated_home, sample_home


def by_name(home: Home) -> dict[str, dict[str, dict[str, object]]]:
    return {
        tool.name: {
            entity: {p.name: (p.type, p.options or (p.minimum, p.maximum)) for p in params}
            for entity, params in tool.targets.items()
        }
        for tool in compile_tools(home)
    }


def test_tools_and_targets_follow_capabilities() -> None:
    tools = by_name(sample_home())
    assert list(tools) == [
        "climate_set_hvac_mode", "climate_set_temperature", "fan_set_percentage", "fan_set_preset_mode",
        "light_turn_off", "light_turn_on", "lock_lock", "lock_unlock", "media_player_select_source",
        "media_player_volume_set", "switch_turn_off", "switch_turn_on", "todo_add_item", GET_STATE, GET_AREA_STATE,
        FIND_ENTITIES,
    ]  # fmt: skip
    light_on = tools["light_turn_on"]
    # Per-light arguments: only what each light supports; no transition, no advanced fields.
    assert light_on["light.hallway"] == {}
    assert light_on["light.desk"] == {"brightness_pct": ("integer", (0, 100))}
    assert light_on["light.kitchen"] == {
        "rgb_color": ("rgb", (None, None)),
        "color_temp_kelvin": ("integer", (2200, 6000)),
        "brightness_pct": ("integer", (0, 100)),
        "effect": ("enum", ("rainbow", "none")),
    }
    # A fan without presets is no target of the preset service.
    assert list(tools["fan_set_preset_mode"]) == ["fan.bedroom"]
    assert tools["fan_set_preset_mode"]["fan.bedroom"] == {"preset_mode": ("enum", ("auto", "sleep"))}
    assert set(tools["fan_set_percentage"]) == {"fan.attic", "fan.bedroom"}
    # Modes and sources come from the entity's own attributes.
    assert tools["climate_set_hvac_mode"]["climate.living"] == {"hvac_mode": ("enum", ("off", "heat", "auto"))}
    assert tools["media_player_select_source"]["media_player.tv"] == {"source": ("enum", ("HDMI 1", "Netflix"))}
    assert tools["media_player_volume_set"]["media_player.tv"] == {"volume_level": ("number", (0, 1))}
    # Lock codes are never offered to the model; sensors are only readable.
    assert tools["lock_unlock"]["lock.front_door"] == {}
    assert "sensor.outside_temperature" in tools[GET_STATE]
    assert not any("sensor.outside_temperature" in targets for name, targets in tools.items() if name != GET_STATE)
    assert tools[FIND_ENTITIES] == {}


def test_output_is_stable_and_independent_of_states() -> None:
    home = sample_home()
    shuffled = list(home.entities)
    random.Random(4).shuffle(shuffled)
    changed = [replace(e, state="unavailable") for e in shuffled]
    assert compile_tools(Home(tuple(changed), home.services[::-1])) == compile_tools(home)


def test_json_schema() -> None:
    tool = next(t for t in compile_tools(sample_home()) if t.name == "light_turn_on")
    schema = tool.json_schema()["function"]
    assert schema["name"] == "light_turn_on"
    properties = schema["parameters"]["properties"]
    # No entity in the schema: the same whichever devices a request concerns.
    assert properties["entity_id"] == {"type": "string"}
    assert "light.desk" not in str(schema)
    assert properties["brightness_pct"] == {"type": "integer", "minimum": 0, "maximum": 100, "description": "%"}
    assert schema["parameters"]["required"] == ["entity_id"]


def prompt_prefix(home: Home) -> str:
    """Instructions and tools in the Qwen3.5 template, up to where the user's turn begins."""
    system = DEFAULT_INSTRUCTIONS_PROMPT + "\n" + API_PROMPT
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "\x00"}]
    rendered = ChatTemplate(QWEN35_CHAT_TEMPLATE).render(messages, tools=[t.json_schema() for t in compile_tools(home)])
    return rendered.split("\x00")[0]


@pytest.mark.parametrize("count", [25, 100, 1000])
def test_prompt_prefix_stays_small_and_stable(count: int) -> None:
    home = generated_home(count)
    prefix = prompt_prefix(home)
    # About four characters a token: at most 1,500 tokens, even at 1,000 entities.
    assert len(prefix) / 4 <= 1500
    # States and the entities' order do not change it.
    changed = [replace(e, state="on") for e in reversed(home.entities)]
    assert prompt_prefix(Home(tuple(changed), home.services)) == prefix
