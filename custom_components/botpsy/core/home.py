"""The home as BotPsy's core sees it: exposed entities and the services that act on them.

Plain data, filled by the Home Assistant adapter (`home_snapshot.py`) from HA's registries
and service descriptions, so the tool compiler is tested without HA.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class HomeEntity:
    """An entity exposed to conversation agents, as the runtime sees it (HA's own `Entity` is another thing)."""

    entity_id: str
    name: str
    state: str = "unknown"
    aliases: tuple[str, ...] = ()
    area: str | None = None
    floor: str | None = None
    # What else people call its area and floor, and the floor's level (0 the ground
    # floor, negative below it), as HA's registries hold them.
    area_aliases: tuple[str, ...] = ()
    floor_aliases: tuple[str, ...] = ()
    floor_level: int | None = None
    device_class: str | None = None
    supported_features: int = 0
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def domain(self) -> str:
        """The entity's domain: `light` of `light.kitchen`."""
        return self.entity_id.split(".", 1)[0]

    def has_any_features(self, feature_sets: tuple[int, ...]) -> bool:
        """Whether the entity supports all bits of one of `feature_sets` (any if none given)."""
        if not feature_sets:
            return True
        # HA's feature flags are IntFlag members, whose operators are slow: this runs for
        # every entity a service may target.
        features = int(self.supported_features)
        return any(features & f == f for f in feature_sets)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One argument of a service, as its description declares it."""

    name: str
    selector: Mapping[str, Any]
    required: bool = False
    # The field applies to an entity having any of these features / attribute values.
    features: tuple[int, ...] = ()
    attribute_filter: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def applies_to(self, entity: HomeEntity) -> bool:
        """Whether the field is offered for `entity`: its features and attributes fit the filter."""
        if not entity.has_any_features(self.features):
            return False
        for attribute, allowed in self.attribute_filter.items():
            value = entity.attributes.get(attribute)
            values = value if isinstance(value, (list, tuple, set)) else [value]
            if not any(v in allowed for v in values):
                return False
        return True


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """A service that targets entities, with its fields."""

    domain: str
    service: str
    description: str = ""
    fields: tuple[FieldSpec, ...] = ()
    # Target filter: entities of these domains having any of these feature sets.
    target_domains: tuple[str, ...] = ()
    target_features: tuple[int, ...] = ()

    def targets(self, entity: HomeEntity) -> bool:
        """Whether the service acts on `entity`: its domain and features fit the target filter."""
        if entity.domain not in (self.target_domains or (self.domain,)):
            return False
        return entity.has_any_features(self.target_features)


@dataclass(frozen=True, slots=True)
class Home:
    """A snapshot of the home: the exposed entities and the services that target them."""

    entities: tuple[HomeEntity, ...]
    services: tuple[ServiceSpec, ...]
    # Entity id -> its entity, filled on the first lookup (a request looks up dozens).
    _by_id: dict[str, HomeEntity] = field(default_factory=dict, init=False, repr=False, compare=False)

    def entity(self, entity_id: str) -> HomeEntity | None:
        """The exposed entity `entity_id`, if there is one."""
        by_id = self._by_id
        if not by_id and self.entities:
            for entity in self.entities:
                by_id.setdefault(entity.entity_id, entity)
        return by_id.get(entity_id)


def _features(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values or () if isinstance(v, int))


def services_from_descriptions(descriptions: Mapping[str, Mapping[str, Any]]) -> tuple[ServiceSpec, ...]:
    """Services that target entities, from HA's service descriptions.

    Only top-level fields are kept: fields in collapsed sections are advanced options a
    small model should not be offered.
    """
    specs: list[ServiceSpec] = []
    for domain, services in sorted(descriptions.items()):
        for service, description in sorted(services.items()):
            target = (description or {}).get("target") or {}
            entity_filters = target.get("entity") or []
            if isinstance(entity_filters, dict):
                entity_filters = [entity_filters]
            if not entity_filters:
                continue
            domains: list[str] = []
            features: list[int] = []
            for item in entity_filters:
                item_domains = item.get("domain") or [domain]
                domains += [item_domains] if isinstance(item_domains, str) else list(item_domains)
                features += _features(item.get("supported_features"))
            fields = []
            for name, spec in (description.get("fields") or {}).items():
                if not isinstance(spec, Mapping) or "fields" in spec or "selector" not in spec:
                    continue
                filt = spec.get("filter") or {}
                fields.append(
                    FieldSpec(
                        name=name,
                        selector=spec["selector"] or {},
                        required=bool(spec.get("required")),
                        features=_features(filt.get("supported_features")),
                        attribute_filter={k: tuple(v) for k, v in (filt.get("attribute") or {}).items()},
                    )
                )
            specs.append(
                ServiceSpec(
                    domain=domain,
                    service=service,
                    description=str(description.get("description") or description.get("name") or ""),
                    fields=tuple(fields),
                    target_domains=tuple(dict.fromkeys(domains)),
                    target_features=tuple(dict.fromkeys(features)),
                )
            )
    return tuple(specs)
