"""The home loader: fixtures parse, homes load into a real HA and behave like devices.

Every behaviour check goes through HA's own services (or its conversation agent), so a
test fails when an entity would not react as a real device does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    device_registry as dr,
    entity_registry as er,
    floor_registry as fr,
)
import pytest

from custom_components.botpsy.service_calls import async_contents
from scripts.evaluation.fixtures import expand_template, home_from_mapping, load_home
from scripts.evaluation.home_loader import LoadedHome, async_load_home, ensure_homes_on_path, eval_hass, snapshot

SHARED = Path(__file__).resolve().parents[3] / "shared" / "eval"
ASSIST_HOMES = sorted(SHARED.glob("assist-mini/*/_fixtures.yaml"))
DEVICE_ACTION_HOMES = sorted(SHARED.glob("device-actions/*/_fixtures.yaml"))
INTENTS_HOME = SHARED / "intents-en" / "_fixtures.yaml"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared development suites are not on this machine")

# A small home with one entity of every domain the loader models (and one it cannot).
DEVICES_HOME: dict[str, Any] = {
    "floors": [{"name": "Ground", "id": "ground"}],
    "areas": [
        {"name": "Living Room", "id": "living_room", "floor": "ground"},
        {"name": "Hall", "id": "hall", "floor": "ground"},
    ],
    "devices": [{"name": "Hall Panel", "id": "hall_panel", "area": "hall", "info": {"manufacturer": "Acme"}}],
    "entities": [
        {
            "name": "Sofa Lamp",
            "id": "light.sofa_lamp",
            "area": "living_room",
            "state": "off",
            "aliases": ["reading light"],
            "attributes": {"supported_color_modes": ["color_temp", "hs"], "brightness": 80},
        },
        {"name": "Blind", "id": "cover.blind", "area": "living_room", "state": "closed"},
        {
            "name": "Thermostat",
            "id": "climate.thermostat",
            "area": "living_room",
            "state": "heat",
            "attributes": {"current_temperature": 19, "temperature": 20},
        },
        {
            "name": "Fan",
            "id": "fan.fan",
            "area": "living_room",
            "state": "off",
            "attributes": {"supported_features": ["fan.FanEntityFeature.SET_SPEED"], "percentage_step": 25},
        },
        {"name": "Front Door", "id": "lock.front_door", "device": "hall_panel", "state": "locked"},
        {
            "name": "Speaker",
            "id": "media_player.speaker",
            "area": "living_room",
            "state": "playing",
            "attributes": {"volume_level": 0.4, "media_track": 3, "source_list": ["Radio", "TV"]},
        },
        {"name": "Robot", "id": "vacuum.robot", "area": "living_room", "state": "docked"},
        {
            "name": "Alarm",
            "id": "alarm_control_panel.alarm",
            "device": "hall_panel",
            "state": "disarmed",
            "attributes": {"code": "1234"},
        },
        {"name": "Groceries", "id": "todo.groceries", "attributes": {"todo_items": ["milk"]}},
        {
            "name": "Movie Time",
            "id": "scene.movie_time",
            "attributes": {"entities": {"light.sofa_lamp": {"state": "on", "brightness": 30}}},
        },
        {"name": "Good Night", "id": "script.good_night"},
        {"name": "Sprinkler", "id": "valve.sprinkler", "state": "closed"},
        {"name": "Plug", "id": "switch.plug", "state": True},
        {
            "name": "Door Contact",
            "id": "binary_sensor.door",
            "device": "hall_panel",
            "state": False,
            "attributes": {"device_class": "binary_sensor.BinarySensorDeviceClass.DOOR"},
        },
        {
            "name": "Outside",
            "id": "sensor.outside",
            "state": "12.5",
            "attributes": {"device_class": "temperature", "unit_of_measurement": "°F"},
        },
        {"name": "Guest Mode", "id": "input_boolean.guest_mode", "state": "off"},
        {"name": "Ada", "id": "person.ada", "state": "home"},
    ],
}


@pytest.fixture
def hass_config_dir(tmp_path: Path) -> str:
    """A private config dir: HA's shopping list writes its file there."""
    return str(tmp_path)


@pytest.fixture
async def ha(hass: HomeAssistant, enable_custom_integrations: None) -> HomeAssistant:
    """phcc's HA with custom integrations (BotPsy's and the test homes') enabled."""
    ensure_homes_on_path()
    return hass


@pytest.fixture
async def devices(ha: HomeAssistant) -> AsyncIterator[LoadedHome]:
    """DEVICES_HOME loaded."""
    yield await async_load_home(ha, home_from_mapping(DEVICES_HOME))


async def call(hass: HomeAssistant, domain: str, service: str, entity_id: str, **data: Any) -> None:
    """A blocking service call on one entity."""
    await hass.services.async_call(domain, service, {"entity_id": entity_id, **data}, blocking=True)


def state(hass: HomeAssistant, entity_id: str) -> Any:
    """The current state object (asserted present)."""
    current = hass.states.get(entity_id)
    assert current is not None, entity_id
    return current


# --- fixtures (no HA) ------------------------------------------------------------------


def test_template_names() -> None:
    assert expand_template("Trader Joe[']s") == ["Trader Joe's", "Trader Joes"]
    assert expand_template("(living|family) room") == ["living room", "family room"]
    assert expand_template("Plain") == ["Plain"]


@needs_shared
def test_parse_shared_fixtures() -> None:
    intents = load_home(INTENTS_HOME)
    assert {floor.floor_id for floor in intents.floors} >= {"upstairs_id", "basement_id"}
    assert intents.shopping_list and intents.media[0] == "The Office"
    joes = intents.entity("todo.trader_joes")
    assert (joes.name, joes.aliases, joes.state) == ("Trader Joe's", ("Trader Joes",), None)
    assert intents.entity("binary_sensor.pet_door").state == "off"  # {in: closed, out: off}
    assert intents.entity("sensor.traveling speed").entity_id == "sensor.traveling_speed"

    garage = load_home(SHARED / "assist-mini" / "home1-us-cover-garage" / "_fixtures.yaml")
    cover = garage.entity("cover.garage_door_opener")
    assert (cover.state, cover.area_id, cover.device_id) == ("closed", "garage", "garage_door_opener")
    assert cover.attributes["device_class"] == "cover.CoverDeviceClass.GARAGE"
    assert not garage.shopping_list
    lock = load_home(SHARED / "assist-mini" / "home1-us-lock" / "_fixtures.yaml")
    assert lock.entity("binary_sensor.smart_lock").state == "off"
    assert lock.entity("binary_sensor.smart_lock_tamper").state is None


def test_newer_intents_variant() -> None:
    home = home_from_mapping(
        {
            "language": "en",
            "areas": [{"name": "Kitchen"}],
            "entities": [
                {"name": "TV", "domain": "media_player", "area": "Kitchen"},
                {"name": "Overhead Light", "domain": "light"},
                {"name": "Overhead Light", "domain": "light"},
            ],
            "media": [{"title": "The Office"}],
        }
    )
    assert [entity.entity_id for entity in home.entities] == [
        "media_player.tv",
        "light.overhead_light",
        "light.overhead_light_2",
    ]
    assert home.entities[0].area_id == "kitchen" and home.areas[0].name == "Kitchen"
    assert home.shopping_list and home.media == ("The Office",)


# --- loading ---------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("path", ASSIST_HOMES, ids=[path.parent.name for path in ASSIST_HOMES])
async def test_assist_homes_load(ha: HomeAssistant, path: Path) -> None:
    fixture = load_home(path)
    await async_load_home(ha, fixture)
    entities, devices = er.async_get(ha), dr.async_get(ha)
    for entity in fixture.entities:
        current = state(ha, entity.entity_id)
        assert current.state not in ("unavailable",), entity.entity_id
        assert current.name == entity.name
        assert async_should_expose(ha, "conversation", entity.entity_id)
        entry = entities.async_get(entity.entity_id)
        assert entry is not None
        area = entry.area_id
        if entry.device_id:
            device = devices.async_get(entry.device_id)
            assert device is not None
            area = area or device.area_id
        assert area == entity.area_id
    if path.parent.name == "home1-us-cover-garage":
        cover = state(ha, "cover.garage_door_opener")
        assert (cover.state, cover.attributes["device_class"], cover.attributes["supported_features"]) == (
            "closed",
            "garage",
            3,
        )
        await call(ha, "cover", "open_cover", "cover.garage_door_opener")
        assert state(ha, "cover.garage_door_opener").state == "open"
    if path.parent.name == "dom1-pl-todo":
        assert state(ha, "todo.personal_tasks").state == "0"


@needs_shared
@pytest.mark.parametrize("path", DEVICE_ACTION_HOMES, ids=[path.parent.name for path in DEVICE_ACTION_HOMES])
async def test_device_action_homes_load_as_ha_places_them(ha: HomeAssistant, path: Path) -> None:
    """Public homes have entities named as their device (no name of their own) with an
    area of their own, which HA refuses: the area goes on the device, as HA would place it."""
    fixture = load_home(path)
    await async_load_home(ha, fixture)
    entities, devices = er.async_get(ha), dr.async_get(ha)
    device_areas = {d.device_id: d.area_id for d in fixture.devices}
    for entity in fixture.entities:
        assert state(ha, entity.entity_id).state != "unavailable", entity.entity_id
        entry = entities.async_get(entity.entity_id)
        assert entry is not None
        device = devices.async_get(entry.device_id) if entry.device_id else None
        area = entry.area_id or (device.area_id if device else None)
        assert area in (entity.area_id, device_areas.get(entity.device_id or "")), entity.entity_id
        # Every entity, also of an id the fixture gave twice, is exposed to the agents.
        assert async_should_expose(ha, "conversation", entity.entity_id), entity.entity_id


@needs_shared
async def test_intents_home_registries(ha: HomeAssistant) -> None:
    fixture = load_home(INTENTS_HOME)
    home = await async_load_home(ha, fixture)
    floors, areas, entities = fr.async_get(ha), ar.async_get(ha), er.async_get(ha)
    assert floors.async_get_floor("upstairs_id").name == "Upstairs"  # type: ignore[union-attr]
    kitchen = areas.async_get_area("kitchen_id")
    assert kitchen is not None and (kitchen.name, kitchen.floor_id) == ("Kitchen", "first_floor_id")
    assert home.area_id("Living Room") == "living_room_id"
    joes = entities.async_get("todo.trader_joes")
    assert joes is not None and "Trader Joes" in joes.aliases
    assert entities.async_get("light.kitchen_ceiling").area_id == "kitchen_id"  # type: ignore[union-attr]
    for entity_id in ("lock.back_door", "script.stealth_mode", "valve.main_valve", "todo.shopping_list"):
        assert async_should_expose(ha, "conversation", entity_id), entity_id
    assert state(ha, "sensor.price_per_kw").state == "1"
    assert home.entity_ids["sensor.price_per_kW"] == "sensor.price_per_kw"
    assert state(ha, "person.ada").state == "Work"
    assert state(ha, "weather.london").attributes["temperature"] == 47
    assert state(ha, "media_player.tv").attributes["volume_level"] == 0.5
    assert state(ha, "cover.bedroom").attributes["current_position"] == 0
    assert state(ha, "binary_sensor.co").attributes["device_class"] == "carbon_monoxide"

    await ha.services.async_call("shopping_list", "add_item", {"name": "apples"}, blocking=True)
    assert state(ha, "todo.shopping_list").state == "1"
    await home.async_reset()
    assert state(ha, "todo.shopping_list").state == "0"


@needs_shared
async def test_builtin_agent_acts_on_the_home(ha: HomeAssistant) -> None:
    """HA's own conversation agent: intents reach the entities end to end."""
    home = await async_load_home(ha, load_home(INTENTS_HOME))
    assert state(ha, "light.bedroom_lamp").state == "off"
    result = await conversation.async_converse(ha, "turn on the bedroom lamp", None, Context(), language="en")
    assert result.response.response_type.value == "action_done", result.response.speech
    assert state(ha, "light.bedroom_lamp").state == "on"

    await home.async_reset({"media_player.tv": {"state": "playing"}})
    assert state(ha, "light.bedroom_lamp").state == "off"
    satellite = home.satellite_device("living_room_id")
    result = await conversation.async_converse(ha, "pause", None, Context(), language="en", device_id=satellite)
    assert result.response.response_type.value == "action_done", result.response.speech
    assert state(ha, "media_player.tv").state == "paused"

    await conversation.async_converse(ha, "add apples to my shopping list", None, Context(), language="en")
    assert state(ha, "todo.shopping_list").state == "1"
    result = await conversation.async_converse(ha, "play The Office on the TV", None, Context(), language="en")
    assert result.response.response_type.value == "action_done", result.response.speech
    assert state(ha, "media_player.tv").attributes["media_title"] == "The Office"


# --- behaviour under HA's services -----------------------------------------------------


async def test_light(ha: HomeAssistant, devices: LoadedHome) -> None:
    lamp = "light.sofa_lamp"
    assert state(ha, lamp).attributes["brightness"] is None
    await call(ha, "light", "turn_on", lamp)
    on = state(ha, lamp)
    assert (on.state, on.attributes["brightness"], on.attributes["color_mode"]) == ("on", 80, "color_temp")
    await call(ha, "light", "turn_on", lamp, brightness_pct=50)
    assert state(ha, lamp).attributes["brightness"] == 128
    await call(ha, "light", "turn_on", lamp, color_temp_kelvin=2700)
    assert (state(ha, lamp).attributes["color_temp_kelvin"], state(ha, lamp).attributes["color_mode"]) == (
        2700,
        "color_temp",
    )
    await call(ha, "light", "turn_on", lamp, rgb_color=[255, 0, 0])
    assert state(ha, lamp).attributes["color_mode"] == "hs"
    assert state(ha, lamp).attributes["rgb_color"] == (255, 0, 0)
    await call(ha, "light", "turn_off", lamp)
    off = state(ha, lamp)
    assert (off.state, off.attributes["color_mode"], off.attributes["brightness"]) == ("off", None, None)


async def test_cover_valve_switch(ha: HomeAssistant, devices: LoadedHome) -> None:
    await call(ha, "cover", "set_cover_position", "cover.blind", position=40)
    blind = state(ha, "cover.blind")
    assert (blind.state, blind.attributes["current_position"]) == ("open", 40)
    await call(ha, "cover", "close_cover", "cover.blind")
    assert (state(ha, "cover.blind").state, state(ha, "cover.blind").attributes["current_position"]) == ("closed", 0)
    await call(ha, "valve", "open_valve", "valve.sprinkler")
    assert (state(ha, "valve.sprinkler").state, state(ha, "valve.sprinkler").attributes["current_position"]) == (
        "open",
        100,
    )
    await call(ha, "valve", "set_valve_position", "valve.sprinkler", position=50)
    assert state(ha, "valve.sprinkler").attributes["current_position"] == 50
    assert state(ha, "switch.plug").state == "on"
    await call(ha, "switch", "turn_off", "switch.plug")
    assert state(ha, "switch.plug").state == "off"


async def test_climate_and_fan(ha: HomeAssistant, devices: LoadedHome) -> None:
    await call(ha, "climate", "set_temperature", "climate.thermostat", temperature=22.5)
    thermostat = state(ha, "climate.thermostat")
    assert (thermostat.state, thermostat.attributes["temperature"]) == ("heat", 22.5)
    assert thermostat.attributes["current_temperature"] == 19
    await call(ha, "climate", "set_hvac_mode", "climate.thermostat", hvac_mode="cool")
    assert state(ha, "climate.thermostat").state == "cool"
    await call(ha, "climate", "turn_off", "climate.thermostat")
    assert state(ha, "climate.thermostat").state == "off"

    await call(ha, "fan", "turn_on", "fan.fan")
    assert (state(ha, "fan.fan").state, state(ha, "fan.fan").attributes["percentage"]) == ("on", 100)
    await call(ha, "fan", "decrease_speed", "fan.fan")
    assert state(ha, "fan.fan").attributes["percentage"] == 75
    await call(ha, "fan", "turn_off", "fan.fan")
    assert (state(ha, "fan.fan").state, state(ha, "fan.fan").attributes["percentage"]) == ("off", 0)


async def test_lock_alarm_vacuum(ha: HomeAssistant, devices: LoadedHome) -> None:
    await call(ha, "lock", "unlock", "lock.front_door")
    assert state(ha, "lock.front_door").state == "unlocked"
    await call(ha, "lock", "open", "lock.front_door")
    assert state(ha, "lock.front_door").state == "open"
    await call(ha, "lock", "lock", "lock.front_door")
    assert state(ha, "lock.front_door").state == "locked"

    await call(ha, "alarm_control_panel", "alarm_arm_away", "alarm_control_panel.alarm")
    assert state(ha, "alarm_control_panel.alarm").state == "armed_away"
    with pytest.raises(Exception, match="code"):
        await call(ha, "alarm_control_panel", "alarm_disarm", "alarm_control_panel.alarm", code="0000")
    await call(ha, "alarm_control_panel", "alarm_disarm", "alarm_control_panel.alarm", code="1234")
    assert state(ha, "alarm_control_panel.alarm").state == "disarmed"

    await call(ha, "vacuum", "start", "vacuum.robot")
    assert state(ha, "vacuum.robot").state == "cleaning"
    await call(ha, "vacuum", "return_to_base", "vacuum.robot")
    assert state(ha, "vacuum.robot").state == "returning"


async def test_media_player(ha: HomeAssistant, devices: LoadedHome) -> None:
    speaker = "media_player.speaker"
    await call(ha, "media_player", "media_pause", speaker)
    assert state(ha, speaker).state == "paused"
    await call(ha, "media_player", "media_next_track", speaker)
    assert (state(ha, speaker).state, state(ha, speaker).attributes["media_track"]) == ("playing", 4)
    await call(ha, "media_player", "volume_set", speaker, volume_level=0.9)
    await call(ha, "media_player", "volume_down", speaker)
    assert state(ha, speaker).attributes["volume_level"] == 0.8
    await call(ha, "media_player", "volume_mute", speaker, is_volume_muted=True)
    assert state(ha, speaker).attributes["is_volume_muted"] is True
    await call(ha, "media_player", "select_source", speaker, source="TV")
    assert state(ha, speaker).attributes["source"] == "TV"
    response = await ha.services.async_call(
        "media_player",
        "search_media",
        {"entity_id": speaker, "search_query": "jazz"},
        blocking=True,
        return_response=True,
    )
    assert response is not None and response[speaker].result[0].title == "jazz"  # type: ignore[union-attr]


async def test_todo_scene_script_helpers(ha: HomeAssistant, devices: LoadedHome) -> None:
    assert state(ha, "todo.groceries").state == "1"
    await call(ha, "todo", "add_item", "todo.groceries", item="eggs")
    assert state(ha, "todo.groceries").state == "2"
    await call(ha, "todo", "update_item", "todo.groceries", item="milk", status="completed")
    assert state(ha, "todo.groceries").state == "1"
    await call(ha, "todo", "remove_item", "todo.groceries", item="eggs")
    assert state(ha, "todo.groceries").state == "0"

    await call(ha, "scene", "turn_on", "scene.movie_time")
    assert state(ha, "scene.movie_time").state not in ("unknown", "unavailable")
    lamp = state(ha, "light.sofa_lamp")
    assert (lamp.state, lamp.attributes["brightness"]) == ("on", 30)

    runs: list[Any] = []
    ha.bus.async_listen("botpsy_eval_script_run", runs.append)
    await call(ha, "script", "turn_on", "script.good_night")
    await ha.async_block_till_done()
    assert len(runs) == 1 and state(ha, "script.good_night").attributes["last_triggered"] is not None

    await call(ha, "input_boolean", "turn_on", "input_boolean.guest_mode")
    assert state(ha, "input_boolean.guest_mode").state == "on"
    assert state(ha, "person.ada").state == "home"
    assert state(ha, "binary_sensor.door").attributes["device_class"] == "door"
    assert state(ha, "sensor.outside").state == "12.5"  # the fixture's °F, not converted


async def test_reset_restores_and_applies_setup(ha: HomeAssistant, devices: LoadedHome) -> None:
    before = snapshot(ha)
    await call(ha, "light", "turn_on", "light.sofa_lamp", brightness=200)
    await call(ha, "cover", "open_cover", "cover.blind")
    await call(ha, "todo", "add_item", "todo.groceries", item="eggs")
    await call(ha, "script", "turn_on", "script.good_night")
    await call(ha, "input_boolean", "turn_on", "input_boolean.guest_mode")
    await call(ha, "scene", "turn_on", "scene.movie_time")
    await call(ha, "alarm_control_panel", "alarm_arm_home", "alarm_control_panel.alarm")
    await ha.async_block_till_done()
    assert snapshot(ha) != before
    await devices.async_reset()
    after = snapshot(ha)
    changed = {key for key in before if before[key] != after.get(key)}
    assert changed == set()

    await devices.async_reset(
        {
            "light.sofa_lamp": {"state": "on", "attributes": {"brightness": 10}},
            "vacuum.robot": {"state": "off"},
            "media_player.speaker": {"attributes": {"volume_level": 0.9}},
            "person.ada": {"state": "not_home"},
        }
    )
    assert state(ha, "light.sofa_lamp").attributes["brightness"] == 10
    assert state(ha, "vacuum.robot").state == "off"  # shown as forced until the next command
    await call(ha, "vacuum", "start", "vacuum.robot")
    assert state(ha, "vacuum.robot").state == "cleaning"
    assert state(ha, "media_player.speaker").attributes["volume_level"] == 0.9
    assert state(ha, "person.ada").state == "not_home"


async def test_registries_and_snapshot(ha: HomeAssistant, devices: LoadedHome) -> None:
    entities, devices_reg = er.async_get(ha), dr.async_get(ha)
    lamp = entities.async_get("light.sofa_lamp")
    assert lamp is not None and lamp.area_id == "living_room" and lamp.aliases == ["reading light"]
    door = entities.async_get("lock.front_door")
    assert door is not None and door.area_id is None
    device = devices_reg.async_get(door.device_id)  # type: ignore[arg-type]
    assert device is not None and (device.name, device.area_id, device.manufacturer) == ("Hall Panel", "hall", "Acme")
    assert ar.async_get(ha).async_get_area("hall").floor_id == "ground"  # type: ignore[union-attr]
    satellite = devices.satellite_device("hall")
    assert devices_reg.async_get(satellite).area_id == "hall"  # type: ignore[union-attr]
    assert devices.satellite_device("Hall") == satellite
    for entity_id in ("lock.front_door", "script.good_night", "valve.sprinkler", "alarm_control_panel.alarm"):
        assert async_should_expose(ha, "conversation", entity_id), entity_id
    shot = snapshot(ha)
    assert shot["light.sofa_lamp"]["attributes"]["supported_color_modes"] == ["color_temp", "hs"] or shot[
        "light.sofa_lamp"
    ]["attributes"]["supported_color_modes"] == ["hs", "color_temp"]
    assert isinstance(shot["media_player.speaker"]["attributes"]["source_list"], list)
    own = devices.snapshot()
    assert set(own) == {entity["id"] for entity in DEVICES_HOME["entities"]}
    assert own["light.sofa_lamp"] == shot["light.sofa_lamp"]


async def test_more_domains(ha: HomeAssistant) -> None:
    fixture = home_from_mapping(
        {
            "entities": [
                {
                    "name": "Dryer",
                    "id": "humidifier.dryer",
                    "state": "off",
                    "attributes": {"humidity": 45, "available_modes": ["normal", "boost"]},
                },
                {"name": "Boiler", "id": "water_heater.boiler", "state": "eco", "attributes": {"temperature": 50}},
                {"name": "Volume Limit", "id": "number.volume_limit", "state": "30", "attributes": {"max": 80}},
                {"name": "Mode", "id": "select.mode", "state": "auto", "attributes": {"options": ["auto", "manual"]}},
                {"name": "Siren", "id": "siren.siren", "state": "off"},
                {"name": "Mower", "id": "lawn_mower.mower", "state": "docked"},
                {"name": "Hub", "id": "remote.hub", "state": "on", "attributes": {"activity_list": ["TV", "Music"]}},
                {"name": "Note", "id": "text.note", "state": "hello"},
                {"name": "Chime", "id": "button.chime"},
                {"name": "Level", "id": "input_number.level", "state": "5"},
                {"name": "Scene Pick", "id": "input_select.pick", "state": "b", "attributes": {"options": ["a", "b"]}},
            ]
        }
    )
    home = await async_load_home(ha, fixture)
    await call(ha, "humidifier", "turn_on", "humidifier.dryer")
    await call(ha, "humidifier", "set_humidity", "humidifier.dryer", humidity=55)
    await call(ha, "humidifier", "set_mode", "humidifier.dryer", mode="boost")
    dryer = state(ha, "humidifier.dryer")
    assert (dryer.state, dryer.attributes["humidity"], dryer.attributes["mode"]) == ("on", 55, "boost")
    await call(ha, "water_heater", "set_temperature", "water_heater.boiler", temperature=60)
    await call(ha, "water_heater", "set_operation_mode", "water_heater.boiler", operation_mode="performance")
    boiler = state(ha, "water_heater.boiler")
    assert (boiler.state, boiler.attributes["temperature"]) == ("performance", 60)
    await call(ha, "number", "set_value", "number.volume_limit", value=70)
    assert state(ha, "number.volume_limit").state == "70.0"
    await call(ha, "select", "select_option", "select.mode", option="manual")
    assert state(ha, "select.mode").state == "manual"
    await call(ha, "siren", "turn_on", "siren.siren")
    assert state(ha, "siren.siren").state == "on"
    await call(ha, "lawn_mower", "start_mowing", "lawn_mower.mower")
    assert state(ha, "lawn_mower.mower").state == "mowing"
    await call(ha, "remote", "turn_on", "remote.hub", activity="Music")
    assert state(ha, "remote.hub").attributes["current_activity"] == "Music"
    await call(ha, "text", "set_value", "text.note", value="bye")
    assert state(ha, "text.note").state == "bye"
    assert state(ha, "button.chime").state == "unknown"
    await call(ha, "button", "press", "button.chime")
    assert state(ha, "button.chime").state != "unknown"
    await call(ha, "input_number", "set_value", "input_number.level", value=9)
    assert state(ha, "input_select.pick").state == "b"
    await home.async_reset()
    assert [state(ha, entity.entity_id).state for entity in fixture.entities] == [
        "off",
        "eco",
        "30.0",
        "auto",
        "off",
        "docked",
        "on",
        "hello",
        "unknown",
        "5.0",
        "b",
    ]


async def test_unknown_domain_and_bad_values_do_not_crash(ha: HomeAssistant) -> None:
    fixture = home_from_mapping(
        {
            "entities": [
                {"name": "Sun Thing", "id": "zzz_unknown.thing", "state": "weird"},
                {"name": "Odd Sensor", "id": "sensor.odd", "state": "n/a", "attributes": {"device_class": "power"}},
                {"name": "Odd Cover", "id": "cover.odd", "state": "halfway"},
                {"name": "Broken Enum", "id": "light.broken", "attributes": {"device_class": "light.Nope.NOPE"}},
            ]
        }
    )
    await async_load_home(ha, fixture)
    assert state(ha, "zzz_unknown.thing").state == "weird"
    assert state(ha, "sensor.odd").state == "n/a"
    assert state(ha, "cover.odd").state == "halfway"
    await call(ha, "cover", "open_cover", "cover.odd")
    assert state(ha, "cover.odd").state == "open"
    assert state(ha, "light.broken").state == "off"


async def test_a_colour_of_whole_numbers_is_a_colour_not_feature_flags(ha: HomeAssistant) -> None:
    """Only enum references are OR'ed into flags: a light's hs colour [345, 75] stays it."""
    attributes = {"supported_color_modes": ["hs"], "color_mode": "hs", "brightness": 180, "hs_color": [345, 75]}
    fixture = home_from_mapping(
        {"entities": [{"name": "Hue", "id": "light.hue", "state": "on", "attributes": attributes}]}
    )
    await async_load_home(ha, fixture)
    assert state(ha, "light.hue").attributes["hs_color"] == (345, 75)
    assert state(ha, "light.hue").attributes["rgb_color"] == (255, 64, 112)


async def test_two_homes_in_sequence(tmp_path: Path, enable_custom_integrations: None) -> None:
    """The harness's way: one fresh eval_hass per home, one after the other."""
    for number, name in enumerate(("Porch Light", "Desk Light")):
        async with eval_hass(tmp_path / str(number)) as hass:
            home = await async_load_home(
                hass, home_from_mapping({"entities": [{"name": name, "id": f"light.l{number}", "state": "off"}]})
            )
            await call(hass, "light", "turn_on", f"light.l{number}")
            assert state(hass, f"light.l{number}").state == "on"
            assert hass.states.get(f"light.l{1 - number}") is None
            await home.async_reset()
            assert state(hass, f"light.l{number}").state == "off"


async def test_lists_forecasts_and_calendars_read_through_ha(ha: HomeAssistant) -> None:
    """What a question about them needs (BotPsy's get_state carries it) comes from HA's own
    services: a list's open items, a daily forecast, the events of the coming week."""
    await async_load_home(ha, load_home(Path(__file__).resolve().parents[2] / "eval/home-contents/_fixtures.yaml"))
    context = Context()
    items = await async_contents(ha, "todo.chores", context)
    assert items == {"items": [{"summary": "Water the ferns", "status": "needs_action"},
                               {"summary": "Take out recycling", "status": "needs_action"}]}  # fmt: skip
    forecast = (await async_contents(ha, "weather.home", context))["forecast"]
    assert [(day["condition"], day["temperature"]) for day in forecast] == [("rainy", 9), ("snowy", 1), ("sunny", 6)]
    events = (await async_contents(ha, "calendar.family", context))["events"]
    assert [e["summary"] for e in events][-2:] == ["Dentist appointment", "Grandma's birthday"]
    assert await async_contents(ha, "light.kitchen", context) == {}
