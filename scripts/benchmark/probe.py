"""Instruments of the benchmark, kept out of the integration.

`Recorder` wraps one engine object's `generate` (and its chat template's `render`) to keep
every generation's request, messages, text, timings and clock times; `StallProbe` measures
how late a 5 ms sleep on the event loop wakes up, and which of Python's garbage
collections ran meanwhile; `Execution` times the service call a request makes until the
state it changes is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
import contextlib
from dataclasses import dataclass, field, replace
import gc
import time
from typing import Any

from homeassistant.const import EVENT_CALL_SERVICE, EVENT_STATE_CHANGED
from homeassistant.core import Event, HomeAssistant, callback

from botpsy_runtime.engine import Engine, Finished, GenerateEvent, GenerateRequest, TextDelta, Timings
from scripts.evaluation.agents import PASSIVE_DOMAINS


@dataclass(slots=True)
class Generation:
    """One call of the engine's `generate`, as the integration made it."""

    request: GenerateRequest
    messages: list[dict[str, Any]] | None
    called_at: float
    first_event_at: float | None = None
    ended_at: float | None = None
    text: str = ""
    timings: Timings = field(default_factory=Timings)
    # What the agent's warm-up had prefilled when the request was asked (its cached prefix).
    cached_prefix: str | None = None

    @property
    def grammar_bytes(self) -> int:
        return len((self.request.grammar or "").encode())

    @property
    def forced_tokens(self) -> int:
        """Output tokens the grammar appended without sampling (engines that report them)."""
        return int(getattr(self.timings, "forced_tokens", 0) or 0)

    @property
    def sampled_tokens(self) -> int:
        """Output tokens the model sampled (`Timings.decoded_tokens` excludes forced ones)."""
        return self.timings.decoded_tokens

    @property
    def grammar_seconds(self) -> float | None:
        """Part of the decoding time spent on the grammar (engines that report it)."""
        value = getattr(self.timings, "grammar_seconds", None)
        return float(value) if value else None

    @property
    def user_content(self) -> str | None:
        """The last user message as the integration rendered it (device lines included)."""
        users = [m for m in self.messages or [] if m.get("role") == "user"]
        content = users[-1].get("content") if users else None
        return content if isinstance(content, str) else None


# The agent's first-round grammar lets the model answer in text or call; forcing keeps the calls.
TEXT_OR_CALLS = "root ::= answer | calls"
CALLS_ONLY = "root ::= calls"


class Recorder:
    """Keeps every generation of one engine object (wrap it again after a reload).

    With `force_call`, the first generation after `arm()` may only call a tool: a base
    model never chooses to, and the bench measures the path of a request that does (a
    tool-tuned model's choice). Everything after the grammar is the integration's own:
    parsing, validation, execution, the reply.
    """

    def __init__(self, engine: Engine, *, force_call: bool = False) -> None:
        self.engine = engine
        self.force_call = force_call
        self._armed = False
        self.generations: list[Generation] = []
        # Rendered prompt -> the messages it was rendered from (the last few renders).
        self._rendered: dict[str, list[dict[str, Any]]] = {}
        generate = engine.generate
        template = engine.chat_template
        if template is not None:
            render = template.render

            def recording_render(messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> str:
                prompt = render(messages, *args, **kwargs)
                self._rendered[prompt] = [dict(m) for m in messages]
                while len(self._rendered) > 8:
                    del self._rendered[next(iter(self._rendered))]
                return prompt

            template.render = recording_render  # type: ignore[method-assign]

        async def recording_generate(request: GenerateRequest) -> AsyncIterator[GenerateEvent]:
            messages = self._rendered.get(request.prompt or "") or request.messages
            if self._armed and request.grammar and request.grammar.startswith(TEXT_OR_CALLS):
                request = replace(request, grammar=CALLS_ONLY + request.grammar.removeprefix(TEXT_OR_CALLS))
            self._armed = False
            record = Generation(request, messages, time.perf_counter())
            self.generations.append(record)
            async for event in generate(request):
                record.first_event_at = record.first_event_at or time.perf_counter()
                if isinstance(event, TextDelta):
                    record.text += event.text
                elif isinstance(event, Finished):
                    record.timings = event.timings
                    record.ended_at = time.perf_counter()
                yield event

        engine.generate = recording_generate  # type: ignore[method-assign]

    def arm(self) -> None:
        """The next generation starts a request (forced to call if `force_call`)."""
        self._armed = self.force_call

    def since(self, count: int) -> list[Generation]:
        return self.generations[count:]


class StallProbe:
    """While running, sleeps 5 ms in a loop on the event loop and keeps the largest lateness.

    Python's cyclic garbage collector stops the whole process, the event loop included; a
    full collection of a Home Assistant with 1,000 entities takes ~150 ms on a 2-core
    machine. The harness makes garbage of its own (resetting a home rewrites every state),
    so it collects before the probe starts: a collection the harness owed does not land in
    the measured request, while one that the request's own allocations bring on still
    counts in its lateness. The collections that ran while probing are kept
    (`collections`: generation and milliseconds), so a stall they caused is told apart.
    """

    def __init__(self, period_s: float = 0.005) -> None:
        self.period_s = period_s
        self.max_late_s = 0.0
        self.collections: list[tuple[int, float]] = []
        self._task: asyncio.Task[None] | None = None
        self._gc_started = 0.0

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(self.period_s)
            self.max_late_s = max(self.max_late_s, time.perf_counter() - started - self.period_s)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.collections.append((int(info["generation"]), 1000 * (time.perf_counter() - self._gc_started)))

    async def __aenter__(self) -> StallProbe:
        self.max_late_s = 0.0
        self.collections = []
        gc.collect()
        gc.callbacks.append(self._on_gc)
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)  # running before the measured request starts
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        gc.callbacks.remove(self._on_gc)

    @property
    def worst_collection_ms(self) -> float:
        """The longest collection while probing (0 if none ran)."""
        return max((ms for _generation, ms in self.collections), default=0.0)


@dataclass(slots=True)
class Execution:
    """When the first service call on the home started, and when a home state changed after it."""

    hass: HomeAssistant
    home_entities: frozenset[str]
    call_at: float | None = None
    changed_at: float | None = None
    calls: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    _unsubs: list[Callable[[], None]] = field(default_factory=list)

    def __enter__(self) -> Execution:
        self._unsubs = [
            self.hass.bus.async_listen(EVENT_CALL_SERVICE, self._on_call),
            self.hass.bus.async_listen(EVENT_STATE_CHANGED, self._on_state),
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for unsub in self._unsubs:
            unsub()

    @callback
    def _on_call(self, event: Event[Any]) -> None:
        if event.data["domain"] in PASSIVE_DOMAINS:
            return
        self.calls.append(f"{event.data['domain']}.{event.data['service']}")
        self.call_at = self.call_at or time.perf_counter()

    @callback
    def _on_state(self, event: Event[Any]) -> None:
        if self.call_at is None or event.data["entity_id"] not in self.home_entities:
            return
        self.changed.append(event.data["entity_id"])
        self.changed_at = self.changed_at or time.perf_counter()
