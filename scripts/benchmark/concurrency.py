"""Several requests at once: four conversations asking together, beside each asked alone.

A home with three satellites and an automation asking at the same moment is ordinary. The
figure is how long the last of them waits for its answer (`last_of_4_s`) against a single
request (`single_s`, the median of the same requests asked one at a time, each on a quiet
engine), and the output tokens per second of the engine over the four against one alone.

The requests are worded so that Home Assistant's own sentences do not read them: each
needs the model (`model_share` says how many did), on a different device of the demo home,
in one generation round (`rounds_alone`: a request that takes three rounds alone is the
last of any four, however they are decoded).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from .e2e import AgentBench, Sample
from .probe import Generation

# (request, entity, state it ends in).
REQUESTS: tuple[tuple[str, str, str], ...] = (
    ("it's far too bright in the kitchen, could you switch that light off", "light.kitchen", "off"),
    ("I'd love a coffee, could you switch the coffee machine on for me", "switch.coffee_machine", "on"),
    ("the sun is in my eyes in the bedroom, lower the blinds", "cover.bedroom_blinds", "closed"),
    ("nobody is in the living room any more, its light can go off", "light.living_room", "off"),
)
AT_ONCE = len(REQUESTS)


def _output_tokens(generations: list[Generation]) -> int:
    return sum(g.sampled_tokens + g.forced_tokens for g in generations)


def _right(bench: AgentBench, sample: Sample, entity_id: str, state: str) -> bool:
    found = bench.hass.states.get(entity_id)
    return sample.error is None and found is not None and found.state == state


async def _fresh(bench: AgentBench) -> None:
    await bench.async_reset()
    await bench.async_quiet()


async def async_concurrency(bench: AgentBench, runs: int) -> dict[str, Any]:
    """Per run: each request alone (the home reset before each), then all four together."""
    assert bench.recorder is not None
    singles: list[float] = []
    lasts: list[float] = []
    alone_rates: list[float] = []
    together_rates: list[float] = []
    right = total = reached_model = 0
    rounds: list[int] = []
    for _run in range(runs):
        for text, entity_id, state in REQUESTS:
            await _fresh(bench)
            sample = await bench.async_ask(text)
            singles.append(sample.latency_s)
            total += 1
            right += _right(bench, sample, entity_id, state)
            reached_model += bool(sample.generations)
            rounds.append(len(sample.generations))
            if sample.generations and sample.latency_s > 0:
                alone_rates.append(_output_tokens(sample.generations) / sample.latency_s)
        await _fresh(bench)
        count = len(bench.recorder.generations)
        started = time.perf_counter()
        samples = await asyncio.gather(*(bench.async_ask(text) for text, _entity, _state in REQUESTS))
        last = max(s.ended for s in samples) - started
        lasts.append(last)
        together = bench.recorder.since(count)
        together_rates.append(_output_tokens(together) / last if last > 0 else 0.0)
        for sample, (_text, entity_id, state) in zip(samples, REQUESTS, strict=True):
            total += 1
            right += _right(bench, sample, entity_id, state)
        reached_model += sum(bool(s.generations) for s in samples)
    single = statistics.median(singles)
    last_of_4 = statistics.median(lasts)
    return {
        "single_s": round(single, 4),
        "slowest_alone_s": round(max(singles), 4),
        "rounds_alone": max(rounds),
        "last_of_4_s": round(last_of_4, 4),
        "ratio": round(last_of_4 / single, 3) if single else None,
        "tokens_per_s_alone": round(statistics.median(alone_rates), 1) if alone_rates else None,
        "tokens_per_s_together": round(statistics.median(together_rates), 1),
        "model_share": round(reached_model / total, 3) if total else None,
        "right": f"{right}/{total}",
        "engine_slots": getattr(bench.engine, "slots", 1),
    }
