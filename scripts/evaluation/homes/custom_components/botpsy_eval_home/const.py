"""Constants of the test-home integration."""

from __future__ import annotations

DOMAIN = "botpsy_eval_home"
# hass.data[DOMAIN][PENDING]: the fixture the next config entry of this domain loads.
PENDING = "pending"

# Entity domains this integration models with its own platform (one file each).
MODELLED_DOMAINS = frozenset(
    {
        "alarm_control_panel",
        "binary_sensor",
        "button",
        "calendar",
        "climate",
        "cover",
        "fan",
        "humidifier",
        "lawn_mower",
        "light",
        "lock",
        "media_player",
        "number",
        "remote",
        "scene",
        "select",
        "sensor",
        "siren",
        "switch",
        "text",
        "todo",
        "vacuum",
        "valve",
        "water_heater",
        "weather",
    }
)
