"""Load a test home into a real Home Assistant, reset it between cases, snapshot its states.

`eval_hass` starts a Home Assistant for the harness (the same test instance the project's
pytest suite uses, so it runs from a plain `asyncio.run` too), with the components the
conversation agents and HA's intents need. `async_load_home` puts one fixture home in it
through the `botpsy_eval_home` integration (scripts/evaluation/homes): real entities of
HA's base classes with the fixture's ids, names, devices, areas, floors and aliases, all
exposed to Assist. Scripts and input helpers are HA's own integrations configured from
the fixture; HA's real shopping list is set up when the home asks for one. Domains nobody
can model get a plain state (`hass.states.async_set`), logged.

One home per Home Assistant: load the next home in a fresh `eval_hass`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
import json
import logging
from pathlib import Path
import sys
from typing import Any

from homeassistant import loader
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.config_entries import ConfigEntry, ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er, frame
from homeassistant.helpers.entity_component import DATA_INSTANCES
from homeassistant.helpers.json import json_dumps
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_test_home_assistant

from .fixtures import SHOPPING_LIST_ENTITY_ID, EntityFixture, HomeFixture, normalize_state

_LOGGER = logging.getLogger(__name__)

HOMES_DIR = Path(__file__).resolve().parent / "homes"
HOME_DOMAIN = "botpsy_eval_home"
PENDING = "pending"
ASSISTANT = "conversation"
SCRIPT_RUN_EVENT = "botpsy_eval_script_run"
# Components the agents and HA's intents need besides the home's own domains.
BASE_COMPONENTS = ("homeassistant", "http", "intent", "conversation", "todo", "media_player")
# Helper domains whose real HA integration is configured from the fixture.
HELPER_DOMAINS = ("script", "input_boolean", "input_number", "input_select", "input_text", "input_button")


def ensure_homes_on_path() -> bool:
    """Make `custom_components.botpsy_eval_home` importable (a namespace package merge);
    whether it was not before."""
    if str(HOMES_DIR) in sys.path:
        return False
    sys.path.append(str(HOMES_DIR))
    return True


@asynccontextmanager
async def eval_hass(config_dir: Path, *, language: str = "en") -> AsyncIterator[HomeAssistant]:
    """A running Home Assistant for one home; stopped (entries unloaded) at exit.

    Custom integrations are enabled (the repo's BotPsy and the test-home integration).
    HA is created already running, so the HTTP component (a dependency of conversation)
    never starts its server: nothing listens on a port.
    """
    ensure_homes_on_path()
    config_dir.mkdir(parents=True, exist_ok=True)
    async with async_test_home_assistant(config_dir=str(config_dir)) as hass:
        frame.async_setup(hass)
        hass.data.pop(loader.DATA_CUSTOM_COMPONENTS, None)
        hass.config.language = language
        try:
            await async_setup_base(hass)
            yield hass
        finally:
            entries = [entry for entry in hass.config_entries.async_entries() if entry.state is ConfigEntryState.LOADED]
            await asyncio.gather(*(hass.config_entries.async_unload(entry.entry_id) for entry in entries))
            await hass.async_stop(force=True)


async def async_setup_base(hass: HomeAssistant) -> None:
    """The core components Assist and HA's intents need (idempotent)."""
    for component in BASE_COMPONENTS:
        if component in hass.config.components:
            continue
        if not await async_setup_component(hass, component, {}):
            raise RuntimeError(f"Home Assistant could not set up {component}")


@dataclass
class LoadedHome:
    """A home loaded in a Home Assistant: resets it and places satellites in its areas.

    `entity_ids` maps every fixture id (and the fixture's own spelling, where it had to be
    made valid) to the entity's id in HA; `area_ids` maps fixture area ids to HA's (equal
    when the fixture id is a slug).
    """

    hass: HomeAssistant
    fixture: HomeFixture
    entry: ConfigEntry
    entity_ids: dict[str, str] = field(default_factory=dict)
    area_ids: dict[str, str] = field(default_factory=dict)
    floor_ids: dict[str, str] = field(default_factory=dict)
    static: dict[str, EntityFixture] = field(default_factory=dict)
    helpers: dict[str, EntityFixture] = field(default_factory=dict)
    shopping_list: ConfigEntry | None = None
    _satellites: dict[str | None, str] = field(default_factory=dict)

    @property
    def runtime(self) -> Any:
        """The test-home integration's runtime (entities by id)."""
        return self.hass.data[HOME_DOMAIN][self.entry.entry_id]

    @property
    def home_entity_ids(self) -> set[str]:
        """The home's entities in HA (the fixture's, plus HA's shopping list when set up)."""
        ids = set(self.entity_ids.values())
        if self.shopping_list is not None:
            ids.add(SHOPPING_LIST_ENTITY_ID)
        return ids

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """`snapshot` of the home's entities only."""
        return snapshot(self.hass, self.home_entity_ids)

    def area_id(self, fixture_area: str) -> str:
        """HA's id for a fixture area, given by fixture id or by name."""
        if fixture_area in self.area_ids:
            return self.area_ids[fixture_area]
        for area in self.fixture.areas:
            if fixture_area.casefold() == area.name.casefold():
                return self.area_ids[area.area_id]
        raise KeyError(fixture_area)

    async def async_reset(self, setup: Mapping[str, Mapping[str, Any] | None] | None = None) -> None:
        """Every entity back to its fixture state, then `setup` on top; waits until written.

        `setup` is a test case's `{entity_id: {state: ..., attributes: {...}}}`. Ids the
        home does not have get a plain state (logged): the case asked for them.
        """
        overrides = {self.entity_ids.get(key, key): value or {} for key, value in (setup or {}).items()}
        runtime = self.runtime
        for fixture in self.fixture.entities:
            entity_id = self.entity_ids[fixture.entity_id]
            override = overrides.pop(entity_id, {})
            state = normalize_state(fixture.domain, override.get("state"))
            attributes = override.get("attributes") or {}
            if entity_id in runtime.entities:
                runtime.entities[entity_id].eval_restore(state, attributes)
            elif entity_id in self.helpers:
                await self._async_reset_helper(fixture, state)
            elif entity_id == SHOPPING_LIST_ENTITY_ID and self.shopping_list is not None:
                await self._async_reset_shopping_list(fixture, state, attributes)
            else:
                self._set_static(fixture, state, attributes)
        if self.shopping_list is not None and SHOPPING_LIST_ENTITY_ID not in self.entity_ids.values():
            override = overrides.pop(SHOPPING_LIST_ENTITY_ID, {})
            await self._async_reset_shopping_list(None, override.get("state"), override.get("attributes") or {})
        for entity_id, override in overrides.items():
            _LOGGER.warning("Setup names %s, which the home does not have: plain state", entity_id)
            current = self.hass.states.get(entity_id)
            attributes = {**(current.attributes if current else {}), **(override.get("attributes") or {})}
            state = normalize_state(entity_id.split(".", 1)[0], override.get("state"))
            self.hass.states.async_set(entity_id, state or (current.state if current else "unknown"), attributes)
        await self.hass.async_block_till_done()

    def _set_static(self, fixture: EntityFixture, state: str | None, attributes: Mapping[str, Any]) -> None:
        base = {**fixture.attributes, "friendly_name": fixture.name}
        self.hass.states.async_set(
            self.entity_ids[fixture.entity_id],
            state if state is not None else (fixture.state if fixture.state is not None else "unknown"),
            {**base, **attributes},
        )

    async def _async_reset_helper(self, fixture: EntityFixture, state: str | None) -> None:
        """HA's own helpers go back to the fixture state through their services."""
        entity_id = self.entity_ids[fixture.entity_id]
        value = state if state is not None else fixture.state
        domain = fixture.domain
        if domain == "script":
            await self.hass.services.async_call("script", "turn_off", {"entity_id": entity_id}, blocking=True)
            if (entity := _script_entity(self.hass, entity_id)) is not None:
                entity.script.last_triggered = None
                entity.async_write_ha_state()
            return
        if value is None:
            return
        calls: dict[str, tuple[str, dict[str, Any]]] = {
            "input_boolean": ("turn_on" if value == "on" else "turn_off", {}),
            "input_number": ("set_value", {"value": value}),
            "input_select": ("select_option", {"option": value}),
            "input_text": ("set_value", {"value": value}),
        }
        if domain in calls:
            service, data = calls[domain]
            await self.hass.services.async_call(domain, service, {"entity_id": entity_id, **data}, blocking=True)

    async def _async_reset_shopping_list(
        self, fixture: EntityFixture | None, state: Any, attributes: Mapping[str, Any]
    ) -> None:
        """HA's shopping list back to the fixture's items (or empty)."""
        assert self.shopping_list is not None
        data = self.shopping_list.runtime_data
        raw = attributes.get("todo_items")
        if raw is None and fixture is not None:
            raw = fixture.attributes.get("todo_items")
        items: list[dict[str, Any]] = []
        for number, item in enumerate(raw or [], start=1):
            name = item.get("summary") or item.get("name") if isinstance(item, Mapping) else item
            complete = isinstance(item, Mapping) and (item.get("status") == "completed" or bool(item.get("complete")))
            items.append({"name": str(name), "id": f"eval-{number}", "complete": complete})
        data.items = items
        await self.hass.async_add_executor_job(data.save)
        data._async_notify()  # the list's own change notification

    def satellite_device(self, area_id: str | None) -> str:
        """A device placed in that area (fixture id or name): "the device that heard it"."""
        ha_area = self.area_id(area_id) if area_id else None
        if ha_area in self._satellites:
            return self._satellites[ha_area]
        devices = dr.async_get(self.hass)
        device = devices.async_get_or_create(
            config_entry_id=self.entry.entry_id,
            identifiers={(HOME_DOMAIN, f"satellite-{ha_area or 'none'}")},
            name=f"Voice satellite {ha_area or ''}".strip(),
            manufacturer="BotPsy evaluation",
            model="Satellite",
        )
        devices.async_update_device(device.id, area_id=ha_area)
        self._satellites[ha_area] = device.id
        return device.id

    async def async_unload(self) -> None:
        """Remove the home's entities (the registries keep their entries)."""
        await self.hass.config_entries.async_unload(self.entry.entry_id)
        for entity_id in self.static:
            self.hass.states.async_remove(entity_id)
        await self.hass.async_block_till_done()


def _script_entity(hass: HomeAssistant, entity_id: str) -> Any:
    component = hass.data.get(DATA_INSTANCES, {}).get("script")
    return component.get_entity(entity_id) if component is not None else None


def _helper_config(fixture: EntityFixture) -> dict[str, Any]:
    """The YAML configuration of one HA helper / script for a fixture entity."""
    attributes = fixture.attributes
    state = fixture.state
    match fixture.domain:
        case "script":
            # The run is recorded (an event), then the fixture's own steps, if it has any.
            ran = {"event": SCRIPT_RUN_EVENT, "event_data": {"entity_id": fixture.entity_id}}
            return {"alias": fixture.name, "sequence": [ran, *attributes.get("sequence", ())]}
        case "input_boolean":
            return {"name": fixture.name, "initial": state == "on"}
        case "input_number":
            minimum = float(attributes.get("min", 0))
            maximum = float(attributes.get("max", 100))
            config: dict[str, Any] = {
                "name": fixture.name,
                "min": minimum,
                "max": maximum,
                "step": float(attributes.get("step", 1)),
            }
            try:
                config["initial"] = min(maximum, max(minimum, float(state))) if state is not None else minimum
            except ValueError:
                config["initial"] = minimum
            return config
        case "input_select":
            options = [str(option) for option in attributes.get("options") or []]
            if state is not None and state not in options:
                options.append(state)
            return {"name": fixture.name, "options": options or ["-"], "initial": state or (options or ["-"])[0]}
        case "input_text":
            return {"name": fixture.name, "initial": state or ""}
        case _:  # input_button
            return {"name": fixture.name}


async def async_load_home(hass: HomeAssistant, fixture: HomeFixture) -> LoadedHome:
    """Load a fixture home: registries, entities, helpers, shopping list; expose all."""
    if ensure_homes_on_path():
        # HA read its custom integrations before they were on the path (a test's first setup).
        hass.data.pop(loader.DATA_CUSTOM_COMPONENTS, None)
    await async_setup_base(hass)
    hass.data.setdefault(HOME_DOMAIN, {})[PENDING] = fixture
    entry = MockConfigEntry(domain=HOME_DOMAIN, title="Evaluation home")
    entry.add_to_hass(hass)
    if not await hass.config_entries.async_setup(entry.entry_id):
        raise RuntimeError("The evaluation home did not load (see the log)")
    runtime = hass.data[HOME_DOMAIN][entry.entry_id]
    home = LoadedHome(
        hass=hass,
        fixture=fixture,
        entry=entry,
        area_ids=dict(runtime.area_ids),
        floor_ids=dict(runtime.floor_ids),
    )
    home.entity_ids = {entity.entity_id: entity.entity_id for entity in fixture.entities}
    for entity in fixture.entities:
        # A fixture id made valid maps to the entity; an id that two entities had stays the
        # first one's (it exists as written).
        if entity.source_id:
            home.entity_ids.setdefault(entity.source_id, entity.entity_id)
    if fixture.shopping_list:
        home.shopping_list = await _async_setup_shopping_list(hass)
    await _async_setup_helpers(hass, home)
    for entity in fixture.entities:
        if not runtime.owns(entity) and entity.entity_id not in home.helpers and entity.domain not in ("todo",):
            home.static[entity.entity_id] = entity
    for entity in fixture.entities:
        if entity.entity_id in home.static:
            _LOGGER.warning("No model for %s: a plain state (it will not react to services)", entity.entity_id)
            _register_static(hass, home, entity)
    await home.async_reset()
    for entity_id in sorted(home.home_entity_ids):
        async_expose_entity(hass, ASSISTANT, entity_id, True)
    await hass.async_block_till_done()
    return home


async def _async_setup_shopping_list(hass: HomeAssistant) -> ConfigEntry:
    """HA's real shopping list (its intents need it), empty."""
    existing = hass.config_entries.async_entries("shopping_list")
    if existing:
        return existing[0]
    entry = MockConfigEntry(domain="shopping_list", title="Shopping list")
    entry.add_to_hass(hass)
    if not await hass.config_entries.async_setup(entry.entry_id):
        raise RuntimeError("HA's shopping list did not load")
    loaded: ConfigEntry = entry
    return loaded


async def _async_setup_helpers(hass: HomeAssistant, home: LoadedHome) -> None:
    """Scripts and input helpers as HA's own integrations, then their areas and aliases."""
    runtime = home.runtime
    by_domain: dict[str, dict[str, Any]] = {}
    for entity in home.fixture.entities:
        if entity.domain in HELPER_DOMAINS and not runtime.owns(entity):
            by_domain.setdefault(entity.domain, {})[entity.object_id] = _helper_config(entity)
            home.helpers[entity.entity_id] = entity
    for domain, config in by_domain.items():
        if not await async_setup_component(hass, domain, {domain: config}):
            raise RuntimeError(f"Home Assistant could not set up the {domain} helpers")
    await hass.async_block_till_done()
    registry = er.async_get(hass)
    for entity in home.helpers.values():
        if registry.async_get(entity.entity_id) is None:
            _LOGGER.warning("%s has no registry entry: no area or aliases", entity.entity_id)
            continue
        _place(hass, home, entity.entity_id, entity)


def _register_static(hass: HomeAssistant, home: LoadedHome, entity: EntityFixture) -> None:
    """A registry entry for a plain-state entity, so it has its area and aliases."""
    registry = er.async_get(hass)
    entry = registry.async_get_or_create(
        entity.domain,
        HOME_DOMAIN,
        f"static-{entity.entity_id}",
        suggested_object_id=entity.object_id,
        original_name=entity.name,
    )
    if entry.entity_id != entity.entity_id:
        _LOGGER.warning("%s was registered as %s", entity.entity_id, entry.entity_id)
    _place(hass, home, entry.entity_id, entity)


def _place(hass: HomeAssistant, home: LoadedHome, entity_id: str, entity: EntityFixture) -> None:
    """Area and aliases in the entity registry (by the integration's helper)."""
    # Local: importable only once eval_hass has put HOMES_DIR on sys.path (ensure_homes_on_path).
    from custom_components.botpsy_eval_home.home import async_place_entity  # noqa: PLC0415

    async_place_entity(hass, home.runtime, entity_id, entity)


def snapshot(hass: HomeAssistant, entity_ids: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
    """States as `{entity_id: {"state": ..., "attributes": {...}}}`, JSON values only.

    All states by default (note `conversation.home_assistant` and agents' own sensors
    change with every request; `LoadedHome.snapshot` keeps to the home). Attributes go
    through HA's JSON encoder (tuples become lists, datetimes ISO text), the form the
    datasets' YAML expectations take.
    """
    wanted = None if entity_ids is None else set(entity_ids)
    return {
        state.entity_id: {"state": state.state, "attributes": json.loads(json_dumps(dict(state.attributes)))}
        for state in hass.states.async_all()
        if wanted is None or state.entity_id in wanted
    }


async def run_in_home(
    fixture: HomeFixture,
    config_dir: Path,
    work: Callable[[LoadedHome], Coroutine[Any, Any, Any]],
) -> Any:
    """Convenience for scripts: a fresh HA, the home loaded, `work(home)` awaited, HA stopped."""
    async with eval_hass(config_dir, language=fixture.language) as hass:
        home = await async_load_home(hass, fixture)
        return await work(home)


__all__ = [
    "HOMES_DIR",
    "LoadedHome",
    "async_load_home",
    "ensure_homes_on_path",
    "eval_hass",
    "run_in_home",
    "snapshot",
]
