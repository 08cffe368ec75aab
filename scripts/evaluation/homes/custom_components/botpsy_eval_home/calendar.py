"""Calendars: the fixture's `events`, placed relative to the day the home is loaded.

An event is `{summary, in_days, at: "HH:MM", hours}` (`at` absent: all day), so that
"what's on tomorrow?" has the same answer whatever day the evaluation runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from typing import Any

from homeassistant.components.calendar import CalendarEntity, CalendarEvent
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util import dt as dt_util

from . import runtime_for
from .entity import EvalEntity, as_int, as_number


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddConfigEntryEntitiesCallback
) -> None:
    """One EvalCalendar per fixture calendar."""
    runtime = runtime_for(hass, entry)
    async_add_entities([EvalCalendar(runtime, fixture) for fixture in runtime.modelled("calendar")])


def _event(raw: Mapping[str, Any], today: date) -> CalendarEvent:
    day = today + timedelta(days=as_int(raw.get("in_days")) or 0)
    if (at := raw.get("at")) is None:
        return CalendarEvent(start=day, end=day + timedelta(days=1), summary=str(raw.get("summary", "")))
    start = datetime.combine(day, time.fromisoformat(str(at)), tzinfo=dt_util.get_default_time_zone())
    hours = as_number(raw.get("hours")) or 1.0
    return CalendarEvent(start=start, end=start + timedelta(hours=hours), summary=str(raw.get("summary", "")))


class EvalCalendar(EvalEntity, CalendarEntity):
    """A calendar of fixed events."""

    def _eval_defaults(self, attributes: Mapping[str, Any]) -> None:
        self._eval_events: list[CalendarEvent] = []

    def _eval_apply(self, state: str | None, attributes: dict[str, Any], initial: bool) -> bool:
        if isinstance(events := attributes.pop("events", None), list):
            today = dt_util.now().date()
            self._eval_events = [_event(e, today) for e in events if isinstance(e, Mapping)]
        return True  # the state (on while an event runs) is HA's to compute

    @property
    def event(self) -> CalendarEvent | None:
        """None: HA would schedule the calendar's state changes at its next event by the
        real clock, while the evaluation holds `now` still, and the timer would fire again
        at once, forever. The events are read through `calendar.get_events`."""
        return None

    async def async_get_events(
        self, hass: HomeAssistant, start_date: datetime, end_date: datetime
    ) -> list[CalendarEvent]:
        """The events that overlap the span."""
        return [e for e in self._eval_events if e.start_datetime_local < end_date and e.end_datetime_local > start_date]
