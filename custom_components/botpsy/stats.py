"""Figures of an engine's recent requests, for its sensors and diagnostics."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
import time
from typing import Any

from homeassistant.core import CALLBACK_TYPE, callback

from botpsy_runtime.engine import Timings

from .const import LOGGER

RECENT = 20


@dataclass(slots=True)
class EngineStats:
    """The figures of an entry's engine: the last request's, the count, the recent ones and the last error."""

    requests: int = 0
    last_latency_s: float | None = None
    last_decode_tokens_per_s: float | None = None
    last_prompt_reuse_pct: float | None = None
    last_error: str | None = None
    # Whether the last request failed: the log says so once, and once when one succeeds.
    failing: bool = False
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT))
    _listeners: list[Callable[[], None]] = field(default_factory=list)

    @callback
    def async_record(self, timings: Timings, latency_s: float) -> None:
        """Count a request that succeeded, with its figures."""
        if self.failing:
            self.failing = False
            LOGGER.info("The BotPsy engine serves requests again")
        self.requests += 1
        self.last_latency_s = round(latency_s, 3)
        if timings.decode_seconds > 0:
            # Forced (fast-forwarded) tokens are output too: they are part of the decode time.
            output = timings.decoded_tokens + timings.forced_tokens
            self.last_decode_tokens_per_s = round(output / timings.decode_seconds, 1)
        if timings.prompt_tokens:
            self.last_prompt_reuse_pct = round(100 * timings.cached_tokens / timings.prompt_tokens, 1)
        self.recent.append({"at": time.time(), "latency_s": self.last_latency_s, **timings.as_dict()})
        self._notify()

    @callback
    def async_record_error(self, error: str) -> None:
        """Record a failed request: logged as an error once, until a request succeeds again."""
        if not self.failing:
            self.failing = True
            LOGGER.error("The BotPsy engine failed a request: %s", error)
        else:
            LOGGER.debug("The BotPsy engine failed a request again: %s", error)
        self.last_error = error[:255]
        self._notify()

    @callback
    def async_add_listener(self, listener: Callable[[], None]) -> CALLBACK_TYPE:
        """Call `listener` after each new figure; returns the function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()
