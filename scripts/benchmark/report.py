"""bench.md, the plots and the printed summary, from bench.json's data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .e2e import SEGMENTS
from .mix import GOALS as MIX_GOALS, MEMORY_GOAL, RATIO_GOAL as MIX_RATIO_GOAL, mix_ratio

HEADLINE = (
    ("warm_latency_s", "warm end-to-end latency (s)"),
    ("cold_latency_s", "cold end-to-end latency (s)"),
    ("engine_floor_s", "engine floor (s)"),
    ("ratio_warm_to_floor", "warm / floor"),
    ("engine_floor_batched_s", "engine floor, words only and fixed text batched (s)"),
    ("ratio_warm_to_floor_batched", "warm / batched floor (goal <= 1.3)"),
    ("ratio_to_embedded", "llama-server warm / embedded warm (goal <= 1.5)"),
    ("user_turn_tokens", "user-turn tokens (prompt after the cached prefix)"),
    ("user_words_tokens", "utterance tokens (the words alone)"),
    ("prompt_tokens_evaluated_warm", "prompt tokens evaluated, warm"),
    ("prompt_tokens_warm", "prompt tokens, warm"),
    ("cold_prompt_tokens_evaluated", "prompt tokens evaluated, cold"),
    ("decoded_tokens_constrained", "call tokens sampled under the grammar"),
    ("decoded_tokens_forced", "call tokens forced by the grammar"),
    ("decoded_tokens_unconstrained", "call tokens decoded freely (tokens of the call text)"),
    ("event_loop_max_stall_ms", "event loop: largest lateness of a 5 ms sleep (ms), median of warm requests"),
    ("event_loop_worst_stall_ms_anywhere", "event loop: worst stall in any warm request of the run (goal <= 20)"),
    ("gc_worst_pause_ms_anywhere", "Python's garbage collector: its longest pause in any warm request"),
    ("scaling_ratio_warm", "warm latency, largest / smallest generated home (goal <= 1.2)"),
    ("warm_ok", "warm requests that turned the light off"),
    ("warm_acted", "warm requests where a service ran"),
    ("cold_ok", "cold requests that turned the light off"),
    ("cold_acted", "cold requests where a service ran"),
)
SEGMENT_NAMES = {
    "before_engine_s": "HA + BotPsy before the engine (chat log, shortlist, prompt, grammar)",
    "prefill_s": "engine: prompt evaluation, to the first token",
    "decode_s": "engine: decoding under the grammar",
    "grammar_s": "(of which grammar work, inside decoding)",
    "engine_transport_s": "engine transport (pipe or HTTP, tokenizing, JSON)",
    "to_service_call_s": "parse, validate, chat log -> service call starts",
    "ha_execution_s": "HA execution: service call -> state changed",
    "after_state_change_s": "state changed -> async_converse returns (reply)",
    "total_s": "total",
}
DEFINITIONS = """\
## Definitions

- **End-to-end latency**: `conversation.async_converse` to BotPsy's conversation entity,
  timed from the call until it returns, on the demo home (3 areas: lights, a cover, a lock,
  a switch) loaded into a real Home Assistant by the evaluation harness' loader. The request
  is "Turn off the kitchen light"; the home is reset before each request; the service has
  executed (the light's state changed) before the call returns (`*_ok` counts it).
  **Cold**: the first request after the engine loaded (the entry reloaded, or llama-server
  restarted, before each run). **Warm**: the same request right after a different one
  ("Turn on the bedroom lamp") warmed the cache.
- **Engine floor**: same model, same run, no Home Assistant, in-process llama.cpp with the
  worker's load options, measured between the runs of warm requests (as many times as there
  are warm requests), so that both see the machine alike: the stable prefix evaluated first
  (not timed), then the user turn's tokens evaluated on top of it until the first token is
  sampled (`prefill_s`), plus the call decoded one token at a time: tokens of the warm
  request's call text x the median time of one free-decoding step (evaluate + sample, the
  request's sampling settings). Decoding those tokens as a batch (what forced text could
  cost at best) is shown as `batched_call_s`.
  `ratio_warm_to_floor` = warm latency / engine floor.
- **Batched engine floor** (`engine_floor_batched_s`): what llama.cpp could do if it knew
  everything before the user's words and the call's fixed text: the utterance's own tokens
  (from its first word to the end of the prompt) evaluated on top of the rest until the
  first token is sampled (`floor.words_prefill_s`), the call's choice tokens (as many as
  the warm request sampled) x one decoding step, and the call's other tokens evaluated as
  one batch (`floor.fixed_batched_s`). `ratio_warm_to_floor_batched` = warm latency / it.
- **user_turn_tokens**: tokens of the warm request's prompt after its cached prefix: the
  agent's own prefix (the stable part and the states block it prefills in the background)
  when the prompt starts with it, else everything before the last user message. That is
  what a warm request evaluates (the words, the model's turn header, and the lines of
  devices the states block lacks);
  **user_words_tokens**: the utterance alone. warm_prompt_*.txt shows the split.
- **prompt_tokens_evaluated_warm**: prompt tokens the engine evaluated (not reused) for the
  warm request, as the engine reports them.
- **decoded_tokens_constrained**: tokens sampled for the call under the grammar (tokens the
  grammar forced are excluded, `decoded_tokens_forced`); **decoded_tokens_unconstrained**: the
  token count of the same call text, what free decoding needs. "Call" is the warm request's
  output, whatever it is: if the model answered in text (`warm_acted` 0), that text.
- **event_loop_max_stall_ms**: while the warm request runs, a task on HA's event loop sleeps
  5 ms in a loop; the largest lateness of a wake-up (median over warm requests; the worst is kept
  too, `event_loop_worst_stall_ms`); `event_loop_worst_stall_ms_anywhere` is the worst of
  every warm request of the run: both engines, the tiny models and every home size.
  Garbage collection stops the loop too: the harness collects its own garbage before each
  measured request (resetting a home rewrites all its states), and the longest collection
  that still ran during one is `gc_worst_pause_ms` (`gc_worst_pause_ms_anywhere`).
- **scaling**: generated homes (scripts/testing/sample_home.generated_mapping) of 25, 100 and 1,000
  exposed entities, "Turn off the kitchen ceiling light" after "Turn on the bedroom lamp":
  prompt tokens and grammar bytes of the request the engine received, warm latency, and the
  worker's resident memory afterwards. Homes over 24 devices show the devices requests were
  about lately in the states block: the first request about the light carries its line in
  its turn (`first_warm_latency_s`, `first_prompt_tokens_evaluated`), later ones do not.
- **prefix_reuse**: the warm request on the demo home with a plain transformer (tiny Qwen3),
  a sliding-window model (gemma-3-270m, a base model) and a hybrid recurrent one (tiny Qwen3.5).
- **mix** (a realistic mix): on generated homes of 200 and 1,000 entities, `--mix-requests`
  (100) different requests made from the home's own entities by `scripts/benchmark/mix.py`
  (seed `--mix-seed`), in random order, each asked once in a new conversation, nothing asked
  before it to warm the cache (the home is reset to its states and the agent's background
  warm-up let finish before each, as between any two requests): actions on one device of
  every kind by its name (lights, dimming, plugs, fans, thermostats, speakers, locks), the
  lights of an area, questions about a device or an area's temperature, unlocks (held for a
  yes) and words that ask for no action ("hello", "tell me a joke"). Generated homes have no
  floors: the mix names areas. `p50_s`, `p90_s` (linear between ranks), `max_s`: latency of
  the requests without an engine or agent error (`errors`), including those answered
  without the model (`model_share` reached it); `tokens_evaluated_median`: prompt tokens the
  engine evaluated for a request, summed over its generation rounds (0 without the model),
  median; `second_round_share`: requests that needed a second generation round;
  `right_share`: requests whose outcome was right: an action reached the asked state on the
  named devices and changed nothing else, a question's reply says the state read and
  changed nothing, a request for no action (or an unlock, whose reply asks for the yes)
  changed nothing. `p90_1000_over_200`: p90 in the largest home over p90 in the smallest.
- **breakdown**: one warm request (medians) cut where the integration hands over: before
  the engine, the engine's own prefill and decode times, transport, until the service call,
  the service call until the state changed, until `async_converse` returns.
"""


def _fmt(value: Any) -> str:
    if value is None or value == []:
        return "-"
    if isinstance(value, list):
        return "; ".join(str(v)[:80] for v in value)
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines


def headline(report: dict[str, Any]) -> list[str]:
    remote = report.get("remote") or {}
    columns = ["figure", "embedded"] + (["llama-server"] if remote else [])
    rows = []
    for key, name in HEADLINE:
        if key in report or key in remote:
            rows.append([f"{name} `{key}`", report.get(key)] + ([remote.get(key)] if remote else []))
    return _table(columns, rows)


def markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [
        f"# BotPsy end to end: {meta['model']} ({meta['architecture']}, {meta['file_mb']} MB)",
        "",
        f"{meta['threads']} threads, {meta['cpu_count']} CPUs (load average {meta['load_average']} at the start, "
        f"{meta.get('load_average_end', '-')} at the end), medians of {meta['runs']} runs "
        f"({meta['runs'] * meta.get('warm_requests_per_run', 1)} warm requests), "
        f"Home Assistant {meta['ha_version']}, {meta['seconds']:.0f} s in all.",
        "",
        *headline(report),
    ]
    breakdowns = {"embedded": report.get("breakdown") or {}}
    if report.get("remote"):
        breakdowns["llama-server"] = report["remote"].get("breakdown") or {}
    if any(breakdowns.values()):
        lines += ["", "## Breakdown of a warm request", ""]
        token_keys = [k for k in breakdowns["embedded"] if not k.endswith("_s")]
        shown = [*SEGMENTS[:3], "grammar_s", *SEGMENTS[3:], "total_s"]
        rows = [[SEGMENT_NAMES[k], *(b.get(k) for b in breakdowns.values())] for k in shown]
        rows += [[k, *(b.get(k) for b in breakdowns.values())] for k in token_keys]
        lines += _table(["segment (s) / count", *breakdowns], rows)
    floor = report.get("floor") or {}
    if floor:
        lines += ["", "## Engine floor (llama.cpp alone, same model and options)", ""]
        lines += _table(["figure", "value"], [[k, v] for k, v in floor.items()])
    if report.get("prefix_reuse"):
        lines += ["", "## Prompt reuse by architecture (warm request, demo home)", ""]
        archs = report["prefix_reuse"]
        keys = [
            "model", "prompt_tokens", "prompt_tokens_evaluated_warm", "user_turn_tokens", "user_words_tokens",
            "warm_latency_s", "warm_ok",
        ]  # fmt: skip
        lines += _table(["figure", *archs], [[k, *(archs[a].get(k) for a in archs)] for k in keys])
    if follow_up := report.get("follow_up"):
        lines += ["", '## A conversation\'s second turn ("Turn it back on" after the warm request)', ""]
        lines += [
            "Goals: prompt tokens evaluated <= its words + 32 (`follow_up_evaluated_over_words` <= 32), "
            "latency <= the first turn's (`ratio_follow_up_to_first` <= 1).",
            "",
        ]
        lines += _table(["figure", "value"], [[k, v] for k, v in follow_up.items()])
    if report.get("scaling"):
        sizes = list(report["scaling"])
        lines += ["", "## By home size (exposed entities, embedded engine)", ""]
        keys = list(report["scaling"][sizes[0]])
        lines += _table(["figure", *sizes], [[k, *(report["scaling"][n].get(k) for n in sizes)] for k in keys])
    if report.get("mix"):
        lines += ["", *mix_section(report["mix"])]
    if report.get("concurrency"):
        lines += ["", *concurrency_section(report["concurrency"])]
    engine = report.get("engine") or {}
    if engine:
        lines += ["", "## Engine figures (no Home Assistant): embedded worker vs llama-server", ""]
        emb, srv = engine.get("embedded", {}), engine.get("llama_server", {})
        lines += _table(["figure", "embedded", "llama-server"], [[k, emb.get(k), srv.get(k)] for k in emb])
    calls = {"embedded": report.get("call_text"), "llama-server": (report.get("remote") or {}).get("call_text")}
    if any(text is not None for text in calls.values()):
        lines += ["", "## The warm request's call", ""]
        lines += [f"- {name}: `{text!r}`" for name, text in calls.items() if text is not None]
    if report.get("caveats"):
        lines += ["", "## Caveats of this run", "", *[f"- {c}" for c in report["caveats"]]]
    return "\n".join([*lines, "", DEFINITIONS])


# The last of four requests asked together, against one alone.
CONCURRENCY_GOAL = 1.5


def concurrency_section(found: dict[str, Any]) -> list[str]:
    """Four requests at once beside one alone, per engine, with the goal."""
    engines = list(found)
    keys = list(found[engines[0]])
    rows = [[k, *(_met(found[e].get(k), CONCURRENCY_GOAL) if k == "ratio" else found[e].get(k) for e in engines)]
            for k in keys]  # fmt: skip
    return [
        "## Several at once (4 conversations asking together, demo home)",
        "",
        f"Goal: the last of them done within {CONCURRENCY_GOAL} x a single request (`ratio`). "
        "Each request needs the model (`model_share`); tokens/s are output tokens over wall time.",
        "",
        *_table(["figure", *engines], rows),
    ]


def _met(value: Any, goal: float) -> str:
    if value is None:
        return "-"
    return f"{_fmt(value)} ({'met' if value <= goal else 'missed'})"


def mix_sizes(mix: dict[str, Any]) -> list[str]:
    """The home sizes of the mix section, smallest first (its other keys are figures)."""
    return sorted((k for k in mix if k.isdigit()), key=int)


def _slow(row: dict[str, Any]) -> str:
    """Where a slow request's time went, as far as the row tells."""
    engine = (
        f", {row['prefill_s']:.3f} s prefill, {row['decode_s']:.3f} s decoding {row['output_tokens']} tokens"
        if "prefill_s" in row
        else ""
    )
    return f"{row['latency_s']:.3f} s ({row['tokens']} tokens evaluated{engine}, {row['rounds']} round(s))"


def mix_section(mix: dict[str, Any]) -> list[str]:
    """The realistic mix: figures by home with their goals, by kind, the slowest and the wrong."""
    sizes = mix_sizes(mix)
    if not sizes:
        return []
    count = max(mix[n].get("requests") or 0 for n in sizes)
    lines = [f"## A realistic mix ({count} different requests per home, random order, each once, embedded engine)", ""]
    goals = ", ".join(f"{k.removesuffix('_s')} <= {v} s" for k, v in MIX_GOALS.items())
    lines += [
        f"Goals, in every home: {goals}; p90 at the largest home <= {MIX_RATIO_GOAL} x p90 at the smallest. "
        "Speed counts only with the right outcome (`right_share`).",
        "",
    ]
    if not mix.get("floors"):
        lines += ["Generated homes have no floors: the mix names devices and areas.", ""]
    rows: list[list[Any]] = []
    for key in ("p50_s", "p90_s", "max_s"):
        goal = MIX_GOALS[key]
        rows.append([f"`{key}`", *(_met(mix[n].get(key), goal) for n in sizes), f"<= {goal}"])
    for key in (
        "tokens_evaluated_median",
        "second_round_share",
        "model_share",
        "right_share",
        "right",
        "event_loop_worst_stall_ms",
        "gc_worst_pause_ms",
        "rss_mb",
        "gguf_mb",
        "kv_cache_mb",
        "snapshot_mb",
    ):
        rows.append([f"`{key}`", *(mix[n].get(key) for n in sizes), ""])
    ratio = "rss_over_gguf_kv"
    rows.append([f"`{ratio}`", *(_met(mix[n].get(ratio), MEMORY_GOAL) for n in sizes), f"<= {MEMORY_GOAL}"])
    lines += _table(["figure", *(f"{n} entities" for n in sizes), "goal"], rows)
    key, _ = mix_ratio(mix)
    if key:
        lines += ["", f"- `{key}`: {_met(mix.get(key), MIX_RATIO_GOAL)} (goal <= {MIX_RATIO_GOAL})"]
    kinds = list(dict.fromkeys(k for n in sizes for k in mix[n].get("by_kind") or {}))
    if kinds:
        lines += ["", "By kind of request (requests, p50 s, max s, right):", ""]

        def cell(figures: dict[str, Any] | None) -> str:
            if not figures:
                return "-"
            parts = (figures["requests"], _fmt(figures["p50_s"]), _fmt(figures["max_s"]), figures["right"])
            return "{}, {}, {}, {}".format(*parts)

        by_kind = [[kind, *(cell((mix[n].get("by_kind") or {}).get(kind)) for n in sizes)] for kind in kinds]
        lines += _table(["kind", *(f"{n} entities" for n in sizes)], by_kind)
    for n in sizes:
        if slowest := mix[n].get("slowest"):
            lines += ["", f"Slowest requests, {n} entities:", ""]
            lines += [f"- {_slow(s)}: {s['text']!r}" for s in slowest]
        if wrong := mix[n].get("wrong"):
            lines += ["", f"Wrong outcomes, {n} entities (the first {len(wrong)}):", ""]
            lines += [
                f"- {w['kind']} {w['text']!r}: replied {w['reply']!r}, changed {', '.join(w['changed']) or 'nothing'}"
                for w in wrong
            ]
    return lines


def plots(report: dict[str, Any], out: Path) -> list[Path]:
    """breakdown.png (where a warm request's time goes), scaling.png (by home size) and
    mix.png (the realistic mix's latencies), for the parts the run has."""
    # matplotlib (heavy) is imported only when plots are drawn, not with the report's text.
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")

    written = []
    bars = {"embedded": report.get("breakdown") or {}}
    if report.get("remote"):
        bars["llama-server"] = report["remote"].get("breakdown") or {}
    floor = report.get("floor") or {}
    if floor:
        bars["engine floor"] = {"prefill_s": floor.get("prefill_s"), "decode_s": floor.get("decode_s")}
    if any(bars.values()):
        written.append(_breakdown_plot(report, bars, out))
    if scaling := report.get("scaling") or {}:
        written.append(_scaling_plot(report, scaling, out))
    mix = report.get("mix") or {}
    if sizes := [n for n in mix_sizes(mix) if mix[n].get("latencies_s")]:
        written.append(_mix_plot(report, mix, sizes, out))
    return written


def _save(fig: Any, path: Path) -> Path:
    """Write a finished figure to `path` (and free it)."""
    # Heavy, only when plotting (after plots() has chosen the Agg backend).
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _breakdown_plot(report: dict[str, Any], bars: dict[str, dict[str, Any]], out: Path) -> Path:
    # Heavy, only when plotting (after plots() has chosen the Agg backend).
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.9 * len(bars)))
    names = list(bars)
    colors = plt.get_cmap("tab10")
    for index, segment in enumerate(SEGMENTS):
        lefts = [sum(bars[n].get(s) or 0.0 for s in SEGMENTS[:index]) for n in names]
        widths = [bars[n].get(segment) or 0.0 for n in names]
        ax.barh(names, widths, left=lefts, color=colors(index), label=SEGMENT_NAMES[segment])
    ax.invert_yaxis()
    ax.set_xlabel("seconds (warm request, medians)")
    ax.set_title(f"Where a warm request's time goes: {report['meta']['model']}")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=2)
    return _save(fig, out / "breakdown.png")


def _scaling_plot(report: dict[str, Any], scaling: dict[str, Any], out: Path) -> Path:
    # Heavy, only when plotting (after plots() has chosen the Agg backend).
    import matplotlib.pyplot as plt  # noqa: PLC0415

    sizes = [int(n) for n in scaling]
    fig, axes = plt.subplots(2, 2, figsize=(9, 6))
    for ax, (key, label) in zip(
        axes.flat,
        (
            ("warm_latency_s", "warm latency (s)"),
            ("prompt_tokens", "prompt tokens"),
            ("grammar_bytes", "grammar bytes"),
            ("rss_mb", "worker RSS (MB)"),
        ),
        strict=True,
    ):
        ax.plot(sizes, [scaling[str(n)].get(key) or 0 for n in sizes], marker="o")
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_title(label)
        ax.set_xlabel("exposed entities")
        ax.set_ylim(bottom=0)
    fig.suptitle(f"By home size: {report['meta']['model']}")
    return _save(fig, out / "scaling.png")


def _mix_plot(report: dict[str, Any], mix: dict[str, Any], sizes: list[str], out: Path) -> Path:
    """mix.png: the share of the mix's requests done within a time, by home, with the goals."""
    # Heavy, only when plotting (after plots() has chosen the Agg backend).
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n in sizes:
        latencies = sorted(mix[n]["latencies_s"])
        shares = [(i + 1) / len(latencies) for i in range(len(latencies))]
        ax.step(latencies, shares, where="post", label=f"{n} entities")
    for key, share in (("p50_s", 0.5), ("p90_s", 0.9), ("max_s", 1.0)):
        ax.plot([MIX_GOALS[key]], [share], marker="x", color="black", linestyle="none")
    ax.plot([], [], marker="x", color="black", linestyle="none", label="goals (p50, p90, max)")
    ax.set_xlabel("latency (s)")
    ax.set_ylabel("share of requests done")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=0)
    ax.legend(loc="lower right")
    ax.set_title(f"A realistic mix of requests: {report['meta']['model']}")
    return _save(fig, out / "mix.png")


def summary(report: dict[str, Any]) -> str:
    """The table printed at the end of a run (and the mix's figures, if it ran)."""
    lines = headline(report)
    mix = report.get("mix") or {}
    if sizes := mix_sizes(mix):
        keys = ("p50_s", "p90_s", "max_s", "tokens_evaluated_median", "second_round_share", "right_share")
        rows = [[f"mix `{k}`", *(mix[n].get(k) for n in sizes)] for k in keys]
        if (key := mix_ratio(mix)[0]) and key in mix:
            rows.append([f"mix `{key}`", mix[key], *([""] * (len(sizes) - 1))])
        lines += ["", *_table(["figure", *(f"{n} entities" for n in sizes)], rows)]
    return "\n".join(lines)
