"""Running a suite: each home in a fresh Home Assistant, each case on a reset home.

For every case: reset the home (fixture states + the case's `setup`), snapshot, send the
sentence to the agent (answering "yes" once to a confirmation question with `confirm`),
snapshot again, score. Intents cases first let HA handle the expected intent with its
slots on the same reset home: what that changes and targets is the expected outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
import statistics
import tempfile
import time
from typing import Any
from unittest.mock import patch

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant, State
from homeassistant.helpers import entity_registry as er, intent
from homeassistant.util import dt as dt_util

from .agents import Agent, ServiceCalls, Turn, async_botpsy_agent, async_builtin_agent
from .dataset import Case, HomeCases, Suite
from .fixtures import HomeFixture, home_from_mapping, in_area
from .home_loader import LoadedHome, async_load_home, eval_hass, snapshot
from .report import CaseResult
from .scoring import Expectation, Outcome, Snapshot, Verdict, diff, score_end_state, score_intent, score_target

CLOCK = datetime(2026, 1, 15, 18, 30, tzinfo=UTC)
# Entities that are the agents' own (BotPsy's sensors), not the home's.
AGENT_PLATFORMS = frozenset({"botpsy"})
AGENT_DOMAINS = frozenset({"conversation", "ai_task", "tts", "stt", "wake_word", "assist_satellite"})
# Attributes HA (2026.x) derives from the state alone, which the suites' HA did not report
# (covers' and valves' `is_closed`): comparing the state already covers them.
DERIVED_ATTRIBUTES = frozenset({"is_closed"})


@dataclass(slots=True)
class AgentSpec:
    """Which agent to evaluate and on what engine."""

    kind: str  # "botpsy" or "builtin"
    model: Path | None = None
    server: str | None = None
    # HA LLM APIs of BotPsy's conversation agent; None: those its subentry starts with.
    tools: tuple[str, ...] | None = None
    threads: int = 2
    confirm: bool = False
    timeout_s: float = 120.0


@dataclass(slots=True)
class _Run:
    verdict: Verdict
    outcome: Outcome
    turn: Turn | None
    latency_s: float
    expected_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _area_id(fixture: HomeFixture, ref: str | None) -> str | None:
    """An area by id or by name, as cases name it."""
    if not ref:
        return None
    for area in fixture.areas:
        if ref in (area.area_id, area.name) or ref.casefold() == area.name.casefold():
            return area.area_id
    return None


def target_entity(fixture: HomeFixture, case: Case) -> str:
    """The entity a device-actions group names: of the fixture's entities with that id
    (the loader renamed repeats), the one in the group's area."""
    same = [e for e in fixture.entities if case.target in (e.entity_id, e.source_id)]
    entity = in_area(same, _area_id(fixture, case.target_area))
    return entity.entity_id if entity else str(case.target)


def home_entities(hass: HomeAssistant) -> frozenset[str]:
    registry = er.async_get(hass)
    return frozenset(
        state.entity_id
        for state in hass.states.async_all()
        if state.domain not in AGENT_DOMAINS
        and not ((entry := registry.async_get(state.entity_id)) and entry.platform in AGENT_PLATFORMS)
    )


def restrict(values: dict[str, dict[str, Any]], entities: frozenset[str]) -> Snapshot:
    """The home's entities, each flattened to {"state": ..., attribute: ...} as the scorer compares them."""
    return {
        entity_id: {"state": value["state"]}
        | {k: v for k, v in value.get("attributes", {}).items() if k not in DERIVED_ATTRIBUTES}
        for entity_id, value in values.items()
        if entity_id in entities
    }


async def expected_intent(
    hass: HomeAssistant, home: LoadedHome, case: Case, device_id: str | None, entities: frozenset[str]
) -> tuple[Outcome, dict[str, Any]]:
    """What HA's own handling of the case's intent and slots does to the reset home.

    Intents suites test matching, not the home's states: when HA refuses only because
    the targets are not in a state the intent needs ("next track" on an idle player), the
    case's setup gets that state (for the agent's run too) and HA tries again. Returns
    the outcome and the setup used.
    """
    assert case.intent is not None
    setup: dict[str, Any] = {k: dict(v) for k, v in case.setup.items()}
    for attempt in range(2):
        await home.async_reset(setup)
        before = restrict(snapshot(hass), entities)
        slots = {name: {"value": value, "text": str(value)} for name, value in case.intent.slots.items()}
        error = None
        facts = ""
        with ServiceCalls(hass, entities) as service_calls:
            try:
                response = await intent.async_handle(
                    hass,
                    "botpsy_eval",
                    case.intent.name,
                    slots,
                    text_input=case.sentence,
                    context=Context(),
                    language=hass.config.language,
                    assistant=conversation.DOMAIN,
                    device_id=device_id,
                )
                if response.response_type == intent.IntentResponseType.ERROR:
                    error = str(response.error_code)
                facts = answer_facts(response.matched_states)
            except intent.MatchFailedError as err:
                error = f"{type(err).__name__}: {err}"
                primed = _primed(hass, err) if attempt == 0 else {}
                if primed:
                    setup |= primed
                    continue
            except intent.IntentError as err:
                error = f"{type(err).__name__}: {err}"
            await hass.async_block_till_done()
        break
    after = restrict(snapshot(hass), entities)
    changes = diff(before, after)
    # A question changes nothing: its answer is the facts of what it matched.
    return Outcome(changes, service_calls.targets, reply=facts if not changes else "", error=error), setup


def _primed(hass: HomeAssistant, err: intent.MatchFailedError) -> dict[str, Any]:
    """Setup that puts the would-be targets in the state the intent requires, if that was all that failed."""
    states = err.constraints.states
    if err.result.no_match_reason != intent.MatchFailedReason.STATE or not states:
        return {}
    relaxed = replace(err.constraints, states=None)
    match = intent.async_match_targets(hass, relaxed, err.preferences)
    wanted = sorted(states)[0]
    return {state.entity_id: {"state": wanted} for state in match.states} if match.is_match else {}


def answer_facts(states: Iterable[State]) -> str:
    """The values an answer about `states` must hold: each state, or a thermostat's
    current temperature."""
    return " ".join(
        str(s.attributes["current_temperature"])
        if s.domain == "climate" and s.attributes.get("current_temperature") is not None
        else s.state
        for s in states
    )


async def _ask(
    agent: Agent, spec: AgentSpec, case: Case, device_id: str | None, conversation_id: str
) -> tuple[Turn | None, float]:
    """The agent's answer (None: it timed out), confirming once if asked to and allowed
    (not in a conversation: its own turns say yes or no)."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(spec.timeout_s):
            turn = await agent.async_ask(case.sentence, conversation_id, device_id)
            if spec.confirm and turn.asks_back and case.turn is None:
                second = await agent.async_ask("yes", conversation_id, device_id)
                turn = Turn(
                    reply=f"{turn.reply} / {second.reply}",
                    asks_back=second.asks_back,
                    calls=turn.calls + second.calls,
                    prompt_tokens=turn.prompt_tokens + second.prompt_tokens,
                    decoded_tokens=turn.decoded_tokens + second.decoded_tokens,
                    error=second.error,
                )
    except TimeoutError:
        return None, time.perf_counter() - started
    return turn, time.perf_counter() - started


@dataclass(slots=True)
class _HomeRun:
    """One home's Home Assistant, its loaded fixture and the agent under test: what every case of the home runs on."""

    hass: HomeAssistant
    home: LoadedHome
    fixture: HomeFixture
    agent: Agent
    spec: AgentSpec

    async def async_run_case(self, case: Case, conversation_id: str) -> _Run:
        """One sentence in `conversation_id`; from the fixture's state and the case's setup,
        or, for a later turn of a conversation, from the state the turn before left."""
        hass, home, fixture = self.hass, self.home, self.fixture
        entities = home_entities(hass)
        area = _area_id(fixture, case.context_area)
        device_id = home.satellite_device(area) if area else None
        expected, setup = None, dict(case.setup)
        if case.intent:
            expected, setup = await expected_intent(hass, home, case, device_id, entities)
        if not case.follows:
            await home.async_reset(setup)
        before = restrict(snapshot(hass), entities)
        with ServiceCalls(hass, entities) as service_calls:
            turn, latency = await _ask(self.agent, self.spec, case, device_id, conversation_id)
            await hass.async_block_till_done()
        after = restrict(snapshot(hass), entities)
        outcome = Outcome(
            diff(before, after, case.ignore_changes),
            service_calls.targets,
            reply=turn.reply if turn else "",
            calls=turn.calls if turn else [],
            timed_out=turn is None,
            error=turn.error if turn else None,
        )
        if expected is not None:
            verdict = score_intent(expected, outcome)
        elif case.target:
            verdict = score_target(target_entity(fixture, case), outcome)
        else:
            expectation = Expectation(case.expect_changes, case.ignore_changes, case.expect_response, case.expect_facts)
            verdict = score_end_state(before, after, expectation, outcome)
        return _Run(verdict, outcome, turn, latency, expected.error if expected else None)


def _merge(case: Case, runs: list[_Run]) -> CaseResult:
    first = runs[0]
    turn = first.turn
    return CaseResult(
        id=case.id,
        home=case.home,
        category=case.category,
        group=case.group,
        sentence=case.sentence,
        passed=all(r.verdict.passed for r in runs),
        failure=next((str(r.verdict.failure) for r in runs if r.verdict.failure), None),
        detail=next((r.verdict.detail for r in runs if r.verdict.detail), ""),
        expected_changes=first.verdict.expected_changes,
        actual_changes=first.outcome.changes,
        calls=[asdict(c) for c in first.outcome.calls],
        reply=first.outcome.reply,
        latency_s=round(statistics.median(r.latency_s for r in runs), 3),
        prompt_tokens=turn.prompt_tokens if turn else 0,
        decoded_tokens=turn.decoded_tokens if turn else 0,
        runs=len(runs),
        passed_runs=sum(r.verdict.passed for r in runs),
        expected_error=first.expected_error,
        turn=case.turn,
    )


async def _make_agent(hass: HomeAssistant, spec: AgentSpec) -> Agent:
    if spec.kind == "builtin":
        return await async_builtin_agent(hass)
    return await async_botpsy_agent(hass, spec.model, spec.server, spec.threads, spec.tools)


async def async_run_home(
    home_cases: HomeCases, spec: AgentSpec, runs: int, progress: Callable[[CaseResult], None]
) -> list[CaseResult]:
    """All cases of one home, in a Home Assistant of its own."""
    fixture = home_from_mapping(home_cases.fixture)
    results = []
    # Prompts carry the clock: the same instant for every request makes runs agree.
    clock = lambda time_zone=None: CLOCK.astimezone(time_zone or dt_util.get_default_time_zone())  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="botpsy-eval-") as config_dir, patch.object(dt_util, "now", clock):
        async with eval_hass(Path(config_dir), language=fixture.language) as hass:
            home = await async_load_home(hass, fixture)
            agent = await _make_agent(hass, spec)
            home_run = _HomeRun(hass, home, fixture, agent, spec)
            conversation_id = ""
            for case in home_cases.cases:
                await agent.async_settle()
                if case.turn is not None:  # a conversation runs once, turn after turn
                    if not case.follows:
                        conversation_id = f"eval-{case.group}-{time.monotonic_ns()}"
                    case_runs = [await home_run.async_run_case(case, conversation_id)]
                else:
                    case_runs = [
                        await home_run.async_run_case(case, f"eval-{case.id}-{time.monotonic_ns()}")
                        for _ in range(runs)
                    ]
                result = _merge(case, case_runs)
                results.append(result)
                progress(result)
    return results


async def async_run_suite(
    suite: Suite, spec: AgentSpec, runs: int, progress: Callable[[CaseResult], None]
) -> list[CaseResult]:
    results: list[CaseResult] = []
    for home_cases in suite.homes:
        results += await async_run_home(home_cases, spec, runs, progress)
    return results
