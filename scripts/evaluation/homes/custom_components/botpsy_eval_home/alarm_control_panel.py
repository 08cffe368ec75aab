"""Alarm panels: arm home/away/night/vacation/custom bypass, disarm, trigger.

A fixture may give `code` (the panel's code: wrong codes are refused, like a keypad) and
`code_format` (`number`/`text`); without a code, no code is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.alarm_control_panel import AlarmControlPanelEntity
from homeassistant.components.alarm_control_panel.const import (
    AlarmControlPanelEntityFeature,
    AlarmControlPanelState,
    CodeFormat,
)
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_bool

_F = AlarmControlPanelEntityFeature
_STATES = {state.value for state in AlarmControlPanelState}


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalAlarm per fixture alarm panel."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalAlarm(runtime, fixture) for fixture in runtime.modelled("alarm_control_panel")])


class EvalAlarm(EvalEntity, AlarmControlPanelEntity):
    """An alarm panel that arms at once (no arming delay); a missing state means disarmed."""

    _eval_feature_class = AlarmControlPanelEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(_F.ARM_HOME | _F.ARM_AWAY | _F.ARM_NIGHT | _F.ARM_VACATION | _F.ARM_CUSTOM_BYPASS | _F.TRIGGER)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_alarm_state = AlarmControlPanelState.DISARMED
        self._code: str | None = None
        self._attr_code_format = None
        self._attr_code_arm_required = False

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if "code" in attributes:
            code = attributes.pop("code")
            self._code = None if code is None else str(code)
            if self._code is not None:
                self._attr_code_format = CodeFormat.NUMBER if self._code.isdigit() else CodeFormat.TEXT
        if (code_format := attributes.pop("code_format", None)) is not None:
            self._attr_code_format = CodeFormat(code_format) if code_format in set(CodeFormat) else None
        if (required := as_bool(attributes.pop("code_arm_required", None))) is not None:
            self._attr_code_arm_required = required
        attributes.pop("changed_by", None)
        if state is None:
            return True
        if state not in _STATES:
            return False
        self._attr_alarm_state = AlarmControlPanelState(state)
        return True

    def _set(self, state: AlarmControlPanelState, code: str | None, *, disarm: bool = False) -> None:
        if self._code is not None and (disarm or self._attr_code_arm_required) and code != self._code:
            raise ServiceValidationError(f"Wrong code for {self.entity_id}")
        self._attr_alarm_state = state
        self.eval_changed()

    async def async_alarm_disarm(self, code: str | None = None) -> None:
        """Disarm (needs the code when the panel has one)."""
        self._set(AlarmControlPanelState.DISARMED, code, disarm=True)

    async def async_alarm_arm_home(self, code: str | None = None) -> None:
        """Arm home."""
        self._set(AlarmControlPanelState.ARMED_HOME, code)

    async def async_alarm_arm_away(self, code: str | None = None) -> None:
        """Arm away."""
        self._set(AlarmControlPanelState.ARMED_AWAY, code)

    async def async_alarm_arm_night(self, code: str | None = None) -> None:
        """Arm night."""
        self._set(AlarmControlPanelState.ARMED_NIGHT, code)

    async def async_alarm_arm_vacation(self, code: str | None = None) -> None:
        """Arm vacation."""
        self._set(AlarmControlPanelState.ARMED_VACATION, code)

    async def async_alarm_arm_custom_bypass(self, code: str | None = None) -> None:
        """Arm custom bypass."""
        self._set(AlarmControlPanelState.ARMED_CUSTOM_BYPASS, code)

    async def async_alarm_trigger(self, code: str | None = None) -> None:
        """Trigger the alarm."""
        self._attr_alarm_state = AlarmControlPanelState.TRIGGERED
        self.eval_changed()
