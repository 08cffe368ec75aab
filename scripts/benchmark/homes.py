"""The benchmark's homes, in the evaluation fixtures' mapping shape (`home_from_mapping`)."""

from __future__ import annotations

from typing import Any

from scripts.testing.sample_home import generated_home

# A small home: a few lights, a cover, a lock and a switch in three areas.
DEMO_HOME: dict[str, Any] = {
    "areas": [
        {"name": "Kitchen", "id": "kitchen"},
        {"name": "Bedroom", "id": "bedroom"},
        {"name": "Living room", "id": "living_room"},
    ],
    "entities": [
        {
            "id": "light.kitchen",
            "name": "Kitchen light",
            "area": "kitchen",
            "state": "on",
            "attributes": {"supported_color_modes": ["brightness"], "color_mode": "brightness", "brightness": 255},
        },
        {"id": "switch.coffee_machine", "name": "Coffee machine", "area": "kitchen", "state": "off"},
        {
            "id": "light.bedroom_lamp",
            "name": "Bedroom lamp",
            "area": "bedroom",
            "state": "off",
            "attributes": {"supported_color_modes": ["onoff"]},
        },
        {"id": "cover.bedroom_blinds", "name": "Bedroom blinds", "area": "bedroom", "state": "open"},
        {
            "id": "light.living_room",
            "name": "Living room light",
            "area": "living_room",
            "state": "on",
            "attributes": {"supported_color_modes": ["brightness"], "color_mode": "brightness", "brightness": 180},
        },
        {"id": "lock.front_door", "name": "Front door", "area": "living_room", "state": "locked"},
    ],
}

# `generated_home` has every entity "off": its words per domain, and ceiling lights on (the
# measured request turns one off; lamps stay off, the warm-up request turns one on).
_STATES = {"lock": "locked", "sensor": "21.5"}


def _state(entity_id: str, domain: str, state: str) -> str:
    if domain == "light" and "ceiling_light" in entity_id:
        return "on"
    return _STATES.get(domain, state)


def generated_mapping(count: int) -> dict[str, Any]:
    """tests/core/sample_home.generated_home(count) as a fixture mapping."""
    home = generated_home(count)
    areas = sorted({e.area for e in home.entities if e.area})
    entities = []
    for entity in home.entities:
        attributes = dict(entity.attributes)
        if entity.supported_features:
            attributes["supported_features"] = entity.supported_features
        if entity.domain == "sensor":
            attributes |= {"device_class": "temperature", "unit_of_measurement": "°C"}
        entities.append(
            {
                "id": entity.entity_id,
                "name": entity.name,
                "area": entity.area,
                "state": _state(entity.entity_id, entity.domain, entity.state),
                "attributes": attributes,
            }
        )
    return {"areas": [{"name": a, "id": a.lower().replace(" ", "_")} for a in areas], "entities": entities}
