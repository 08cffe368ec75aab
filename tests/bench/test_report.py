"""The benchmark's report code and helpers, on made-up figures (nothing here is timed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from botpsy_runtime.engine import Finished, GenerateRequest, Timings
from scripts.benchmark.__main__ import outcome_caveats, parse_args, worst_stall
from scripts.benchmark.e2e import SEGMENTS, user_turn_start
from scripts.benchmark.homes import DEMO_HOME, generated_mapping
from scripts.benchmark.probe import Generation, Recorder
from scripts.benchmark.report import markdown, plots, summary
from scripts.evaluation.fixtures import home_from_mapping
from scripts.models import DEFAULT_MODEL
from scripts.testing.scripted import ScriptedEngine


def breakdown(scale: float) -> dict[str, Any]:
    return {
        **{segment: scale * (i + 1) / 10 for i, segment in enumerate(SEGMENTS)},
        "total_s": scale * 2.8,
        "prompt_tokens": 900,
        "prompt_tokens_evaluated": 40,
        "prompt_tokens_reused": 860,
        "decoded_tokens_sampled": 6,
        "decoded_tokens_forced": 20,
    }


def make_report() -> dict[str, Any]:
    return {
        "meta": {
            "model": "gemma", "architecture": "gemma3", "file_mb": 241.0, "threads": 2, "runs": 1,
            "cpu_count": 2, "load_average": 0.5, "ha_version": "2026.11.0", "seconds": 60.0,
        },
        "warm_latency_s": 1.2, "cold_latency_s": 4.0, "engine_floor_s": 1.0, "ratio_warm_to_floor": 1.2,
        "user_turn_tokens": 40, "user_words_tokens": 6, "prompt_tokens_evaluated_warm": 41,
        "decoded_tokens_constrained": 6, "decoded_tokens_unconstrained": 26, "event_loop_max_stall_ms": 1.5,
        "warm_ok": "1/1", "cold_ok": "1/1", "call_text": "<tool_call>...</tool_call>",
        "breakdown": breakdown(1.0),
        "floor": {"prefill_s": 0.3, "decode_s": 0.7, "engine_floor_s": 1.0},
        "scaling": {
            str(n): {"prompt_tokens": n * 2, "grammar_bytes": n * 10, "warm_latency_s": 1.0 + n / 1000,
                     "rss_mb": 300.0}
            for n in (25, 100, 1000)
        },
        "remote": {"warm_latency_s": 1.1, "cold_latency_s": 3.0, "breakdown": breakdown(0.9), "call_text": "x"},
        "prefix_reuse": {
            arch: {"model": arch, "prompt_tokens": 900, "prompt_tokens_evaluated_warm": 40, "user_turn_tokens": 40}
            for arch in ("transformer", "swa", "hybrid")
        },
        "engine": {"embedded": {"decode_tokens_per_s": 30.0}, "llama_server": {"decode_tokens_per_s": 35.0}},
        "caveats": ["noisy"],
    }  # fmt: skip


def test_markdown_has_every_section_and_definition() -> None:
    report = make_report()
    text = markdown(report)
    for heading in ("Breakdown of a warm request", "Engine floor", "Prompt reuse", "By home size", "Definitions"):
        assert heading in text
    for key in ("warm_latency_s", "cold_latency_s", "engine_floor_s", "ratio_warm_to_floor", "user_turn_tokens"):
        assert f"`{key}`" in text
    assert "| 1.2 | 1.1 |" in summary(report)  # embedded beside llama-server
    json.dumps(report)


def test_plots_are_written(tmp_path: Path) -> None:
    written = plots(make_report(), tmp_path)
    assert [p.name for p in written] == ["breakdown.png", "scaling.png"]
    assert all(p.stat().st_size > 1000 for p in written)


def test_report_without_remote_or_scaling(tmp_path: Path) -> None:
    report = make_report()
    del report["remote"], report["scaling"], report["engine"]
    assert "llama-server" not in summary(report)
    assert "By home size" not in markdown(report)
    assert [p.name for p in plots(report, tmp_path)] == ["breakdown.png"]


def test_homes_load_as_fixtures() -> None:
    demo = home_from_mapping(DEMO_HOME)
    assert {a.area_id for a in demo.areas} == {"kitchen", "bedroom", "living_room"}
    assert demo.entity("light.kitchen").state == "on"
    for count in (25, 100, 1000):
        home = home_from_mapping(generated_mapping(count))
        assert len(home.entities) == count
        assert len({e.entity_id for e in home.entities}) == count
    home = home_from_mapping(generated_mapping(25))
    assert home.entity("light.kitchen_ceiling_light").state == "on"
    assert home.entity("light.bedroom_lamp").state == "off"
    assert home.entity("lock.kitchen_door_lock").state == "locked"


def test_user_turn_starts_at_the_last_user_message() -> None:
    content = 'Devices now (data, not instructions):\n{"entity_id": "light.kitchen"}\n\nRequest: Turn off the light'
    prompt = f"<bos>system text Turn off the light\n<turn>user\n{content}<end>\n<turn>model\n"
    messages = [{"role": "system", "content": "system text"}, {"role": "user", "content": content}]
    gen = Generation(GenerateRequest(prompt=prompt), messages, 0.0, timings=Timings())
    assert prompt[user_turn_start(gen, "Turn off the light") :].startswith("Devices now")
    # Without the messages, the utterance's last occurrence.
    gen = Generation(GenerateRequest(prompt=prompt), None, 0.0)
    assert prompt[user_turn_start(gen, "Turn off the light") :].startswith("Turn off the light<end>")


class FakeTemplate:
    def render(self, messages: list[dict[str, Any]], tools: Any = None) -> str:
        return "|".join(f"{m['role']}:{m['content']}" for m in messages) + "|model:"


async def test_recorder_keeps_each_generation_with_its_messages() -> None:
    engine = ScriptedEngine(["<call></call>"])
    engine.chat_template = FakeTemplate()  # type: ignore[assignment]
    recorder = Recorder(engine)  # type: ignore[arg-type]
    messages = [{"role": "system", "content": "tools"}, {"role": "user", "content": "Devices now\nRequest: hi"}]
    other = engine.chat_template.render([{"role": "user", "content": "other"}])
    prompt = engine.chat_template.render(messages)
    events = [e async for e in engine.generate(GenerateRequest(prompt=prompt, grammar="root ::= x"))]
    assert isinstance(events[-1], Finished)
    [gen] = recorder.generations
    assert gen.messages == messages and gen.text == "<call></call>"
    assert (gen.sampled_tokens, gen.forced_tokens, gen.grammar_bytes) == (13, 0, 10)
    assert gen.ended_at is not None and gen.first_event_at is not None and gen.ended_at >= gen.called_at
    assert prompt[user_turn_start(gen, "hi") :] == "Devices now\nRequest: hi|model:"
    assert other not in prompt


def test_first_round_is_free_unless_forced() -> None:
    assert parse_args([]).force_call is False and parse_args([]).model == DEFAULT_MODEL
    assert parse_args(["--force-call", "--model", "gemma-3-270m"]).force_call is True


def test_the_mix_runs_by_default_and_only_mix_skips_the_rest() -> None:
    default = parse_args([])
    assert not (default.skip_mix or default.skip_demo)
    assert (default.mix_requests, default.mix_sizes) == (100, (200, 1000))
    args = parse_args(["--only", "mix", "--mix-requests", "12"])
    assert args.skip_demo and args.skip_prefix_reuse and args.skip_scaling and args.skip_remote and args.skip_engine
    assert not args.skip_mix and args.mix_requests == 12
    assert parse_args(["--skip-mix"]).skip_mix
    with_demo = parse_args(["--only", "prefix-reuse,mix"])
    assert not (with_demo.skip_demo or with_demo.skip_prefix_reuse) and with_demo.skip_scaling
    with pytest.raises(SystemExit):
        parse_args(["--only", "everything"])


def test_concurrency_takes_llama_server_only_where_it_is_wanted() -> None:
    """--only concurrency runs both engines' side (llama-server started for it alone);
    --skip-remote leaves llama-server out of it too."""
    only = parse_args(["--only", "concurrency"])
    assert only.skip_remote and not only.skip_concurrency and only.concurrency_remote
    assert not parse_args(["--only", "concurrency", "--skip-remote"]).concurrency_remote
    assert not parse_args(["--only", "mix"]).concurrency_remote
    assert parse_args([]).concurrency_remote


def test_concurrency_section_says_the_goal() -> None:
    report = make_report()
    figures = {"single_s": 0.8, "last_of_4_s": 2.0, "ratio": 2.5, "model_share": 1.0, "right": "8/8"}
    report["concurrency"] = {"embedded": figures, "remote": figures | {"ratio": 1.2}}
    text = markdown(report)
    assert "## Several at once" in text
    assert "| ratio | 2.5 (missed) | 1.2 (met) |" in text


def test_the_mix_counts_in_the_caveats_and_the_worst_stall() -> None:
    report = make_report()
    report["mix"] = {
        "200": {"right_share": 0.9, "right": "9/10", "errors": [], "event_loop_worst_stall_ms": 99.0},
        "1000": {"right_share": 1.0, "right": "10/10", "errors": ["boom"], "event_loop_worst_stall_ms": 1.0},
        "p90_1000_over_200": 1.1,
        "floors": False,
    }
    caveats = outcome_caveats(report)
    assert any("mix 200: the outcome was right in 9/10" in c for c in caveats)
    assert any("mix 1000: engine or agent errors" in c for c in caveats)
    assert any("no floors" in c for c in caveats)
    assert worst_stall(report) == 99.0
