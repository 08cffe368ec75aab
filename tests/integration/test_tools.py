"""Compiled tools on a realistic home of real HA entities: snapshots, calls that change state,
and calls that must change nothing."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from homeassistant.auth.models import User
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import area_registry as ar, device_registry as dr, entity_registry as er, llm
from homeassistant.setup import async_setup_component
import pytest
from syrupy.assertion import SnapshotAssertion

from botpsy_runtime.formats import FORMATS
from custom_components.botpsy import llm_api
from custom_components.botpsy.core.grammar import compile_grammar
from custom_components.botpsy.core.tools import compile_tools, function_schemas
from custom_components.botpsy.home_snapshot import async_snapshot_home
from custom_components.botpsy.llm_api import BOTPSY_API_ID

from .demo_home import async_setup_demo_home


@pytest.fixture
async def home(hass: HomeAssistant) -> None:
    await async_setup_demo_home(hass)
    assert await async_setup_component(hass, "botpsy", {})


async def call(
    hass: HomeAssistant, name: str, arguments: dict[str, Any], context: Context | None = None
) -> llm.ToolResult:
    llm_context = llm.LLMContext("test", context or Context(), "en", "conversation", None)
    api = await llm.async_get_api(hass, BOTPSY_API_ID, llm_context)
    return await api.async_call_tool(llm.ToolInput(name, arguments))


async def test_home_is_realistic(hass: HomeAssistant, home: None) -> None:
    snapshot_home = await async_snapshot_home(hass)
    domains = {e.domain for e in snapshot_home.entities}
    assert len(snapshot_home.entities) >= 40
    assert {"light", "switch", "fan", "cover", "valve", "lock", "climate", "media_player", "vacuum", "scene",
            "script", "todo", "sensor"} <= domains  # fmt: skip


async def test_compiled_schemas_and_grammar_snapshot(
    hass: HomeAssistant, home: None, snapshot: SnapshotAssertion
) -> None:
    tools = compile_tools(await async_snapshot_home(hass))
    assert function_schemas(tools) == snapshot(name="schemas")
    assert compile_grammar(tools, FORMATS["qwen_xml"]) == snapshot(name="grammar_qwen_xml")


@pytest.mark.parametrize(
    ("name", "arguments", "entity_id", "expected"),
    [
        (
            "light",
            {"entity_id": "light.bed_light", "action": "turn_on", "brightness_pct": 30},
            "light.bed_light",
            ("on", "brightness", 76),
        ),
        (
            "light",
            {"entity_id": "light.kitchen_lights", "action": "turn_off"},
            "light.kitchen_lights",
            ("off", None, None),
        ),
        (
            "cover",
            {"entity_id": "cover.garage_door", "action": "open_cover"},
            "cover.garage_door",
            ("open", None, None),
        ),
        (
            "climate",
            {"entity_id": "climate.hvac", "action": "set_hvac_mode", "hvac_mode": "heat"},
            "climate.hvac",
            ("heat", None, None),
        ),
        (
            "fan",
            {"entity_id": "fan.living_room_fan", "action": "set_percentage", "percentage": "40"},
            "fan.living_room_fan",
            ("on", "percentage", 40),
        ),
        ("lock", {"entity_id": "lock.front_door", "action": "unlock"}, "lock.front_door", ("unlocked", None, None)),
        (
            "media_player",
            {"entity_id": "media_player.living_room", "action": "volume_set", "volume_level": 0.25},
            "media_player.living_room",
            (None, "volume_level", 0.25),
        ),
        ("scene", {"entity_id": "scene.movie_night", "action": "turn_on"}, "light.ceiling_lights", ("off", None, None)),
        (
            "vacuum",
            {"entity_id": "vacuum.demo_vacuum_0_ground_floor", "action": "start"},
            "vacuum.demo_vacuum_0_ground_floor",
            ("cleaning", None, None),
        ),
    ],
)
@pytest.mark.usefixtures("home")
async def test_calls_change_real_states(
    hass: HomeAssistant, name: str, arguments: dict[str, Any], entity_id: str, expected: tuple[Any, ...]
) -> None:
    state, attribute, value = expected
    result = await call(hass, name, arguments)
    await hass.async_block_till_done()
    assert not result.error, result.data
    assert result.data["executed"] is True
    after = hass.states.get(entity_id)
    assert after is not None
    if state is not None:
        assert after.state == state
    if attribute is not None:
        assert after.attributes[attribute] == value
    if name != "scene":
        change = result.data["changes"][0]
        assert change["entity_id"] == entity_id
        assert change["new_state"] == after.state


async def test_todo_item_is_added(hass: HomeAssistant, home: None) -> None:
    result = await call(hass, "todo", {"entity_id": "todo.shopping_list", "action": "add_item", "item": "oat milk"})
    assert not result.error, result.data
    items = await hass.services.async_call(
        "todo", "get_items", target={"entity_id": "todo.shopping_list"}, blocking=True, return_response=True
    )
    assert [i["summary"] for i in items["todo.shopping_list"]["items"]] == ["oat milk"]  # type: ignore[index]


async def test_a_device_already_in_that_state_answers_at_once(
    hass: HomeAssistant, home: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A light already off writes its state unchanged: that is its answer, no waiting for
    a change that will not come (the wait is made long here, so waiting would show)."""
    monkeypatch.setattr("custom_components.botpsy.service_calls.STATE_SETTLE_SECONDS", 60)
    await hass.services.async_call("light", "turn_off", {"entity_id": "light.bed_light"}, blocking=True)
    async with asyncio.timeout(10):
        result = await call(hass, "light", {"entity_id": "light.bed_light", "action": "turn_off"})
    assert result.data["executed"] and "changes" not in result.data


async def test_get_state_reads_without_acting(hass: HomeAssistant, home: None) -> None:
    result = await call(hass, "get_state", {"entity_id": "sensor.outside_temperature"})
    assert result.data["state"]["state"] == hass.states.get("sensor.outside_temperature").state  # type: ignore[union-attr]


async def test_area_state_reads_an_area(hass: HomeAssistant, home: None) -> None:
    area_registry = ar.async_get(hass)
    kitchen = area_registry.async_create("Kitchen")
    entry = er.async_get(hass).async_get("light.kitchen_lights")
    assert entry is not None and entry.device_id is not None
    dr.async_get(hass).async_update_device(entry.device_id, area_id=kitchen.id)
    result = await call(hass, "get_area_state", {"area": "Kitchen"})
    found = {e["entity_id"]: e["state"] for e in result.data["entities"]}  # type: ignore[union-attr]
    assert found["light.kitchen_lights"] == "on"
    assert all(er.async_get(hass).async_get(e).device_id == entry.device_id for e in found)  # type: ignore[union-attr]


async def test_find_entities_reaches_beyond_the_shortlist(hass: HomeAssistant, home: None) -> None:
    result = await call(hass, "find_entities", {"query": "kitchen window"})
    assert result.data["entities"][0]["entity_id"] == "cover.kitchen_window"  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("light", {"entity_id": "light.garage", "action": "turn_on"}, "cannot be used"),
        ("light", {"entity_id": "light.bed_light", "action": "turn_on", "brightness_pct": 150}, "between 0 and 100"),
        (
            "light",
            {"entity_id": "light.bed_light", "action": "turn_on", "brightness_pct": "bright"},
            "must be a number",
        ),
        (
            "fan",
            {"entity_id": "fan.preset_only_limited_fan", "action": "set_preset_mode", "preset_mode": "turbo"},
            "must be one of",
        ),
        (
            "light",
            {"entity_id": "light.bed_light", "action": "turn_on", "rgb_color": [255, 0, 0], "color_temp_kelvin": 3000},
            "takes only one of rgb_color, color_temp_kelvin",
        ),
    ],
)
async def test_rejected_calls_change_nothing(
    hass: HomeAssistant, home: None, name: str, arguments: dict[str, Any], error: str
) -> None:
    before = {s.entity_id: (s.state, dict(s.attributes)) for s in hass.states.async_all()}
    result = await call(hass, name, arguments)
    await hass.async_block_till_done()
    assert result.error
    assert error in result.data["error"]
    assert result.data["executed"] is False
    assert {s.entity_id: (s.state, dict(s.attributes)) for s in hass.states.async_all()} == before


async def test_unknown_function_is_refused(hass: HomeAssistant, home: None) -> None:
    with pytest.raises(HomeAssistantError, match='Tool "lamp" not found'):
        await call(hass, "lamp", {"entity_id": "light.bed_light", "action": "turn_on"})
    result = await call(hass, "light", {"entity_id": "light.bed_light", "action": "dim"})
    assert result.error and "light needs an action: one of turn_off, turn_on, not 'dim'" in result.data["error"]


async def test_unexposed_or_removed_entity_is_refused(hass: HomeAssistant, home: None) -> None:
    llm_context = llm.LLMContext("test", Context(), "en", "conversation", None)
    api = await llm.async_get_api(hass, BOTPSY_API_ID, llm_context)  # compiled while both are exposed
    async_expose_entity(hass, "conversation", "light.ceiling_lights", False)
    result = await api.async_call_tool(
        llm.ToolInput("light", {"entity_id": "light.ceiling_lights", "action": "turn_off"})
    )
    assert result.error and "not exposed" in result.data["error"]
    assert hass.states.get("light.ceiling_lights").state == "on"  # type: ignore[union-attr]
    hass.states.async_remove("light.kitchen_lights")
    result = await api.async_call_tool(
        llm.ToolInput("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"})
    )
    assert result.error and "no longer exists" in result.data["error"]


async def test_user_without_permission_is_refused(hass: HomeAssistant, home: None, hass_read_only_user: User) -> None:
    context = Context(user_id=hass_read_only_user.id)
    before = hass.states.get("light.ceiling_lights")
    assert before is not None and before.state == "on"
    result = await call(hass, "light", {"entity_id": "light.ceiling_lights", "action": "turn_off"}, context)
    await hass.async_block_till_done()
    assert result.error and "not allowed" in result.data["error"]
    assert hass.states.get("light.ceiling_lights") == before


async def test_a_big_home_is_compiled_off_the_event_loop(
    hass: HomeAssistant, home: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same tools, compiled in the executor once a home is big (the loop stays free)."""
    llm_context = llm.LLMContext("test", Context(), "en", "conversation", None)
    on_loop = await llm.async_get_api(hass, BOTPSY_API_ID, llm_context)
    threads: list[str] = []

    def compile_and_record(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return compile_tools(*args)

    monkeypatch.setattr(llm_api, "compile_tools", compile_and_record)
    monkeypatch.setattr(llm_api, "COMPILE_IN_EXECUTOR_FROM", 1)
    in_executor = await llm.async_get_api(hass, BOTPSY_API_ID, llm_context)
    assert threads and threads[0] != threading.main_thread().name
    assert [t.name for t in in_executor.tools] == [t.name for t in on_loop.tools]
    assert in_executor.api_prompt == on_loop.api_prompt
