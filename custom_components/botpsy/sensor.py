"""Sensors of an engine: how its last request went and how many it served."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from homeassistant.components.sensor import (
    SensorDeviceClass,
    SensorEntity,
    SensorEntityDescription,
    SensorStateClass,
)
from homeassistant.const import PERCENTAGE, EntityCategory, UnitOfTime
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import BotPsyConfigEntry
from .const import DOMAIN
from .stats import EngineStats


@dataclass(frozen=True, kw_only=True)
class BotPsySensorDescription(SensorEntityDescription):
    """A sensor of the engine, and which of its figures it shows."""

    value: Callable[[EngineStats], float | int | str | None]


SENSORS = (
    BotPsySensorDescription(
        key="last_latency",
        translation_key="last_latency",
        device_class=SensorDeviceClass.DURATION,
        native_unit_of_measurement=UnitOfTime.SECONDS,
        state_class=SensorStateClass.MEASUREMENT,
        suggested_display_precision=2,
        value=lambda s: s.last_latency_s,
    ),
    BotPsySensorDescription(
        key="decode_speed",
        translation_key="decode_speed",
        native_unit_of_measurement="tokens/s",
        state_class=SensorStateClass.MEASUREMENT,
        value=lambda s: s.last_decode_tokens_per_s,
    ),
    BotPsySensorDescription(
        key="prompt_reuse",
        translation_key="prompt_reuse",
        native_unit_of_measurement=PERCENTAGE,
        state_class=SensorStateClass.MEASUREMENT,
        value=lambda s: s.last_prompt_reuse_pct,
    ),
    BotPsySensorDescription(
        key="requests",
        translation_key="requests",
        state_class=SensorStateClass.TOTAL_INCREASING,
        value=lambda s: s.requests,
    ),
    BotPsySensorDescription(
        key="last_error",
        translation_key="last_error",
        entity_category=EntityCategory.DIAGNOSTIC,
        value=lambda s: s.last_error,
    ),
)


# Pushed by the engine's figures, never polled.
PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: BotPsyConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a sensor for each figure of the entry's engine."""
    async_add_entities(BotPsySensor(entry, description) for description in SENSORS)


class BotPsySensor(SensorEntity):
    """One figure of the entry's engine; updated after every request."""

    _attr_has_entity_name = True
    _attr_should_poll = False
    entity_description: BotPsySensorDescription

    def __init__(self, entry: BotPsyConfigEntry, description: BotPsySensorDescription) -> None:
        self.entity_description = description
        self._stats = entry.runtime_data.stats
        self._attr_unique_id = f"{entry.entry_id}_{description.key}"
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, entry.entry_id)},
            name=entry.title,
            manufacturer="BotPsy",
            model="Engine",
            entry_type=dr.DeviceEntryType.SERVICE,
        )

    @property
    def native_value(self) -> float | int | str | None:
        """The figure, from the engine's stats."""
        return self.entity_description.value(self._stats)

    async def async_added_to_hass(self) -> None:
        """Update after every request the engine serves."""
        self.async_on_remove(self._stats.async_add_listener(self.async_write_ha_state))
