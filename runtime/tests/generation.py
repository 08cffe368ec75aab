"""Run generations to their end: the text and the Finished event."""

from __future__ import annotations

import asyncio

from botpsy_runtime.engine import Engine, Finished, GenerateRequest, TextDelta


async def run(engine: Engine, request: GenerateRequest) -> tuple[str, Finished]:
    text = ""
    async for event in engine.generate(request):
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, Finished):
            return text, event
    raise AssertionError("no Finished event")


async def queued_behind(engine: Engine, first: GenerateRequest, second: GenerateRequest) -> tuple[float, float]:
    """How long each of two generations says it waited for the engine, the second sent
    while the first is half read (held 0.3 s more)."""
    events = engine.generate(first)
    await anext(events)
    waiting = asyncio.create_task(run(engine, second))
    await asyncio.sleep(0.3)
    finished = [event async for event in events if isinstance(event, Finished)]
    _text, later = await waiting
    return finished[0].timings.queued_seconds, later.timings.queued_seconds
