"""The tool compiler: targets and arguments per entity, stable output."""

from __future__ import annotations

from dataclasses import replace
from enum import IntFlag
import random

from homeassistant.helpers.llm import DEFAULT_INSTRUCTIONS_PROMPT
import pytest

from botpsy_runtime.chat_template import ChatTemplate
from custom_components.botpsy.core.home import Home, HomeEntity, ServiceSpec
from custom_components.botpsy.core.tools import (
    AT_LEAST_ONE,
    EXCLUSIVE_FIELDS,
    FIND_ENTITIES,
    GET_AREA_STATE,
    GET_STATE,
    MEDIA_QUERY,
    SEARCH_AND_PLAY,
    SKIPPED_FIELDS,
    Param,
    _param,
    compile_tools,
    function_schemas,
)
from custom_components.botpsy.llm_api import API_PROMPT
from scripts.testing.sample_home import generated_home, sample_home
from scripts.testing.tiny_gguf import QWEN35_CHAT_TEMPLATE


def by_key(home: Home) -> dict[str, dict[str, dict[str, object]]]:
    return {
        tool.key: {
            entity: {p.name: (p.type, p.options or (p.minimum, p.maximum)) for p in params}
            for entity, params in tool.targets.items()
        }
        for tool in compile_tools(home)
    }


def test_tools_and_targets_follow_capabilities() -> None:
    tools = by_key(sample_home())
    assert list(tools) == [
        "climate.set_hvac_mode", "climate.set_temperature", "fan.set_percentage", "fan.set_preset_mode",
        "light.turn_off", "light.turn_on", "lock.lock", "lock.unlock", "media_player.select_source",
        "media_player.volume_set", "switch.turn_off", "switch.turn_on", "todo.add_item", GET_STATE, GET_AREA_STATE,
        FIND_ENTITIES,
    ]  # fmt: skip
    light_on = tools["light.turn_on"]
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
    assert list(tools["fan.set_preset_mode"]) == ["fan.bedroom"]
    assert tools["fan.set_preset_mode"]["fan.bedroom"] == {"preset_mode": ("enum", ("auto", "sleep"))}
    assert set(tools["fan.set_percentage"]) == {"fan.attic", "fan.bedroom"}
    # Modes and sources come from the entity's own attributes.
    assert tools["climate.set_hvac_mode"]["climate.living"] == {"hvac_mode": ("enum", ("off", "heat", "auto"))}
    assert tools["media_player.select_source"]["media_player.tv"] == {"source": ("enum", ("HDMI 1", "Netflix"))}
    assert tools["media_player.volume_set"]["media_player.tv"] == {"volume_level": ("number", (0, 1))}
    # Lock codes are never offered to the model; sensors are only readable.
    assert tools["lock.unlock"]["lock.front_door"] == {}
    assert "sensor.outside_temperature" in tools[GET_STATE]
    assert not any("sensor.outside_temperature" in targets for name, targets in tools.items() if name != GET_STATE)
    assert tools[FIND_ENTITIES] == {}


def test_output_is_stable_and_independent_of_states() -> None:
    home = sample_home()
    shuffled = list(home.entities)
    random.Random(4).shuffle(shuffled)
    changed = [replace(e, state="unavailable") for e in shuffled]
    assert compile_tools(Home(tuple(changed), home.services[::-1])) == compile_tools(home)


def test_one_function_per_domain() -> None:
    schemas = {s["function"]["name"]: s["function"] for s in function_schemas(compile_tools(sample_home()))}
    assert list(schemas) == [
        "climate", "fan", "light", "lock", "media_player", "switch", "todo", GET_STATE, GET_AREA_STATE, FIND_ENTITIES
    ]  # fmt: skip
    light = schemas["light"]
    properties = light["parameters"]["properties"]
    # No entity in the schema: the same whichever devices a request concerns.
    assert properties["entity_id"] == {"type": "string"}
    assert "light.desk" not in str(light)
    # The domain's services are its actions; their arguments are merged.
    assert properties["action"] == {"type": "string", "enum": ["turn_off", "turn_on"]}
    assert properties["brightness_pct"] == {"type": "integer", "minimum": 0, "maximum": 100, "description": "%"}
    assert light["parameters"]["required"] == ["entity_id", "action"]
    # A service's own description stays where it is the function's only action; none is empty.
    assert "description" not in light
    assert schemas["todo"]["description"] == "Adds a new to-do list item."
    assert schemas["todo"]["parameters"]["required"] == ["entity_id", "action", "item"]
    assert schemas[GET_STATE]["description"] == "Current state of an entity"


def prompt_prefix(home: Home) -> str:
    """Instructions and tools in the Qwen3.5 template, up to where the user's turn begins."""
    system = DEFAULT_INSTRUCTIONS_PROMPT + "\n" + API_PROMPT
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "\x00"}]
    rendered = ChatTemplate(QWEN35_CHAT_TEMPLATE).render(messages, tools=function_schemas(compile_tools(home)))
    return rendered.split("\x00")[0]


@pytest.mark.parametrize("count", [25, 100, 1000])
def test_prompt_prefix_stays_small_and_stable(count: int) -> None:
    home = generated_home(count)
    prefix = prompt_prefix(home)
    # About four characters a token: at most 1,000 tokens even at 1,000 entities, leaving
    # the user's turn (a dozen device lines) room within a 1,500-token prompt.
    assert len(prefix) / 4 <= 1000
    # States and the entities' order do not change it.
    changed = [replace(e, state="on") for e in reversed(home.entities)]
    assert prompt_prefix(Home(tuple(changed), home.services)) == prefix


def test_players_that_search_get_one_play_action() -> None:
    """'Play X on Y' is one call: the player's search, then its first find played."""
    home = sample_home()
    searching = HomeEntity("media_player.kitchen", "Kitchen speaker", "idle", supported_features=512 | 4194304)
    services = (*home.services, ServiceSpec("media_player", "play_media"), ServiceSpec("media_player", "search_media"))
    tools = compile_tools(replace(home, entities=(*home.entities, searching), services=services))
    play = next(t for t in tools if t.service == SEARCH_AND_PLAY)
    assert (play.name, list(play.targets)) == ("media_player", ["media_player.kitchen"])  # not the TV: it cannot search
    assert [p.name for p in play.targets["media_player.kitchen"]] == [MEDIA_QUERY]
    # Without HA's search service there is nothing to search with.
    assert not any(
        t.service == SEARCH_AND_PLAY for t in compile_tools(replace(home, entities=(*home.entities, searching)))
    )


def _targets_by_definition(service: ServiceSpec, home: Home) -> dict[str, tuple[Param, ...]]:
    """A service's targets spelled out: every entity in id order, each field tried on it."""
    groups = EXCLUSIVE_FIELDS.get(service.domain, {})
    targets = {}
    for entity in sorted(home.entities, key=lambda e: e.entity_id):
        if not service.targets(entity):
            continue
        fields = [f for f in service.fields if f.name not in SKIPPED_FIELDS and f.applies_to(entity)]
        params = [(f, _param(f, entity)) for f in fields]
        if all(p is not None or not f.required for f, p in params):
            offered = tuple(replace(p, group=groups.get(f.name)) for f, p in params if p is not None)
            # Of "at least one of" alternatives, the only one the entity is offered is required.
            names = {p.name for p in offered}
            alternatives = AT_LEAST_ONE.get((service.domain, service.service), ())
            some = [a for a in alternatives if names & set(a)]
            if alternatives and not any(set(a) <= names for a in some):
                continue  # a call of none of them is refused: no target
            if len(some) == 1:
                offered = tuple(replace(p, required=True) if p.name in some[0] else p for p in offered)
            targets[entity.entity_id] = offered
    return targets


def _merge_by_definition(param_lists: list[tuple[Param, ...]]) -> tuple[Param, ...]:
    merged: dict[str, Param] = {}
    for params in param_lists:
        for p in params:
            known = merged.get(p.name)
            if known is None:
                merged[p.name] = p
            elif p.options:
                options = tuple(dict.fromkeys(known.options + p.options))
                merged[p.name] = replace(known, options=options, required=known.required and p.required)
            else:
                merged[p.name] = replace(known, required=known.required and p.required)
    return tuple(merged.values())


def test_targets_and_arguments_are_those_of_each_entity_in_a_big_home() -> None:
    """Services are tried only on their domains' entities, arguments that no entity changes
    are made once: the targets, their order and arguments are still each entity's own."""
    home = generated_home(1000)
    several = ServiceSpec("fan", "turn_on", "Turns on.", target_domains=("fan", "light", "fan"))
    player = sample_home().entities[7]  # the TV: its own sources
    entities = (
        *home.entities,
        replace(player, entity_id="media_player.zz", attributes={"source_list": ["HDMI 2", "HDMI 2"]}),
        replace(home.entities[0], entity_id="light.with_flags", supported_features=IntFlag("F", "A B C").C),
    )
    services = (*sample_home().services, several)
    big = Home(entities, services)
    tools = compile_tools(big)
    compiled = [t for t in tools if t.service]
    assert len(compiled) == 13
    for tool in compiled:
        service = next(s for s in services if (s.domain, s.service) == (tool.name, tool.service))
        assert list(tool.targets.items()) == list(_targets_by_definition(service, big).items()), tool.key
        assert tool.params() == _merge_by_definition(list(tool.targets.values())), tool.key
    source = next(t for t in tools if t.key == "media_player.select_source")
    assert source.targets["media_player.zz"][0].options == ("HDMI 2", "HDMI 2")  # as the entity lists them
    assert source.params()[0].options == ("Radio", "Spotify", "HDMI 2")


def test_a_thermostat_is_set_to_a_temperature_never_to_its_mode_alone() -> None:
    """HA refuses set_temperature without a temperature (at least one of its temperature
    fields): where a thermostat is offered one kind of them, that one is required."""
    tool = next(t for t in compile_tools(sample_home()) if t.key == "climate.set_temperature")
    temperatures = [p for params in tool.targets.values() for p in params if p.name == "temperature"]
    assert temperatures and all(p.required for p in temperatures)
    assert [p.required for p in tool.params() if p.name == "temperature"] == [True]
