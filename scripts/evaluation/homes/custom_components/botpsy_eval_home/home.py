"""One loaded test home: registries (floors, areas, devices, entity entries) and entities.

The home loader hands the parsed fixture over in `hass.data[DOMAIN][PENDING]` before it
sets up the config entry; `async_setup_entry` turns it into a `HomeRuntime`, fills the
registries and forwards the platforms. Floors and areas keep the fixture's ids (created
under the id, then renamed), so cases can name them as the fixture does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import logging
from typing import TYPE_CHECKING, Any

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    device_registry as dr,
    entity_registry as er,
    floor_registry as fr,
)
from homeassistant.helpers.device_registry import DeviceInfo

from .const import DOMAIN, MODELLED_DOMAINS

if TYPE_CHECKING:
    from scripts.evaluation.fixtures import AreaFixture, EntityFixture, FloorFixture, HomeFixture

    from .entity import EvalEntity

_LOGGER = logging.getLogger(__name__)


@dataclass
class HomeRuntime:
    """What the platforms and the loader share about the home in one config entry."""

    fixture: HomeFixture
    entry: ConfigEntry
    floor_ids: dict[str, str] = field(default_factory=dict)
    area_ids: dict[str, str] = field(default_factory=dict)
    device_ids: dict[str, str] = field(default_factory=dict)
    entities: dict[str, EvalEntity] = field(default_factory=dict)

    def device_info(self, device_id: str | None) -> DeviceInfo | None:
        """The HA device an entity belongs to (already created in the registry)."""
        if device_id is None:
            return None
        return DeviceInfo(identifiers={(DOMAIN, device_id)})

    def modelled(self, domain: str) -> list[EntityFixture]:
        """The fixture entities a platform of this integration creates."""
        return [entity for entity in self.fixture.entities if entity.domain == domain and self.owns(entity)]

    def owns(self, entity: EntityFixture) -> bool:
        """Whether this integration's platforms create the entity (others: helpers, static)."""
        return entity.domain in MODELLED_DOMAINS and not (
            entity.entity_id == "todo.shopping_list" and self.fixture.shopping_list
        )

    def register(self, entity: EvalEntity) -> None:
        """Platforms record their entities so resets and scenes can reach them."""
        self.entities[entity.entity_id] = entity

    def entity_state(self, entity_id: str, state: str | None, attributes: Mapping[str, Any] | None) -> bool:
        """Force a modelled entity's state (scenes); False when it is not one of ours."""
        if (entity := self.entities.get(entity_id)) is None:
            return False
        entity.eval_set(state, attributes)
        return True


def async_fill_registries(hass: HomeAssistant, runtime: HomeRuntime) -> None:
    """Floors, areas, devices and the entity registry entries (ids, areas, aliases)."""
    fixture = runtime.fixture
    floors = fr.async_get(hass)
    for floor in fixture.floors:
        runtime.floor_ids[floor.floor_id] = _async_floor(floors, floor)
    areas = ar.async_get(hass)
    for area in fixture.areas:
        runtime.area_ids[area.area_id] = _async_area(areas, area, runtime.floor_ids)
    devices = dr.async_get(hass)
    for device in fixture.devices:
        entry = devices.async_get_or_create(
            config_entry_id=runtime.entry.entry_id,
            identifiers={(DOMAIN, device.device_id)},
            name=device.name,
            manufacturer=device.manufacturer,
            model=device.model,
            sw_version=device.sw_version,
        )
        devices.async_update_device(entry.id, area_id=runtime.area_ids.get(device.area_id or ""))
        runtime.device_ids[device.device_id] = entry.id
    entities = er.async_get(hass)
    for entity in fixture.entities:
        if not runtime.owns(entity):
            continue
        entry_ = entities.async_get_or_create(
            entity.domain,
            DOMAIN,
            entity.entity_id,
            suggested_object_id=entity.object_id,
            config_entry=runtime.entry,
            device_id=runtime.device_ids.get(entity.device_id or ""),
            original_name=entity.name,
        )
        if entry_.entity_id != entity.entity_id:
            _LOGGER.warning("%s was registered as %s", entity.entity_id, entry_.entity_id)
        async_place_entity(hass, runtime, entry_.entity_id, entity)


def async_place_entity(hass: HomeAssistant, runtime: HomeRuntime, entity_id: str, entity: EntityFixture) -> None:
    """Area (when not the device's) and aliases of an entity registry entry."""
    registry = er.async_get(hass)
    area_id = runtime.area_ids.get(entity.area_id or "")
    device_area = None
    device_id = runtime.device_ids.get(entity.device_id or "")
    if device_id:
        device = dr.async_get(hass).async_get(device_id)
        device_area = device.area_id if device else None
    changes: dict[str, Any] = {}
    if area_id != device_area:
        changes["area_id"] = area_id
    if entity.aliases:
        changes["aliases"] = list(entity.aliases)
    if not changes:
        return
    try:
        registry.async_update_entity(entity_id, **changes)
    except ValueError:
        # HA's rule: an entity named as its device (no name of its own) is in its device's
        # area. Its area goes on the device, if the device has none yet.
        changes.pop("area_id")
        if device_area is None and device_id is not None:
            dr.async_get(hass).async_update_device(device_id, area_id=area_id)
        elif area_id != device_area:
            _LOGGER.warning("%s stays in its device's area: it has no name of its own", entity_id)
        if changes:
            registry.async_update_entity(entity_id, **changes)


def _async_floor(floors: fr.FloorRegistry, floor: FloorFixture) -> str:
    if existing := floors.async_get_floor(floor.floor_id):
        return existing.floor_id
    entry = floors.async_create(floor.floor_id, level=floor.level, aliases=set(floor.aliases))
    if entry.name != floor.name:
        entry = floors.async_update(entry.floor_id, name=floor.name)
    return entry.floor_id


def _async_area(areas: ar.AreaRegistry, area: AreaFixture, floor_ids: Mapping[str, str]) -> str:
    if existing := areas.async_get_area(area.area_id):
        return existing.id
    floor_id = floor_ids.get(area.floor_id or "")
    if (clash := areas.async_get_area_by_name(area.name)) is not None:
        return clash.id
    entry = areas.async_create(area.area_id, floor_id=floor_id, aliases=set(area.aliases))
    if entry.name != area.name:
        entry = areas.async_update(entry.id, name=area.name)
    return entry.id
