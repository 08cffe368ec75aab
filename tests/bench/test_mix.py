"""The realistic mix's requests, outcome check and figures (nothing here is timed)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from botpsy_runtime.engine import GenerateRequest, Timings
from scripts.benchmark.e2e import Sample
from scripts.benchmark.homes import generated_mapping
from scripts.benchmark.mix import (
    ACT,
    AREA,
    CONFIRM,
    NO_ACTION,
    NOTHING,
    QUESTION,
    Expect,
    MixRequest,
    MixResult,
    async_run_mix,
    changed,
    is_right,
    mix_figures,
    mix_ratio,
    mix_requests,
    percentile,
    says,
)
from scripts.benchmark.probe import Execution, Generation
from scripts.benchmark.report import markdown, plots, summary


def domains(mapping: dict[str, Any]) -> set[str]:
    return {str(e["id"]).split(".", 1)[0] for e in mapping["entities"]}


@pytest.mark.parametrize("size", [200, 1000])
def test_the_mix_asks_a_hundred_different_things_about_the_homes_own_devices(size: int) -> None:
    mapping = generated_mapping(size)
    requests = mix_requests(mapping, 100, seed=27)
    assert len(requests) == 100
    assert len({r.text for r in requests}) == 100
    # Every kind of device of the home, by name, by area, questions and no action.
    assert {r.domain for r in requests} - {None} == domains(mapping)
    kinds = Counter(r.kind for r in requests)
    assert set(kinds) == {ACT, AREA, QUESTION, NOTHING, CONFIRM}
    assert kinds[ACT] >= 40 and kinds[QUESTION] >= 15 and kinds[AREA] >= 5 and kinds[NOTHING] >= 5
    assert any(r.place == "area" and r.kind == QUESTION for r in requests)  # "the temperature in the Kitchen"
    # Generated homes have no floors: no floor requests.
    assert "floors" not in mapping and not any(r.place == "floor" for r in requests)
    # What the requests name is in the home, and each is about something not named before.
    ids = {str(e["id"]) for e in mapping["entities"]}
    names = {str(e["name"]) for e in mapping["entities"]}
    areas = {str(a["name"]) for a in mapping["areas"]}
    for request in requests:
        assert request.about <= ids and {e.entity_id for e in request.expect} <= ids
        assert set(request.setup) <= request.about
        if request.kind == ACT:
            assert any(name in request.text for name in names) and request.expect
        if request.kind == AREA:
            assert any(area in request.text for area in areas) and len(request.expect) >= 2
        if request.kind == QUESTION:
            assert request.answer
        if request.kind == NOTHING:
            assert request.text in NO_ACTION
    about = [e for r in requests for e in r.about]
    assert len(about) == len(set(about))


def test_the_mix_is_the_same_for_a_seed_and_in_random_order() -> None:
    mapping = generated_mapping(200)
    first = mix_requests(mapping, 100, seed=27)
    assert first == mix_requests(mapping, 100, seed=27)
    other = mix_requests(mapping, 100, seed=28)
    assert [r.text for r in other] != [r.text for r in first]
    # Not grouped by kind: the first ten already mix several.
    assert len({r.kind for r in first[:10]}) >= 3


def test_a_small_mix_still_names_every_kind_of_device() -> None:
    mapping = generated_mapping(200)
    requests = mix_requests(mapping, 12)
    assert len(requests) == 12
    assert {r.domain for r in requests} - {None} == domains(mapping)
    assert {NOTHING, QUESTION, AREA} <= {r.kind for r in requests}


def test_a_player_is_asked_only_what_it_can_do() -> None:
    """A generated speaker has a volume and sources, no pause or power: it is not asked to
    pause or turn on (it would do nothing, rightly)."""
    requests = [r for r in mix_requests(generated_mapping(1000), 500) if r.domain == "media_player" and r.kind == ACT]
    assert len(requests) > 10
    assert not [r.text for r in requests if r.text.startswith(("Pause", "Turn on"))]
    # Its volume and source are set while it is on (an off player shows neither).
    assert all(next(iter(r.setup.values())) == {"state": "on"} for r in requests)
    player = {"id": "media_player.tv", "name": "TV", "area": "den", "state": "off", "attributes": {}}
    home = {"areas": [{"id": "den", "name": "Den"}], "entities": [player]}
    texts = {r.text for seed in range(12) for r in mix_requests(home, 50, seed=seed) if r.kind == ACT}
    assert any(t.startswith("Pause") for t in texts) and any(t.startswith("Turn on") for t in texts), texts


def test_a_small_home_gives_what_it_has() -> None:
    requests = mix_requests(generated_mapping(25), 500)
    assert 25 < len(requests) < 500
    assert len({r.text for r in requests}) == len(requests)


FLOORED = {
    "floors": [{"id": "ground", "name": "Ground floor"}, {"id": "upstairs", "name": "Upstairs"}],
    "areas": [
        {"id": "kitchen", "name": "Kitchen", "floor": "ground"},
        {"id": "bedroom", "name": "Bedroom", "floor": "upstairs"},
    ],
    "entities": [
        {"id": "light.kitchen", "name": "Kitchen light", "area": "kitchen", "state": "on"},
        {"id": "light.pantry", "name": "Pantry light", "area": "kitchen", "state": "off"},
        {"id": "light.bedroom", "name": "Bedroom light", "area": "bedroom", "state": "off"},
        {"id": "light.bedside", "name": "Bedside lamp", "area": "bedroom", "state": "off"},
        {"id": "lock.front", "name": "Front door", "area": "kitchen", "state": "locked"},
    ],
}


def test_a_home_with_floors_gets_floor_requests() -> None:
    requests = mix_requests(FLOORED, 100)
    floor = [r for r in requests if r.place == "floor"]
    assert floor and all(r.kind == AREA for r in floor)
    assert {e.entity_id for e in floor[0].expect} in (
        {"light.kitchen", "light.pantry"},
        {"light.bedroom", "light.bedside"},
    )
    assert any("Ground floor" in r.text or "Upstairs" in r.text for r in floor)


def states(**items: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    return {k.replace("__", "."): (v, {}) if isinstance(v, str) else v for k, v in items.items()}


def test_an_action_is_right_on_the_named_device_alone() -> None:
    request = MixRequest("Turn on the lamp", ACT, "light", (Expect("light.lamp", "state", "on"),))
    before = states(light__lamp="off", light__hall="off")
    assert is_right(request, before, states(light__lamp="on", light__hall="off"), "Done", None)
    # Another device changed too, or the named one did not, or an error: wrong.
    assert not is_right(request, before, states(light__lamp="on", light__hall="on"), "Done", None)
    assert not is_right(request, before, before, "Done", None)
    assert not is_right(request, before, states(light__lamp="on", light__hall="off"), "Failed", "engine error")
    # Numbers within their tolerance.
    dim = MixRequest("Dim", ACT, "light", (Expect("light.lamp", "brightness", 77, 1.0),))
    assert is_right(dim, before, states(light__lamp=("on", {"brightness": 76}), light__hall="off"), "", None)
    assert not is_right(dim, before, states(light__lamp=("on", {"brightness": 70}), light__hall="off"), "", None)


def test_questions_no_action_and_unlocks_change_nothing() -> None:
    before = states(lock__front="locked", sensor__kitchen="21.5")
    question = MixRequest("Is the front door locked?", QUESTION, "lock", answer="locked")
    assert is_right(question, before, before, "Front door is locked.", None)
    assert not is_right(question, before, before, "Front door is unlocked.", None)
    assert not is_right(question, before, states(lock__front="unlocked", sensor__kitchen="21.5"), "locked", None)
    temperature = MixRequest("How warm is it?", QUESTION, "sensor", answer="21.5")
    assert is_right(temperature, before, before, "Kitchen temperature is 21.5 °C.", None)
    assert not is_right(temperature, before, before, "It is 121.5 or 21.55 degrees.", None)
    hello = MixRequest("Hello", NOTHING, None)
    assert is_right(hello, before, before, "Hello! What can I do for you?", None)
    assert not is_right(hello, before, states(lock__front="unlocked", sensor__kitchen="21.5"), "Hi", None)
    unlock = MixRequest("Unlock the front door", CONFIRM, "lock")
    assert is_right(unlock, before, before, "Do you want me to unlock Front door?", None)
    assert not is_right(unlock, before, states(lock__front="unlocked", sensor__kitchen="21.5"), "Unlocked.", None)
    assert changed(before, states(lock__front="locked", sensor__kitchen=("21.5", {"unit": "°C"}))) == ["sensor.kitchen"]
    assert says("Front door is locked.", "locked") and not says("unlocked", "locked")


def result(latency: float, *, rounds: int = 1, tokens: int = 10, right: bool = True, **kw: Any) -> MixResult:
    return MixResult(kw.pop("text", f"r{latency}"), kw.pop("kind", ACT), "light", latency, tokens, rounds, right, **kw)


def test_percentiles_are_linear_between_ranks() -> None:
    values = [float(v) for v in range(1, 11)]
    assert percentile(values, 50) == 5.5
    assert percentile(values, 90) == pytest.approx(9.1)
    assert percentile(values, 100) == 10.0
    assert percentile([3.0], 90) == 3.0
    assert percentile([], 90) is None


def test_mix_figures_from_given_results() -> None:
    results = [result(float(v), tokens=v * 10, rounds=2 if v in (3, 7) else 1) for v in range(1, 11)]
    results[0] = result(0.5, rounds=0, tokens=0, kind=NOTHING, text="Hello")  # answered without the model
    results[4] = result(5.0, tokens=50, right=False, text="wrong one", reply="Sorry", changed=["light.hall"])
    results.append(result(30.0, rounds=1, right=False, error="engine died", text="failed"))
    figures = mix_figures(results)
    latencies = [0.5, *map(float, range(2, 11))]  # without the failed one
    assert figures["requests"] == 11
    assert figures["p50_s"] == pytest.approx(5.5)
    assert figures["p90_s"] == pytest.approx(percentile(latencies, 90))
    assert figures["max_s"] == 10.0
    # Tokens per request: 0 for the one answered without the model (the failed one left out).
    assert figures["tokens_evaluated_median"] == 55.0
    assert figures["second_round_share"] == round(2 / 11, 3)
    assert figures["model_share"] == round(10 / 11, 3)
    assert figures["right_share"] == round(9 / 11, 3) and figures["right"] == "9/11"
    assert figures["by_kind"][NOTHING] == {"requests": 1, "p50_s": 0.5, "max_s": 0.5, "right": "1/1"}
    assert figures["by_kind"][ACT]["right"] == "8/10"
    assert figures["errors"] == ["engine died"]
    assert [w["text"] for w in figures["wrong"]] == ["wrong one", "failed"]
    assert figures["slowest"][0]["text"] == "r10.0" and len(figures["latencies_s"]) == 10


def mix_report() -> dict[str, Any]:
    fast = mix_figures([result(0.1 * v) for v in range(1, 11)])
    slow = mix_figures([result(0.15 * v, right=v != 3) for v in range(1, 11)])
    fast |= {"rss_mb": 700.0, "gguf_mb": 469.0, "kv_cache_mb": 96.0, "snapshot_mb": 40.0, "rss_over_gguf_kv": 1.239}
    slow |= {"rss_mb": 990.0, "gguf_mb": 469.0, "kv_cache_mb": 96.0, "snapshot_mb": 200.0, "rss_over_gguf_kv": 1.752}
    mix: dict[str, Any] = {"200": fast, "1000": slow, "seed": 27, "floors": False}
    key, ratio = mix_ratio(mix)
    mix[key] = ratio
    return {
        "meta": {
            "model": "qwen", "architecture": "qwen2", "file_mb": 400.0, "threads": 2, "runs": 1,
            "cpu_count": 2, "load_average": 0.5, "ha_version": "2026.11.0", "seconds": 60.0,
        },
        "mix": mix,
        "caveats": [],
    }  # fmt: skip


def test_the_ratio_is_p90_of_the_largest_home_over_the_smallest() -> None:
    mix = mix_report()["mix"]
    assert mix["p90_1000_over_200"] == round(mix["1000"]["p90_s"] / mix["200"]["p90_s"], 3) == 1.5
    assert mix_ratio({"200": mix["200"]}) == ("", None)


def test_a_mix_only_report_has_its_section_goals_and_plot(tmp_path: Path) -> None:
    report = mix_report()
    text = markdown(report)
    assert "A realistic mix" in text and "Breakdown of a warm request" not in text
    assert "p50 <= 0.6 s, p90 <= 1.0 s, max <= 2.0 s" in text and "no floors" in text
    assert "`p90_1000_over_200`: 1.5 (missed)" in text
    assert "| `max_s` | 1 (met) | 1.5 (met) | <= 2.0 |" in text
    assert "Wrong outcomes, 1000 entities" in text
    assert "| `rss_over_gguf_kv` | 1.239 (met) | 1.752 (missed) | <= 1.3 |" in text
    assert "- 1.500 s (10 tokens evaluated, 0.000 s prefill, 0.000 s decoding 0 tokens, 1 round(s)): 'r1.5'" in text
    assert "mix `p90_s`" in summary(report)
    assert [p.name for p in plots(report, tmp_path)] == ["mix.png"]


class FakeState:
    def __init__(self, state: str, attributes: dict[str, Any] | None = None) -> None:
        self.state, self.attributes = state, attributes or {}


class FakeHass:
    def __init__(self) -> None:
        self.states: dict[str, FakeState] = {}

    async def async_block_till_done(self) -> None:
        return None


class FakeHome:
    def __init__(self, hass: FakeHass, initial: dict[str, str]) -> None:
        self.hass, self.initial = hass, initial

    async def async_reset(self, setup: dict[str, dict[str, Any]] | None = None) -> None:
        self.hass.states = {e: FakeState(s) for e, s in self.initial.items()}
        for entity_id, override in (setup or {}).items():
            self.hass.states[entity_id] = FakeState(override["state"])


class FakeBench:
    """Answers like the agent: the lamp turns on in two rounds, a greeting without the model."""

    def __init__(self) -> None:
        self.hass = FakeHass()
        self.home = FakeHome(self.hass, {"light.lamp": "off", "lock.front": "locked"})
        self.home_entities = frozenset(self.home.initial)
        self.asked: list[str] = []

    async def async_quiet(self) -> float:
        return 0.0

    async def async_ask(self, text: str, *, probe: bool = False) -> Any:
        self.asked.append(text)
        timings = Timings(
            prompt_tokens=300,
            cached_tokens=200,
            decoded_tokens=4,
            forced_tokens=6,
            prompt_seconds=0.25,
            decode_seconds=0.1,
        )
        rounds = [Generation(GenerateRequest(prompt="p"), None, 0.0, ended_at=1.0, timings=timings)] * 2
        if text == "Hello":
            rounds, reply = [], "Hello! What can I do for you?"
        else:
            self.hass.states["light.lamp"] = FakeState("on")
            reply = "Turned on the lamp."
        execution = Execution(self.hass, self.home_entities)  # type: ignore[arg-type]
        return Sample(text, 0.0, 0.5, rounds, execution, True, reply, stall_ms=2.0, gc_ms=0.5)


async def test_the_mix_asks_each_request_once_and_keeps_what_it_cost() -> None:
    unlocked = {"lock.front": {"state": "unlocked"}}
    requests = [
        MixRequest("Turn on the lamp", ACT, "light", (Expect("light.lamp", "state", "on"),)),
        MixRequest("Hello", NOTHING, None),
        MixRequest("Lock the front door", ACT, "lock", (Expect("lock.front", "state", "locked"),), unlocked),
    ]
    bench = FakeBench()
    results = await async_run_mix(bench, requests, "fake")  # type: ignore[arg-type]
    assert bench.asked == [r.text for r in requests]
    lamp, hello, lock = results
    assert lamp.right and lamp.changed == ["light.lamp"]
    assert (lamp.rounds, lamp.evaluated_tokens, lamp.output_tokens) == (2, 200, 20)
    assert lamp.prefill_s == pytest.approx(0.5) and lamp.decode_s == pytest.approx(0.2)
    assert hello.right and (hello.rounds, hello.evaluated_tokens) == (0, 0)
    # The lock was left unlocked, and the agent turned on the lamp instead: wrong.
    assert not lock.right and lock.changed == ["light.lamp"]
    figures = mix_figures(results)
    assert figures["second_round_share"] == round(2 / 3, 3) and figures["right"] == "2/3"
    assert [r["text"] for r in figures["per_request"]] == [r.text for r in requests]
    assert figures["slowest"][0]["prefill_s"] == 0.5
