"""Lights: on/off, brightness, colour temperature and colours in HA's colour modes.

A light remembers its brightness and colour while off (as bulbs do), so turning it on
without parameters brings back the fixture's or last brightness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.light import LightEntity
from homeassistant.components.light.const import (
    ATTR_BRIGHTNESS,
    ATTR_COLOR_TEMP_KELVIN,
    ATTR_EFFECT,
    ATTR_HS_COLOR,
    ATTR_RGB_COLOR,
    ATTR_RGBW_COLOR,
    ATTR_RGBWW_COLOR,
    ATTR_WHITE,
    ATTR_XY_COLOR,
    ColorMode,
    LightEntityFeature,
)
from homeassistant.components.light.helper import brightness_supported
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_bool, as_int, as_number

# Colour modes a light without colour data in its fixture gets: a typical colour bulb.
DEFAULT_MODES = frozenset({ColorMode.COLOR_TEMP, ColorMode.HS})
# Which mode a light takes when turned on without one, most preferred first.
_MODE_PREFERENCE = (
    ColorMode.BRIGHTNESS,
    ColorMode.COLOR_TEMP,
    ColorMode.HS,
    ColorMode.RGB,
    ColorMode.XY,
    ColorMode.RGBW,
    ColorMode.RGBWW,
    ColorMode.WHITE,
    ColorMode.ONOFF,
)
_KWARG_MODES = (
    (ATTR_COLOR_TEMP_KELVIN, ColorMode.COLOR_TEMP),
    (ATTR_HS_COLOR, ColorMode.HS),
    (ATTR_RGB_COLOR, ColorMode.RGB),
    (ATTR_RGBW_COLOR, ColorMode.RGBW),
    (ATTR_RGBWW_COLOR, ColorMode.RGBWW),
    (ATTR_XY_COLOR, ColorMode.XY),
)


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalLight per fixture light."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalLight(runtime, fixture) for fixture in runtime.modelled("light")])


def supported_modes(raw: Any) -> set[ColorMode]:
    """A valid set of colour modes from the fixture's (onoff/brightness stand alone)."""
    items = [raw] if isinstance(raw, str) else list(raw or [])
    modes: set[ColorMode] = set()
    for item in items:
        try:
            modes.add(ColorMode(str(item)))
        except ValueError:
            continue
    modes.discard(ColorMode.UNKNOWN)
    if len(modes) > 1:
        modes -= {ColorMode.ONOFF}
    if len(modes) > 1:
        modes -= {ColorMode.BRIGHTNESS}
    return modes


def _tuple(value: Any, length: int) -> tuple[Any, ...] | None:
    if not isinstance(value, list | tuple) or len(value) != length:
        return None
    numbers = [as_number(item) for item in value]
    if any(number is None for number in numbers):
        return None
    return tuple(numbers)


class EvalLight(EvalEntity, LightEntity):
    """A dimmable / colour light as HA's light services drive it."""

    _eval_feature_class = LightEntityFeature
    _default_mode: ColorMode

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        return int(LightEntityFeature.EFFECT) if attributes.get("effect_list") else 0

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        modes = supported_modes(attributes.get("supported_color_modes"))
        if not modes:
            modes = set(DEFAULT_MODES)
            if "brightness" in attributes and not any(
                key in attributes for key in ("hs_color", "rgb_color", "xy_color", "color_temp_kelvin", "color_temp")
            ):
                modes = {ColorMode.BRIGHTNESS}
        self._attr_supported_color_modes = modes
        self._default_mode = next(mode for mode in _MODE_PREFERENCE if mode in modes)
        self._attr_is_on = False
        self._attr_color_mode = None
        self._attr_brightness = 255 if brightness_supported(modes) else None
        self._attr_min_color_temp_kelvin = 2000
        self._attr_max_color_temp_kelvin = 6535
        self._attr_color_temp_kelvin = 3000 if ColorMode.COLOR_TEMP in modes else None
        self._attr_hs_color = (0.0, 0.0) if ColorMode.HS in modes else None
        self._attr_rgb_color = (255, 255, 255) if ColorMode.RGB in modes else None
        self._attr_xy_color = (0.323, 0.329) if ColorMode.XY in modes else None
        self._attr_rgbw_color = (255, 255, 255, 0) if ColorMode.RGBW in modes else None
        self._attr_rgbww_color = (255, 255, 255, 0, 0) if ColorMode.RGBWW in modes else None
        self._attr_effect_list = None
        self._attr_effect = None
        self._remembered_mode: ColorMode | None = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        attributes.pop("supported_color_modes", None)
        modes = self._attr_supported_color_modes or set()
        if (brightness := as_int(attributes.pop(ATTR_BRIGHTNESS, None))) is not None:
            self._attr_brightness = max(0, min(255, brightness))
        self._apply_color_mode(attributes.pop("color_mode", None), modes)
        self._apply_color_temp(attributes)
        self._apply_colors(attributes)
        if isinstance(effects := attributes.pop("effect_list", None), list):
            self._attr_effect_list = [str(effect) for effect in effects]
        if "effect" in attributes:
            effect = attributes.pop("effect")
            self._attr_effect = None if effect is None else str(effect)
        if state is None and initial:
            self._set_on(bool(self._attr_brightness) and "brightness" in self._eval_fixture_attributes)
            return True
        if state is None:
            self._set_on(self._attr_is_on or False)
            return True
        if (on := as_bool(state)) is None:
            return False
        self._set_on(on)
        return True

    def _apply_color_mode(self, mode_raw: Any, modes: set[ColorMode]) -> None:
        """Remember the fixture's colour mode when the light has it, to show it once the light is on."""
        if isinstance(mode_raw, list | tuple):
            mode_raw = mode_raw[0] if mode_raw else None
        if mode_raw is not None and str(mode_raw) in modes:
            self._remembered_mode = ColorMode(str(mode_raw))

    def _apply_color_temp(self, attributes: dict[str, Any]) -> None:
        """Take the colour temperature and its range in kelvin, from mireds too (HA's older unit)."""
        for key in ("min_color_temp_kelvin", "max_color_temp_kelvin"):
            if (kelvin := as_int(attributes.pop(key, None))) is not None:
                setattr(self, f"_attr_{key}", kelvin)
        for key in ("min_mireds", "max_mireds"):
            attributes.pop(key, None)
        if (kelvin := as_int(attributes.pop(ATTR_COLOR_TEMP_KELVIN, None))) is not None:
            self._attr_color_temp_kelvin = kelvin
        if (mireds := as_number(attributes.pop("color_temp", None))) and mireds > 0:
            self._attr_color_temp_kelvin = round(1_000_000 / mireds)

    def _apply_colors(self, attributes: dict[str, Any]) -> None:
        """Take the colours of well-formed tuples only, with integer channels where HA has them."""
        for key, length in ((ATTR_HS_COLOR, 2), (ATTR_XY_COLOR, 2), (ATTR_RGB_COLOR, 3)):
            if (value := _tuple(attributes.pop(key, None), length)) is not None:
                setattr(self, f"_attr_{key}", value if key != ATTR_RGB_COLOR else tuple(int(v) for v in value))
        for key, length in ((ATTR_RGBW_COLOR, 4), (ATTR_RGBWW_COLOR, 5)):
            if (value := _tuple(attributes.pop(key, None), length)) is not None:
                setattr(self, f"_attr_{key}", tuple(int(v) for v in value))

    def _set_on(self, on: bool) -> None:
        self._attr_is_on = on
        if on:
            self._attr_color_mode = self._remembered_mode or self._attr_color_mode or self._default_mode
            self._remembered_mode = self._attr_color_mode
        else:
            if self._attr_color_mode is not None:
                self._remembered_mode = self._attr_color_mode
            self._attr_color_mode = None

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Switch on, taking HA's already converted brightness and colour parameters."""
        mode: ColorMode | None = None
        for key, key_mode in _KWARG_MODES:
            if key in kwargs:
                setattr(self, f"_attr_{key}", kwargs[key])
                mode = key_mode
        if ATTR_WHITE in kwargs:
            mode = ColorMode.WHITE
            self._attr_brightness = kwargs[ATTR_WHITE]
        if ATTR_BRIGHTNESS in kwargs:
            self._attr_brightness = kwargs[ATTR_BRIGHTNESS]
        if ATTR_EFFECT in kwargs:
            self._attr_effect = kwargs[ATTR_EFFECT]
        if mode is not None:
            self._remembered_mode = mode
        self._set_on(True)
        if brightness_supported(self._attr_supported_color_modes) and self._attr_brightness is None:
            self._attr_brightness = 255
        self.eval_changed()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Switch off; brightness and colour are remembered."""
        self._set_on(False)
        self.eval_changed()
