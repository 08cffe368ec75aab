"""Home Assistant -> core `Home`: the entities exposed to conversation agents and the services.

Exposure follows the user's settings (Settings -> Voice assistants -> Expose), never all
entities. Names, aliases, areas and floors come from the registries.
"""

from __future__ import annotations

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.const import ATTR_DEVICE_CLASS, ATTR_SUPPORTED_FEATURES
from homeassistant.core import HomeAssistant, State
from homeassistant.helpers import (
    area_registry as ar,
    device_registry as dr,
    entity_registry as er,
    floor_registry as fr,
)
from homeassistant.helpers.service import async_get_all_descriptions

from .core.home import Home, HomeEntity, services_from_descriptions


def _entity(hass: HomeAssistant, state: State) -> HomeEntity:
    entry = er.async_get(hass).async_get(state.entity_id)
    aliases: tuple[str, ...] = ()
    area_id = None
    if entry is not None:
        aliases = tuple(sorted(a for a in entry.aliases if isinstance(a, str)))
        area_id = entry.area_id
        if area_id is None and entry.device_id and (device := dr.async_get(hass).async_get(entry.device_id)):
            area_id = device.area_id
    area = ar.async_get(hass).async_get_area(area_id) if area_id else None
    floor = fr.async_get(hass).async_get_floor(area.floor_id) if area and area.floor_id else None
    features = state.attributes.get(ATTR_SUPPORTED_FEATURES)
    return HomeEntity(
        entity_id=state.entity_id,
        name=state.name,
        state=state.state,
        aliases=aliases,
        area=area.name if area else None,
        floor=floor.name if floor else None,
        area_aliases=tuple(sorted(area.aliases)) if area else (),
        floor_aliases=tuple(sorted(floor.aliases)) if floor else (),
        floor_level=floor.level if floor else None,
        device_class=state.attributes.get(ATTR_DEVICE_CLASS),
        supported_features=features if isinstance(features, int) else 0,
        attributes=dict(state.attributes),
    )


def exposed_entities(hass: HomeAssistant) -> tuple[HomeEntity, ...]:
    """The entities exposed to conversation agents, sorted by entity id, with their aliases, area and floor."""
    return tuple(
        _entity(hass, state)
        for state in sorted(hass.states.async_all(), key=lambda s: s.entity_id)
        if async_should_expose(hass, CONVERSATION_DOMAIN, state.entity_id)
    )


async def async_snapshot_home(hass: HomeAssistant) -> Home:
    """The home as the tool compiler sees it: the exposed entities and HA's service descriptions."""
    descriptions = await async_get_all_descriptions(hass)
    return Home(exposed_entities(hass), services_from_descriptions(descriptions))
