"""The benchmark's homes, in the evaluation fixtures' mapping shape (`home_from_mapping`).

The scaling homes are `generated_mapping(count)` of scripts/testing/sample_home.py, the
core tests' generated homes themselves.
"""

from __future__ import annotations

from typing import Any

from scripts.testing.sample_home import generated_mapping

__all__ = ["DEMO_HOME", "generated_mapping"]

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
