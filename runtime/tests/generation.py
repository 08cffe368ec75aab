"""Run one generation to its end: the text and the Finished event."""

from __future__ import annotations

from botpsy_runtime.engine import Engine, Finished, GenerateRequest, TextDelta


async def run(engine: Engine, request: GenerateRequest) -> tuple[str, Finished]:
    text = ""
    async for event in engine.generate(request):
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, Finished):
            return text, event
    raise AssertionError("no Finished event")
