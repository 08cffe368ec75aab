"""Public homes reuse a device id in several areas: each entity keeps its own device."""

from __future__ import annotations

from scripts.evaluation.fixtures import home_from_mapping


def test_a_device_id_used_twice_is_two_devices_each_entity_on_the_one_in_its_area() -> None:
    home = home_from_mapping(
        {
            "areas": [{"id": "living_room", "name": "Living Room"}, {"id": "bedroom", "name": "Bedroom"}],
            "devices": [
                {"id": "smart_light", "name": "Smart Light", "area": "living_room"},
                {"id": "smart_light", "name": "Smart Light", "area": "bedroom"},
            ],
            "entities": [
                {"id": "light.smart_light", "name": "Smart Light", "device": "smart_light", "area": "bedroom"},
                {"id": "light.smart_light", "name": "Smart Light", "device": "smart_light", "area": "living_room"},
                {"id": "light.lamp", "name": "Lamp", "area": "bedroom"},
            ],
        }
    )
    assert [(d.device_id, d.area_id) for d in home.devices] == [
        ("smart_light", "living_room"),
        ("smart_light_2", "bedroom"),
    ]
    assert [(e.entity_id, e.device_id, e.area_id) for e in home.entities] == [
        ("light.smart_light", "smart_light_2", "bedroom"),
        ("light.smart_light_2", "smart_light", "living_room"),
        ("light.lamp", None, "bedroom"),  # an entity of no device is on none
    ]
