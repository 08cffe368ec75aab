"""The common part of every test-home entity: fixture state in, real HA entity out.

Each platform's entity models its device (a light's brightness and colour, a cover's
position...) in the `_attr_*` fields HA's base classes read, so HA's own services and
intents act on it exactly as on a real device. The fixture only seeds that model:
`eval_restore` puts the fixture's state and attributes back (plus a test case's `setup`
overrides) before every case.
"""

from __future__ import annotations

from collections.abc import Mapping
import enum
import importlib
import logging
import re
from typing import TYPE_CHECKING, Any, ClassVar

from homeassistant.helpers.entity import Entity

if TYPE_CHECKING:
    from scripts.evaluation.fixtures import EntityFixture

    from .home import HomeRuntime

_LOGGER = logging.getLogger(__name__)

# `cover.CoverDeviceClass.GARAGE`, `todo.TodoListEntityFeature.CREATE_TODO_ITEM`.
_ENUM_REF = re.compile(r"^([a-z_]+)\.([A-Z][A-Za-z0-9]*)\.([A-Z0-9_]+)$")
# Attributes that belong to HA's bookkeeping, never to a device's model.
IGNORED_ATTRIBUTES = frozenset(
    {"friendly_name", "icon", "entity_picture", "assumed_state", "restored", "supported_features", "device_class"}
)


def resolve_value(value: Any) -> Any:
    """An enum reference from a fixture (`domain.EnumClass.MEMBER`) as HA's value.

    Lists of feature references become one int (the flags OR'ed), as HA stores them; a
    list of plain numbers (a colour, a position) stays a list. Unresolvable references
    stay as written (and are logged), never crash the load.
    """
    if isinstance(value, str):
        match = _ENUM_REF.match(value.strip())
        if not match:
            return value
        domain, class_name, member = match.groups()
        try:
            module = importlib.import_module(f"homeassistant.components.{domain}")
            enum_class = getattr(module, class_name)
            resolved = enum_class[member]
        except (ImportError, AttributeError, KeyError):
            _LOGGER.warning("Cannot resolve %s; kept as text", value)
            return value
        return int(resolved) if isinstance(resolved, enum.IntFlag | enum.IntEnum) else resolved.value
    if isinstance(value, list | tuple):
        items = [resolve_value(item) for item in value]
        references = any(isinstance(item, str) and _ENUM_REF.match(item.strip()) for item in value)
        if references and all(isinstance(item, int) and not isinstance(item, bool) for item in items):
            flags = 0
            for item in items:
                flags |= item
            return flags
        return items
    return value


def resolve_attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every attribute value resolved with `resolve_value`."""
    return {str(key): resolve_value(value) for key, value in (attributes or {}).items()}


def as_number(value: Any) -> float | None:
    """A fixture number that may come as text ("100", "22.9"); None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except TypeError, ValueError:
        return None
    return number


def as_int(value: Any) -> int | None:
    """`as_number`, rounded to an int."""
    number = as_number(value)
    return None if number is None else round(number)


def as_bool(value: Any) -> bool | None:
    """A fixture flag that may come as text ("on", "true") or a number."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    text = str(value).strip().lower()
    if text in {"on", "true", "yes", "1", "open", "home"}:
        return True
    if text in {"off", "false", "no", "0", "closed", "not_home"}:
        return False
    return None


class EvalEntity(Entity):
    """Mixin (first in the bases) for every test-home entity.

    Subclasses implement `_eval_defaults` (the model before any fixture data) and
    `_eval_apply` (take a state and pop the attributes they model). Attributes nobody
    models are shown as extra state attributes, so the fixture's data stays visible.
    A state the model cannot represent (a vacuum forced to "off") is shown as written
    until the next command moves the device.
    """

    _attr_should_poll = False
    _attr_has_entity_name = False
    # The feature flag class of the platform and the features every such device has.
    _eval_feature_class: ClassVar[type[enum.IntFlag] | None] = None
    _eval_base_features: ClassVar[int] = 0

    def __init__(self, runtime: HomeRuntime, fixture: EntityFixture) -> None:
        """Build the model from the fixture; HA writes it when the entity is added."""
        self.runtime = runtime
        self.fixture = fixture
        self.entity_id = fixture.entity_id
        self._attr_unique_id = fixture.entity_id
        self._attr_name = fixture.name
        self._attr_device_info = runtime.device_info(fixture.device_id)
        self._eval_extra: dict[str, Any] = {}
        self._eval_forced: str | None = None
        self._eval_fixture_attributes = resolve_attributes(fixture.attributes)
        self.eval_restore(None, None, write=False)
        runtime.register(self)

    # --- model ------------------------------------------------------------------------

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        """Reset the model to the domain's default (attributes: the fixture's, to peek)."""

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        """Apply a state (None: keep, or on `initial` pick a default); pop used attributes.

        Returns False when the state cannot be represented by the model.
        """
        return state is None

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        """Features of a device of this kind when the fixture does not list them."""
        return 0

    # --- restore and commands ---------------------------------------------------------

    def eval_restore(self, state: str | None, attributes: Mapping[str, Any] | None, *, write: bool = True) -> None:
        """Back to the fixture's state, then the overrides (a test case's `setup`)."""
        self._eval_extra = {}
        self._eval_forced = None
        fixture_attributes = dict(self._eval_fixture_attributes)
        self._eval_set_features(fixture_attributes)
        self._eval_defaults(fixture_attributes)
        self._eval_take(self.fixture.state, fixture_attributes, initial=True)
        if state is not None or attributes:
            self.eval_set(state, attributes, write=False)
        if write:
            self.async_write_ha_state()

    def eval_set(self, state: str | None, attributes: Mapping[str, Any] | None, *, write: bool = True) -> None:
        """Force a state and attributes on the model (setup overrides, scenes)."""
        resolved = resolve_attributes(attributes)
        if "supported_features" in resolved:
            self._eval_set_features(resolved)
        self._eval_take(state, resolved, initial=False)
        if write:
            self.async_write_ha_state()

    def _eval_take(self, state: str | None, attributes: dict[str, Any], initial: bool) -> None:
        if "friendly_name" in attributes:
            self._attr_name = str(attributes.pop("friendly_name"))
        if "icon" in attributes:
            self._attr_icon = attributes.pop("icon")
        if "device_class" in attributes:
            self._attr_device_class = attributes.pop("device_class")
        state_ok = self._eval_apply(state, attributes, initial)
        if state is not None:
            self._eval_forced = None if state_ok else state
        for key, value in attributes.items():
            if key not in IGNORED_ATTRIBUTES:
                self._eval_extra[key] = value

    def _eval_set_features(self, attributes: dict[str, Any]) -> None:
        features = attributes.pop("supported_features", None)
        value = as_int(features) if not isinstance(features, int) else features
        if value is None:
            value = self._eval_default_features(attributes)
        value |= self._eval_base_features
        self._attr_supported_features = (
            self._eval_feature_class(value) if self._eval_feature_class is not None else value
        )

    def eval_changed(self) -> None:
        """After a command: the device moved, so a forced state no longer holds."""
        self._eval_forced = None
        self.async_write_ha_state()

    # --- what HA reads ----------------------------------------------------------------

    def _stringify_state(self, available: bool) -> str:
        """The model's state, or a forced one the model cannot represent."""
        if available and self._eval_forced is not None:
            return self._eval_forced
        return super()._stringify_state(available)

    @property
    def extra_state_attributes(self) -> Mapping[str, Any] | None:
        """Fixture attributes no model field covers (never hiding a computed one)."""
        if not self._eval_extra:
            return None
        taken = set(self.capability_attributes or {}) | set(self.state_attributes or {})
        extra = {key: value for key, value in self._eval_extra.items() if key not in taken}
        return extra or None


class EvalOnOffState(EvalEntity):
    """Mixin for entities that are on or off (binary sensors, and EvalOnOffEntity); a
    missing state means off. Subclasses model their other attributes and call these.

    `_attr_is_on` is the platform entity's own (HA wraps it so that setting it refreshes
    `is_on`): it must not be declared here, or the wrapper would be shadowed.
    """

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_is_on = False

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if state is None:
            return True
        if (on := as_bool(state)) is None:
            return False
        self._attr_is_on = on
        return True


class EvalOnOffEntity(EvalOnOffState):
    """Mixin for devices switched on and off (switches, sirens, humidifiers, remotes)."""

    async def async_turn_on(self, **kwargs: Any) -> None:
        """On."""
        self._attr_is_on = True
        self.eval_changed()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Off."""
        self._attr_is_on = False
        self.eval_changed()


def pop_percent(attributes: dict[str, Any], *keys: str) -> int | None:
    """The last of `keys` found (all of them are popped), as a position from 0 to 100."""
    found = None
    for key in keys:
        if (value := as_int(attributes.pop(key, None))) is not None:
            found = max(0, min(100, value))
    return found


class EvalOpenCloseEntity(EvalEntity):
    """Mixin for covers and valves: instant moves, a position where the device has one.

    Subclasses say whether it has one (`_positioned`), where it lives (`_position`,
    `_set_position`). The platform's `_attr_is_closed`, `_attr_is_opening` and
    `_attr_is_closing` are not declared here (HA wraps them; see EvalOnOffState).
    """

    @property
    def _positioned(self) -> bool:
        raise NotImplementedError

    @property
    def _position(self) -> int | None:
        raise NotImplementedError

    def _set_position(self, position: int) -> None:
        raise NotImplementedError

    def _apply_open_state(self, state: str | None, position: int | None) -> bool:
        """Take an open or closed state (None: keep), with the position given beside it if
        any; False if the state is neither."""
        if state is None:
            return True
        self._attr_is_opening = state == "opening"
        self._attr_is_closing = state == "closing"
        if state in ("open", "opening"):
            if self._positioned and not self._position:
                self._set_position(100)
            self._attr_is_closed = False
        elif state in ("closed", "closing"):
            if self._positioned and position is None:
                self._set_position(0)
            self._attr_is_closed = True
        else:
            return False
        return True

    def _moved(self) -> None:
        self._attr_is_opening = False
        self._attr_is_closing = False
        self.eval_changed()
