"""End-to-end figures: requests through a real Home Assistant to BotPsy's conversation entity.

The home and the agent come from the evaluation harness (scripts/evaluation): a real HA
from `eval_hass`, a fixture home from `async_load_home`, BotPsy's agent from
`async_botpsy_agent`, asked through `conversation.async_converse` directly (timed around that call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
import statistics
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, intent
from homeassistant.helpers.entity_component import DATA_INSTANCES

from botpsy_runtime.engine import Engine
from botpsy_runtime.gguf_metadata import GGUFMetadata
from custom_components.botpsy.const import CONF_PREFER_LOCAL_INTENTS
from scripts.evaluation.agents import Agent
from scripts.evaluation.fixtures import HomeFixture

from .probe import Execution, Generation, Recorder, StallProbe

REQUEST = "Turn off the kitchen light"
WARMUP_REQUEST = "Turn on the bedroom lamp"
EXPECT = ("light.kitchen", "off")
# Warm requests per run: one takes about half a second, and on a shared 2-core machine
# single ones vary by a third; warm figures (and the floor's) are medians of them all.
WARM_PER_RUN = 3


@dataclass(slots=True)
class Sample:
    """One request: its clock times, generations, service execution and event-loop lateness."""

    text: str
    started: float
    ended: float
    generations: list[Generation]
    execution: Execution
    ok: bool
    reply: str
    stall_ms: float | None = None
    gc_ms: float | None = None  # the longest garbage collection during the request
    error: str | None = None

    @property
    def latency_s(self) -> float:
        return self.ended - self.started

    @property
    def finished(self) -> bool:
        """The engine answered (a request the engine refused has no meaningful latency)."""
        return bool(self.generations) and self.generations[0].ended_at is not None

    @property
    def acted(self) -> bool:
        """A service call on the home ran (False: the model answered with text only)."""
        return self.execution.call_at is not None

    @property
    def first(self) -> Generation | None:
        return self.generations[0] if self.generations else None

    def breakdown(self) -> dict[str, float | int | None]:
        """Where the request's time went, in segments that add up to its latency."""
        gen = self.first
        if gen is None or gen.ended_at is None:
            return {"total_s": self.latency_s}
        t = gen.timings
        ex = self.execution
        engine_s = gen.ended_at - gen.called_at
        call_at = ex.call_at or self.ended
        changed_at = ex.changed_at or call_at
        return {
            "prompt_tokens": t.prompt_tokens,
            "prompt_tokens_evaluated": t.evaluated_tokens,
            "prompt_tokens_reused": t.cached_tokens,
            "output_tokens": gen.sampled_tokens + gen.forced_tokens,
            "decoded_tokens_sampled": gen.sampled_tokens,
            "decoded_tokens_forced": gen.forced_tokens,
            "grammar_s": gen.grammar_seconds,  # inside decode_s
            "grammar_bytes": gen.grammar_bytes,
            "generation_rounds": len(self.generations),
            # Segments, in order.
            "before_engine_s": gen.called_at - self.started,
            "prefill_s": t.prompt_seconds,
            "decode_s": t.decode_seconds,
            "engine_transport_s": max(0.0, engine_s - t.prompt_seconds - t.decode_seconds),
            "to_service_call_s": max(0.0, call_at - gen.ended_at),
            "ha_execution_s": changed_at - call_at if ex.call_at and ex.changed_at else None,
            "after_state_change_s": self.ended - changed_at,
            "total_s": self.latency_s,
        }


SEGMENTS = (
    "before_engine_s",
    "prefill_s",
    "decode_s",
    "engine_transport_s",
    "to_service_call_s",
    "ha_execution_s",
    "after_state_change_s",
)


@dataclass(slots=True)
class AgentBench:
    """BotPsy's agent on a loaded home, with its engine instrumented."""

    hass: HomeAssistant
    home: Any  # scripts.evaluation.home_loader.LoadedHome
    fixture: HomeFixture
    agent: Agent
    entry_id: str = ""
    recorder: Recorder | None = None
    home_entities: frozenset[str] = field(default_factory=frozenset)
    force_call: bool = False

    def __post_init__(self) -> None:
        entity = er.async_get(self.hass).async_get(self.agent.agent_id)
        assert entity is not None and entity.config_entry_id is not None
        self.entry_id = entity.config_entry_id
        self.home_entities = frozenset(e.entity_id for e in self.fixture.entities)
        self.recorder = Recorder(self.engine, force_call=self.force_call)

    @property
    def engine(self) -> Engine:
        entry = self.hass.config_entries.async_get_entry(self.entry_id)
        assert entry is not None
        return entry.runtime_data.engine  # type: ignore[no-any-return]

    @property
    def entry_data(self) -> dict[str, Any]:
        entry = self.hass.config_entries.async_get_entry(self.entry_id)
        assert entry is not None
        return dict(entry.data)

    async def async_reload(self) -> None:
        """Unload and load the entry: a new engine (worker), nothing cached."""
        await self.hass.config_entries.async_reload(self.entry_id)
        await self.hass.async_block_till_done()
        self.recorder = Recorder(self.engine, force_call=self.force_call)

    async def async_model_path_only(self) -> None:
        """Every request goes to the model: HA's own sentences (prefer handling commands
        locally, on by default) would answer the bench's requests without it, and then
        there is nothing to set beside the engine's floor. The mix keeps the default."""
        entry = self.hass.config_entries.async_get_entry(self.entry_id)
        assert entry is not None
        for subentry in entry.subentries.values():
            if subentry.subentry_type == "conversation":
                data = {**subentry.data, CONF_PREFER_LOCAL_INTENTS: False}
                self.hass.config_entries.async_update_subentry(entry, subentry, data=data)
        await self.hass.async_block_till_done()  # the entry's update listener reloads it
        await self.async_reload()

    async def async_remove(self) -> None:
        await self.hass.config_entries.async_remove(self.entry_id)
        await self.hass.async_block_till_done()

    async def async_reset(self) -> None:
        await self.home.async_reset()
        await self.hass.async_block_till_done()

    async def async_ask(
        self,
        text: str,
        *,
        expect: tuple[str, str] | None = None,
        probe: bool = False,
        conversation_id: str | None = None,
    ) -> Sample:
        """`text` in a new conversation, or as the next turn of `conversation_id`."""
        assert self.recorder is not None
        count = len(self.recorder.generations)
        self.recorder.arm()
        conversation_id = conversation_id or f"bench-{time.monotonic_ns()}"
        warmup = getattr(self.entity, "warmup", None)
        cached_prefix = warmup.prefilled if warmup is not None else None
        stall = StallProbe()
        with Execution(self.hass, self.home_entities) as execution:
            if probe:
                await stall.__aenter__()
            started = time.perf_counter()
            try:
                result = await conversation.async_converse(
                    self.hass, text, conversation_id, Context(), language="en", agent_id=self.agent.agent_id
                )
            finally:
                ended = time.perf_counter()
                if probe:
                    await stall.__aexit__()
        response = result.response
        reply = str(response.speech.get("plain", {}).get("speech", ""))
        error = reply if response.response_type == intent.IntentResponseType.ERROR else None
        ok = error is None
        if expect is not None:
            state = self.hass.states.get(expect[0])
            ok = ok and state is not None and state.state == expect[1]
        await self.hass.async_block_till_done()
        generations = self.recorder.since(count)
        for generation in generations:
            generation.cached_prefix = cached_prefix
        return Sample(
            text,
            started,
            ended,
            generations,
            execution,
            ok,
            reply,
            stall_ms=1000 * stall.max_late_s if probe else None,
            gc_ms=stall.worst_collection_ms if probe else None,
            error=error,
        )

    @property
    def entity(self) -> Any:
        """BotPsy's conversation entity object."""
        component = self.hass.data[DATA_INSTANCES]["conversation"]
        return component.get_entity(self.agent.agent_id)

    async def async_quiet(self, timeout_s: float = 900.0) -> float:
        """Wait until the agent's background prefix warm-up is neither pending nor running.

        A refresh scheduled by the home's loading (or a reload) would otherwise take the
        engine in the middle of a measured request. Returns the seconds waited.
        """
        warmup = getattr(self.entity, "warmup", None)
        started = time.perf_counter()
        while warmup is not None and not warmup.idle and time.perf_counter() - started < timeout_s:  # noqa: ASYNC110
            await asyncio.sleep(0.1)  # polling its state is all it offers
        return time.perf_counter() - started

    async def async_count(self, text: str) -> int:
        return await self.engine.async_count_tokens(text)

    async def async_user_turn_start(self, gen: Generation, utterance: str) -> int:
        """Where the cached prefix ends in the prompt: what the agent's warm-up had
        prefilled when the request was asked (its stable part and states block) if the
        prompt starts with it, else the start of the last user message."""
        prompt = gen.request.prompt or ""
        prefix = gen.cached_prefix
        if prefix and prompt.startswith(prefix):
            return len(prefix)
        return user_turn_start(gen, utterance)

    async def async_user_turn_tokens(self, gen: Generation, utterance: str) -> tuple[int, int]:
        """Tokens of the prompt from the user's turn on, and of the utterance alone."""
        prompt = gen.request.prompt or ""
        start = await self.async_user_turn_start(gen, utterance)
        count = self.engine.async_count_tokens
        empty = await count("")
        return await count(prompt) - await count(prompt[:start]), await count(utterance) - empty

    async def async_memory(self, meta: GGUFMetadata, n_ctx: int) -> dict[str, Any]:
        """The worker's resident memory beside what the model needs (its file, mapped, and
        its KV cache at `n_ctx` cells), and the part the kept state snapshots take."""
        snapshots = getattr(self.engine, "async_snapshot_memory", None)
        held = (await snapshots()).get("snapshot_bytes") if snapshots else None
        rss, kv_cache = self.rss_mb(), meta.kv_cache_bytes(n_ctx)
        needed = (meta.file_size + kv_cache) / 2**20
        return {
            "rss_mb": rss,
            "gguf_mb": round(meta.file_size / 2**20, 1),
            "kv_cache_mb": round(kv_cache / 2**20, 1),
            "snapshot_mb": round(held / 2**20, 1) if held is not None else None,
            "rss_over_gguf_kv": round(rss / needed, 3) if rss else None,
        }

    def rss_mb(self) -> float | None:
        rss = getattr(self.engine, "worker_rss_bytes", None)
        value = rss() if rss else None
        return round(value / 2**20, 1) if value else None


def user_turn_start(gen: Generation, utterance: str) -> int:
    """Where the user's turn (its device lines, then the words) begins in the prompt: the
    last user message as rendered, else the utterance's last occurrence."""
    prompt = gen.request.prompt or ""
    content = gen.user_content
    for needle in (content, content.strip() if content else None, utterance):
        if needle and (at := prompt.rfind(needle)) >= 0:
            return at
    return len(prompt)


def median(values: Sequence[float | int | None], digits: int = 4) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), digits) if present else None


def _outcomes(samples: Sequence[Sample]) -> dict[str, Any]:
    """How the requests ended: expected state reached, a service ran, engine errors."""
    errors = [s.error for s in samples if s.error]
    return {
        "ok": f"{sum(s.ok for s in samples)}/{len(samples)}",
        "acted": f"{sum(s.acted for s in samples)}/{len(samples)}",
        "errors": errors[:3],
    }


def _finished(samples: Sequence[Sample]) -> list[Sample]:
    return [s for s in samples if s.finished]


async def async_measure_requests(
    bench: AgentBench,
    runs: int,
    restart: Callable[[], Awaitable[None]],
    *,
    cold: bool = True,
    after_run: Callable[[list[Sample]], Awaitable[None]] | None = None,
) -> tuple[dict[str, Any], list[Sample]]:
    """Cold and warm end-to-end latency of REQUEST on the demo home, medians of `runs`
    (WARM_PER_RUN warm requests each).

    Cold: the first request after the engine loaded (the entry is reloaded, or the server
    restarted, before every run after the first). Warm: the same request right after a
    different one (WARMUP_REQUEST) warmed the cache. The home is reset before each.
    `after_run` is awaited after each run with the warm requests so far (the floor is
    measured there, between runs).
    """
    colds: list[Sample] = []
    warms: list[Sample] = []
    for i in range(runs):
        if cold:
            if i:
                await restart()
            await bench.async_reset()
            colds.append(await bench.async_ask(REQUEST, expect=EXPECT))
        warms += [await _async_warm(bench, REQUEST, WARMUP_REQUEST, EXPECT) for _ in range(WARM_PER_RUN)]
        if after_run is not None:
            await after_run(warms)
    result = _warm_figures(warms)
    if colds:
        cold_outcome = _outcomes(colds)
        result |= {
            "cold_latency_s": median([s.latency_s for s in _finished(colds)]),
            "cold_prompt_tokens_evaluated": median(
                [s.first.timings.evaluated_tokens for s in _finished(colds) if s.first], 1
            ),
            "cold_ok": cold_outcome["ok"],
            "cold_acted": cold_outcome["acted"],
            "cold_errors": cold_outcome["errors"],
        }
    warms = _finished(warms)
    firsts = [s.first for s in warms if s.first]
    result["prompt_tokens_warm"] = result.pop("prompt_tokens")
    result |= {
        "decoded_tokens_constrained": median([g.sampled_tokens for g in firsts], 1),
        "decoded_tokens_forced": median([g.forced_tokens for g in firsts], 1),
        "breakdown": {
            key: median([s.breakdown().get(key) for s in warms], 4)  # type: ignore[misc]
            for key in (warms[-1].breakdown() if warms else {})
        },
        "call_text": firsts[-1].text if firsts else "",
        "reply": warms[-1].reply if warms else "",
    }
    if firsts:
        user_turn, words = await bench.async_user_turn_tokens(firsts[-1], REQUEST)
        result |= {"user_turn_tokens": user_turn, "user_words_tokens": words}
        if result["call_text"]:
            call_tokens = await bench.async_count(result["call_text"]) - await bench.async_count("")
            result["decoded_tokens_unconstrained"] = call_tokens
    return result, warms


# A conversation's second turn: a follow-up about what the first acted on, worded anew
# each time (a repeated one would find its own earlier evaluation kept).
# Follow-ups the model answers: HA's sentences read "switch it on again" with the light said
# by its name (done without the model, see `request`), not these.
FOLLOW_UPS = ("Turn it back on", "Switch it back on", "Put that light on again", "Bring it back on", "Back on please")
FOLLOW_UP_EXPECT = ("light.kitchen", "on")


async def async_follow_ups(bench: AgentBench, runs: int) -> dict[str, Any]:
    """REQUEST, then a follow-up (FOLLOW_UPS) in the same conversation, WARM_PER_RUN times per run: the
    follow-up extends its conversation's cached prompt, so it evaluates about its own
    words, and takes no longer than the first turn."""
    firsts: list[Sample] = []
    seconds: list[Sample] = []
    for number in range(runs * WARM_PER_RUN):
        follow_up = FOLLOW_UPS[number % len(FOLLOW_UPS)]
        await bench.async_reset()
        await bench.async_quiet()
        conversation_id = f"bench-follow-up-{time.monotonic_ns()}"
        firsts.append(await bench.async_ask(REQUEST, expect=EXPECT, conversation_id=conversation_id))
        await bench.async_quiet()
        seconds.append(
            await bench.async_ask(follow_up, expect=FOLLOW_UP_EXPECT, conversation_id=conversation_id, probe=True)
        )
    done = [s for s in _finished(seconds) if s.first]
    words = median([await bench.async_count(s.text) - await bench.async_count("") for s in done], 1) or 0
    evaluated = median([s.first.timings.evaluated_tokens for s in done if s.first], 1)
    first_latency = median([s.latency_s for s in _finished(firsts)])
    latency = median([s.latency_s for s in done])
    return {
        "first_turn_latency_s": first_latency,
        "follow_up_latency_s": latency,
        "ratio_follow_up_to_first": round(latency / first_latency, 3) if latency and first_latency else None,
        "follow_up_prompt_tokens_evaluated": evaluated,
        "follow_up_words_tokens": words,
        "follow_up_evaluated_over_words": round(evaluated - words, 1) if evaluated is not None else None,
        "follow_up_ok": _outcomes(seconds)["ok"],
        "follow_up_reply": done[-1].reply if done else "",
        "follow_up_call_text": done[-1].first.text if done and done[-1].first else "",
        "follow_up_breakdown": {
            key: median([s.breakdown().get(key) for s in done], 4)  # type: ignore[misc]
            for key in (done[-1].breakdown() if done else {})
        },
        "event_loop_worst_stall_ms": round(max((s.stall_ms or 0.0) for s in done), 2) if done else None,
    }


async def async_warm_only(
    bench: AgentBench, runs: int, request: str, warmup: str, expect: tuple[str, str] | None
) -> tuple[dict[str, Any], list[Sample]]:
    """Warm figures only (scaling and prefix reuse): `warmup`, then `request`,
    WARM_PER_RUN times per run."""
    warms = [await _async_warm(bench, request, warmup, expect) for _ in range(runs * WARM_PER_RUN)]
    result = _warm_figures(warms)
    firsts = [s.first for s in _finished(warms) if s.first]
    if firsts:
        result["user_turn_tokens"], result["user_words_tokens"] = await bench.async_user_turn_tokens(
            firsts[-1], request
        )
    return result, _finished(warms)


async def _async_warm(bench: AgentBench, request: str, warmup: str, expect: tuple[str, str] | None) -> Sample:
    """`request` right after `warmup` warmed the cache; the home is reset before each."""
    await bench.async_reset()
    await bench.async_quiet()
    await bench.async_ask(warmup)
    await bench.async_reset()
    await bench.async_quiet()
    return await bench.async_ask(request, expect=expect, probe=True)


def _warm_figures(samples: list[Sample]) -> dict[str, Any]:
    """What every warm measurement reports: latency, outcomes, prompt and grammar sizes."""
    outcome = _outcomes(samples)
    warms = _finished(samples)
    firsts = [s.first for s in warms if s.first]
    return {
        "warm_latency_s": median([s.latency_s for s in warms]),
        "warm_ok": outcome["ok"],
        "warm_acted": outcome["acted"],
        "warm_errors": outcome["errors"],
        "prompt_tokens": median([g.timings.prompt_tokens for g in firsts], 1),
        "prompt_tokens_evaluated_warm": median([g.timings.evaluated_tokens for g in firsts], 1),
        "grammar_bytes": median([g.grammar_bytes for g in firsts], 1),
        "event_loop_max_stall_ms": median([s.stall_ms for s in warms], 2),
        "event_loop_worst_stall_ms": round(max((s.stall_ms or 0.0) for s in warms), 2) if warms else None,
        "warm_latencies_s": [round(s.latency_s, 4) for s in warms],
        "gc_worst_pause_ms": round(max((s.gc_ms or 0.0) for s in warms), 2) if warms else None,
    }
