"""Media players: play/pause/stop, tracks, volume, mute, source, play_media and search.

`search_media` (used by HA's HassMediaSearchAndPlay intent) finds the home's `media`
titles when the fixture lists some, and otherwise anything asked for (a streaming
service finds most things). Skipping tracks moves `media_track`, so a scorer can see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.components.media_player import MediaPlayerEntity
from homeassistant.components.media_player.browse_media import BrowseMedia, SearchMedia, SearchMediaQuery
from homeassistant.components.media_player.const import (
    MediaClass,
    MediaPlayerEntityFeature,
    MediaPlayerState,
    MediaType,
    RepeatMode,
)
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import runtime_for
from .entity import EvalEntity, as_bool, as_int, as_number

MEDIA_ID_PREFIX = "botpsy-eval://media/"
_STATES = {state.value for state in MediaPlayerState}
_F = MediaPlayerEntityFeature


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalMediaPlayer per fixture media player."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalMediaPlayer(runtime, fixture) for fixture in runtime.modelled("media_player")])


class EvalMediaPlayer(EvalEntity, MediaPlayerEntity):
    """A speaker or TV that does what it is told at once."""

    _eval_feature_class = MediaPlayerEntityFeature

    def _eval_default_features(self, attributes: Mapping[str, Any]) -> int:
        features = (
            _F.PLAY
            | _F.PAUSE
            | _F.STOP
            | _F.NEXT_TRACK
            | _F.PREVIOUS_TRACK
            | _F.VOLUME_SET
            | _F.VOLUME_STEP
            | _F.VOLUME_MUTE
            | _F.TURN_ON
            | _F.TURN_OFF
            | _F.PLAY_MEDIA
            | _F.SEARCH_MEDIA
            | _F.SHUFFLE_SET
            | _F.REPEAT_SET
        )
        if attributes.get("source_list"):
            features |= _F.SELECT_SOURCE
        if attributes.get("sound_mode_list"):
            features |= _F.SELECT_SOUND_MODE
        return int(features)

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._attr_state = MediaPlayerState.IDLE
        self._attr_volume_level = 0.5
        self._attr_is_volume_muted = False
        self._attr_media_track = None
        self._attr_media_title = None
        self._attr_media_artist = None
        self._attr_media_album_name = None
        self._attr_media_content_id = None
        self._attr_media_content_type = None
        self._attr_source = None
        self._attr_source_list = None
        self._attr_sound_mode = None
        self._attr_sound_mode_list = None
        self._attr_shuffle = None
        self._attr_repeat = None

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if (volume := as_number(attributes.pop("volume_level", None))) is not None:
            self._attr_volume_level = volume / 100 if volume > 1 else volume
        if (muted := as_bool(attributes.pop("is_volume_muted", None))) is not None:
            self._attr_is_volume_muted = muted
        if "media_track" in attributes:
            self._attr_media_track = as_int(attributes.pop("media_track"))
        for key in (
            "media_title",
            "media_artist",
            "media_album_name",
            "media_content_id",
            "media_content_type",
            "source",
            "sound_mode",
        ):
            if key in attributes:
                value = attributes.pop(key)
                setattr(self, f"_attr_{key}", None if value is None else str(value))
        for key in ("source_list", "sound_mode_list"):
            if isinstance(values := attributes.pop(key, None), list):
                setattr(self, f"_attr_{key}", [str(value) for value in values])
        if (shuffle := as_bool(attributes.pop("shuffle", None))) is not None:
            self._attr_shuffle = shuffle
        if (repeat := attributes.pop("repeat", None)) is not None:
            self._attr_repeat = str(repeat)
        if state is None:
            return True
        if state not in _STATES:
            return False
        self._attr_state = MediaPlayerState(state)
        return True

    def _set(self, state: MediaPlayerState) -> None:
        self._attr_state = state
        self.eval_changed()

    async def async_turn_on(self) -> None:
        """Power on."""
        self._set(MediaPlayerState.ON)

    async def async_turn_off(self) -> None:
        """Power off."""
        self._set(MediaPlayerState.OFF)

    async def async_media_play(self) -> None:
        """Play (resume)."""
        self._set(MediaPlayerState.PLAYING)

    async def async_media_pause(self) -> None:
        """Pause."""
        self._set(MediaPlayerState.PAUSED)

    async def async_media_stop(self) -> None:
        """Stop: the player stays on, idle."""
        self._set(MediaPlayerState.IDLE)

    async def async_media_next_track(self) -> None:
        """Next track (the track number goes up)."""
        self._attr_media_track = (self._attr_media_track or 0) + 1
        self._set(MediaPlayerState.PLAYING)

    async def async_media_previous_track(self) -> None:
        """Previous track (the track number goes down, not below 0)."""
        current = self._attr_media_track if self._attr_media_track is not None else 1
        self._attr_media_track = max(0, current - 1)
        self._set(MediaPlayerState.PLAYING)

    async def async_set_volume_level(self, volume: float) -> None:
        """Volume 0..1 (rounded to 0.01, as steps of 0.1 would drift otherwise)."""
        self._attr_volume_level = round(max(0.0, min(1.0, volume)), 2)
        self.eval_changed()

    async def async_mute_volume(self, mute: bool) -> None:
        """Mute or unmute."""
        self._attr_is_volume_muted = mute
        self.eval_changed()

    async def async_select_source(self, source: str) -> None:
        """Input source."""
        self._attr_source = source
        self.eval_changed()

    async def async_select_sound_mode(self, sound_mode: str) -> None:
        """Sound mode."""
        self._attr_sound_mode = sound_mode
        self.eval_changed()

    async def async_set_shuffle(self, shuffle: bool) -> None:
        """Shuffle on/off."""
        self._attr_shuffle = shuffle
        self.eval_changed()

    async def async_set_repeat(self, repeat: RepeatMode) -> None:
        """Repeat mode."""
        self._attr_repeat = repeat
        self.eval_changed()

    async def async_play_media(self, media_type: MediaType | str, media_id: str, **kwargs: Any) -> None:
        """Play something: it becomes the current media."""
        title = media_id.removeprefix(MEDIA_ID_PREFIX) if media_id.startswith(MEDIA_ID_PREFIX) else None
        self._attr_media_content_id = media_id
        self._attr_media_content_type = str(media_type)
        self._attr_media_title = title or media_id
        self._set(MediaPlayerState.PLAYING)

    async def async_search_media(self, query: SearchMediaQuery) -> SearchMedia:
        """The home's media titles containing the query (any query when it lists none)."""
        wanted = query.search_query.strip()
        titles = list(self.runtime.fixture.media)
        if titles:
            found = [title for title in titles if wanted.casefold() in title.casefold()]
            found += [title for title in titles if title.casefold() in wanted.casefold() and title not in found]
        else:
            found = [wanted] if wanted else []
        return SearchMedia(
            result=[
                BrowseMedia(
                    media_class=MediaClass.MUSIC,
                    media_content_id=f"{MEDIA_ID_PREFIX}{title}",
                    media_content_type=MediaType.MUSIC,
                    title=title,
                    can_play=True,
                    can_expand=False,
                )
                for title in found
            ]
        )
