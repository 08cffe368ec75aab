"""Keep the engine's state after an agent's prompt prefix, so requests evaluate only their words.

The prefix is rendered as a first turn renders it: the stable part (instructions and
tools) depends on the home's structure and the agent's options; the states block after
it (the devices' states, the clock to the minute) on states and time. Both are prefilled
in the background once Home Assistant has started: again, debounced, when entities,
devices, areas or what is exposed change; soon after a shown device's state changes,
the minute turns or the block's devices change. The stable part is prefilled on its own
first, so an engine that cannot cut its memory back (a recurrent model) starts a new
block from it. Option changes reload the entry, so a new agent warms up anew. Refreshes
whose text did not change cost a render, not a prefill. A request never waits for any of
it: without a ready prefix the engine evaluates the whole prompt, as it would anyway. A
request that starts with the prefix but did not reuse it shows the engine lost it
(evicted, or its model process restarted): it is prefilled again, once, until a request
reuses it or the home changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.homeassistant.const import DATA_EXPOSED_ENTITIES
from homeassistant.components.homeassistant.exposed_entities import async_listen_entity_updates
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import CALLBACK_TYPE, Event, HassJob, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import area_registry as ar, device_registry as dr, entity_registry as er
from homeassistant.helpers.event import (
    EventStateChangedData,
    async_call_later,
    async_track_state_change_event,
    async_track_utc_time_change,
)
from homeassistant.helpers.start import async_at_started

from botpsy_runtime.engine import Engine, Timings
from botpsy_runtime.errors import EngineError, PrefillInterruptedError

from .const import LOGGER
from .prompt_builder import Prefix

# Seconds after start-up or the last change of the home before the prefix is refreshed
# (start-up and registry edits come in bursts).
REFRESH_DELAY = 10.0
# Seconds after a shown device's state changed (or the minute turned) before the states
# block is refreshed: a scene's changes come together. Not postponed by later changes, so
# a device that changes all the time cannot hold the refresh off.
STATES_DELAY = 1.0
# Seconds without any request before a conversation's next turn is prefilled: a person
# answers after hearing the reply, while requests that come at once (other satellites, an
# automation, an evaluation's next case) go first instead of waiting for it.
CONVERSATION_QUIET = 1.0


class PrefixWarmup:
    """Prefills one agent's stable prefix on its engine, in the background."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry: ConfigEntry,
        name: str,
        render: Callable[[bool], Awaitable[Prefix | None]],
        engine: Callable[[], Engine],
    ) -> None:
        self.hass = hass
        self.entry = entry
        self.name = name
        self._render = render
        self._engine = engine
        self._started = False
        self._again = False
        # The home's structure changed since the last render (at first: never rendered).
        self._structure_changed = True
        self._cancel_timer: CALLBACK_TYPE | None = None
        self._task: asyncio.Task[None] | None = None
        # What the engine holds now, as far as this agent knows (the prefix with its states
        # block, and the stable part alone), and its length in tokens.
        self.prefilled: str | None = None
        self._stable: str | None = None
        self._prefilled_tokens = 0
        # The devices whose state changes refresh the block, and the stop of that listener.
        self._shown: frozenset[str] = frozenset()
        self._unsubscribe_states: CALLBACK_TYPE | None = None
        # Prefilled again after a loss: if the next request does not reuse it either, the
        # engine does not keep prefixes (or does not say so), and asking again is useless.
        self._recovering = False
        self._job = HassJob(self._async_timer_fired, f"BotPsy prefix refresh {name}", cancel_on_shutdown=True)

    @property
    def idle(self) -> bool:
        """No refresh pending or running (for tools that measure requests on a settled engine)."""
        return self._cancel_timer is None and (self._task is None or self._task.done())

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Warm up once HA has started; refresh on structural changes. Returns the stop."""
        unsubscribes = [
            async_at_started(self.hass, self._async_hass_started),
            self.hass.bus.async_listen(er.EVENT_ENTITY_REGISTRY_UPDATED, self._async_home_changed),
            self.hass.bus.async_listen(dr.EVENT_DEVICE_REGISTRY_UPDATED, self._async_home_changed),
            self.hass.bus.async_listen(ar.EVENT_AREA_REGISTRY_UPDATED, self._async_home_changed),
            async_track_utc_time_change(self.hass, self._async_minute, second=0),
        ]
        if DATA_EXPOSED_ENTITIES in self.hass.data:
            unsubscribes.append(
                async_listen_entity_updates(self.hass, conversation.DOMAIN, self._async_exposure_changed)
            )

        @callback
        def stop() -> None:
            for unsubscribe in unsubscribes:
                unsubscribe()
            self._track_states(frozenset())
            if self._cancel_timer is not None:
                self._cancel_timer()
                self._cancel_timer = None
            if self._task is not None:
                self._task.cancel()

        return stop

    @callback
    def _async_hass_started(self, _hass: HomeAssistant) -> None:
        self._started = True
        self.async_schedule()

    @callback
    def _async_home_changed(self, _event: Event[Any]) -> None:
        self._recovering = False
        self._structure_changed = True
        self.async_schedule()

    @callback
    def _async_exposure_changed(self) -> None:
        self._recovering = False
        self._structure_changed = True
        self.async_schedule()

    @callback
    def _async_state_changed(self, _event: Event[EventStateChangedData]) -> None:
        self.async_schedule(STATES_DELAY, debounce=False)

    @callback
    def _async_minute(self, _now: datetime) -> None:
        if self.prefilled is not None:  # only a block in use follows the clock
            self.async_schedule(STATES_DELAY, debounce=False)

    @callback
    def async_block_changed(self) -> None:
        """The block shows other devices now (a bigger home's working set moved)."""
        self.async_schedule(STATES_DELAY, debounce=False)

    @callback
    def _track_states(self, entity_ids: frozenset[str]) -> None:
        if entity_ids == self._shown:
            return
        if self._unsubscribe_states is not None:
            self._unsubscribe_states()
            self._unsubscribe_states = None
        self._shown = entity_ids
        if entity_ids:
            self._unsubscribe_states = async_track_state_change_event(self.hass, entity_ids, self._async_state_changed)

    @callback
    def async_served(self, prompt: str, timings: Timings) -> None:
        """A request's figures: warm up again if it started with the prefix but did not reuse it."""
        if self.prefilled is None or not prompt.startswith(self.prefilled):
            return
        if timings.cached_tokens >= self._prefilled_tokens:
            self._recovering = False
            return
        if self._recovering:
            return
        LOGGER.debug("The engine lost the prompt prefix of %s; prefilling it again", self.name)
        self._recovering = True
        self.prefilled = self._stable = None
        self.async_schedule()

    @callback
    def async_prefill_conversation(self, prefix: str) -> None:
        """Prefill what a conversation's next turn starts with (its history), in the
        background after a quiet moment: a request that comes first interrupts it."""
        self.entry.async_create_background_task(
            self.hass, self._async_prefill_conversation(prefix), f"BotPsy conversation warm-up {self.name}"
        )

    async def _async_prefill_conversation(self, prefix: str) -> None:
        try:
            await self._engine().async_prefill(prefix, CONVERSATION_QUIET)
        except PrefillInterruptedError:
            LOGGER.debug("A request went before the conversation warm-up of %s", self.name)
        except EngineError as err:
            LOGGER.debug("Prefilling a conversation of %s failed: %s", self.name, err)

    @callback
    def async_schedule(self, delay: float = REFRESH_DELAY, *, debounce: bool = True) -> None:
        """Refresh after `delay` without another change (nothing before HA started); without
        `debounce`, a refresh already pending is not postponed."""
        if not self._started or (self._cancel_timer is not None and not debounce):
            return
        if self._cancel_timer is not None:
            self._cancel_timer()
        self._cancel_timer = async_call_later(self.hass, delay, self._job)

    @callback
    def _async_timer_fired(self, _now: datetime) -> None:
        self._cancel_timer = None
        if self._task is not None and not self._task.done():
            self._again = True  # the running refresh renders once more when done
            return
        self._task = self.entry.async_create_background_task(
            self.hass, self._async_refresh(), f"BotPsy prefix warm-up {self.name}"
        )

    async def _async_refresh(self) -> None:
        while True:
            self._again = False
            structure_changed, self._structure_changed = self._structure_changed, False
            try:
                prefix = await self._render(structure_changed)
            except (HomeAssistantError, EngineError) as err:
                self._structure_changed = True
                LOGGER.debug("No prompt prefix for %s: %s", self.name, err)
                return
            self._track_states(prefix.entity_ids if prefix is not None else frozenset())
            if prefix is not None and prefix.with_states != self.prefilled:
                await self._async_prefill_prefix(prefix)
            if not self._again:
                return

    async def _async_prefill_prefix(self, prefix: Prefix) -> None:
        """The stable part first, if it changed (its state is where a recurrent model
        starts the next block), then the states block on it."""
        if prefix.stable != self._stable:
            if not await self._async_prefill(prefix.stable, "stable part"):
                return
            self._stable = prefix.stable
        if await self._async_prefill(prefix.with_states, "states block"):
            self.prefilled = prefix.with_states

    async def _async_prefill(self, prefix: str, part: str) -> bool:
        """Prefill `prefix`; whether it is in the engine now."""
        started = time.monotonic()
        self.prefilled = None
        try:
            timings = await self._engine().async_prefill(prefix)
        except PrefillInterruptedError:
            # A request went first; warm up again once things are quiet.
            self._stable = None
            self.async_schedule(STATES_DELAY, debounce=False)
            return False
        except EngineError as err:
            self._stable = None
            LOGGER.debug("Prefilling the prompt prefix of %s failed: %s", self.name, err)
            return False
        self._prefilled_tokens = timings.prompt_tokens
        LOGGER.debug(
            "Prefilled the prompt prefix of %s to its %s (%d characters, %d tokens, %d evaluated) in %.2f s",
            self.name,
            part,
            len(prefix),
            timings.prompt_tokens,
            timings.evaluated_tokens,
            time.monotonic() - started,
        )
        return True
