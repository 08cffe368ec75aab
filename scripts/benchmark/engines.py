"""Engine-level figures (no Home Assistant): prefill and decode rates, embedded vs llama-server.

Every figure comes from the engines' own timings, with the same model, prompt and grammar;
medians over the runs. Kept from the first benchmark: they locate a slowdown below the
integration.
"""

from __future__ import annotations

from collections.abc import Callable
import statistics
import time
from typing import Any

import aiohttp

from botpsy_runtime.embedded import EmbeddedEngine, EmbeddedOptions
from botpsy_runtime.engine import Engine, Finished, GenerateRequest, Timings
from botpsy_runtime.remote import RemoteEngine, RemoteOptions

from .server import LlamaServer

ROOMS = ["kitchen", "living room", "bedroom", "office", "hallway", "garage", "bathroom", "porch"]
# A call like the integration's: 37 tokens, a handful of them real choices.
CALL_GRAMMAR = (
    'root ::= "<tool_call>{\\"name\\": \\"light.turn_off\\", '
    '\\"entity_id\\": \\"light.room_" [0-9] [0-9]? "\\"}</tool_call>"'
)
PROMPT_LINES = 70


def system_prompt(n_lines: int) -> str:
    """A stable prefix like a home's device list: roughly 10 tokens per line."""
    lines = [f"light.room_{i} '{ROOMS[i % len(ROOMS)]} light {i}' = off" for i in range(n_lines)]
    return "You control this home. Devices:\n" + "\n".join(lines)


def messages(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def run(engine: Engine, request: GenerateRequest) -> tuple[str, Timings]:
    text = ""
    async for event in engine.generate(request):
        if isinstance(event, Finished):
            return text, event.timings
        text += getattr(event, "text", "")
    raise RuntimeError("no Finished event")


def output_tokens(t: Timings) -> int:
    """Sampled and grammar-forced tokens together (`decoded_tokens` counts sampled ones only)."""
    return t.decoded_tokens + int(getattr(t, "forced_tokens", 0) or 0)


def rates(t: Timings) -> dict[str, float]:
    return {
        "prefill_tokens_per_s": t.evaluated_tokens / t.prompt_seconds if t.prompt_seconds else 0.0,
        "decode_tokens_per_s": output_tokens(t) / t.decode_seconds if t.decode_seconds else 0.0,
    }


async def measure(engine: Engine, runs: int, prompt_lines: int = PROMPT_LINES) -> dict[str, Any]:
    template = engine.chat_template
    assert template is not None
    system = system_prompt(prompt_lines)
    cold_prompt = template.render(messages(system, "Turn off the light in room 7."))
    result: dict[str, Any] = {"prompt_tokens": await engine.async_count_tokens(cold_prompt)}
    cold: list[Timings] = []
    warm: list[Timings] = []
    free: list[Timings] = []
    constrained: list[Timings] = []
    for i in range(runs):
        # Cold: a prompt never seen (the salt changes its first line).
        salt = f"Run {i}-{time.monotonic()}.\n"
        salted = template.render(messages(salt + system, "Turn off the light in room 7."))
        cold.append((await run(engine, GenerateRequest(prompt=salted, max_tokens=1, temperature=0)))[1])
        # Warm: same prefix, a new user turn.
        warm_prompt = template.render(messages(salt + system, "x"))
        await run(engine, GenerateRequest(prompt=warm_prompt, max_tokens=1, temperature=0))
        warm_prompt = warm_prompt.replace("\nx", f"\nTurn off the light in room {i}.")
        warm.append((await run(engine, GenerateRequest(prompt=warm_prompt, max_tokens=1, temperature=0)))[1])
        free.append((await run(engine, GenerateRequest(prompt=cold_prompt, max_tokens=64, temperature=0.8, seed=i)))[1])
        request = GenerateRequest(prompt=cold_prompt, grammar=CALL_GRAMMAR, max_tokens=64, temperature=0.8, seed=i)
        constrained.append((await run(engine, request))[1])

    def median(values: list[Timings], key: Callable[[Timings], float]) -> float:
        return round(statistics.median(key(t) for t in values), 4)

    return result | {
        "cold_prefill_tokens_per_s": median(cold, lambda t: rates(t)["prefill_tokens_per_s"]),
        "cold_first_token_s": median(cold, lambda t: t.prompt_seconds),
        "warm_first_token_s": median(warm, lambda t: t.prompt_seconds),
        "warm_evaluated_tokens": median(warm, lambda t: t.evaluated_tokens),
        "warm_cached_tokens": median(warm, lambda t: t.cached_tokens),
        "decode_tokens_per_s": median(free, lambda t: rates(t)["decode_tokens_per_s"]),
        "constrained_decode_tokens_per_s": median(constrained, lambda t: rates(t)["decode_tokens_per_s"]),
        "constrained_call_tokens": median(constrained, output_tokens),
        "constrained_call_sampled_tokens": median(constrained, lambda t: t.decoded_tokens),
        "constrained_call_s": median(constrained, lambda t: t.decode_seconds),
    }


async def engine_figures(options: EmbeddedOptions, runs: int, server: LlamaServer | None) -> dict[str, Any]:
    """`measure` on the embedded engine and, given a running server, on llama-server."""
    embedded = EmbeddedEngine(options)
    started = time.monotonic()
    await embedded.async_load()
    try:
        figures: dict[str, Any] = {
            "embedded": {
                "load_s": round(time.monotonic() - started, 3),
                **await measure(embedded, runs),
                "worker_rss_mb": round((embedded.worker_rss_bytes() or 0) / 2**20, 1),
            }
        }
    finally:
        await embedded.async_unload()
    if server is not None:
        async with aiohttp.ClientSession() as session:
            remote = RemoteEngine(RemoteOptions(server.url), session)
            await remote.async_load()
            figures["llama_server"] = await measure(remote, runs)
    return figures
