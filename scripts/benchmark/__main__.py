"""scripts/bench: BotPsy's end-to-end latency through a real Home Assistant, beside the engine's floor.

One run measures, with the same model: requests through HA to BotPsy's conversation entity
(embedded engine and llama-server), the engine's floor for the same request (llama.cpp
alone), prompt reuse by architecture, scaling with the home's size and the engines' own
rates, and a realistic mix of different requests on generated homes of 200 and 1,000
entities. Writes bench.json, bench.md and PNG plots (breakdown, scaling, mix) to --out;
bench.md defines every figure. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
import json
import logging
import os
from pathlib import Path
import sys
import tempfile
import time
from typing import Any, Literal

from homeassistant.const import __version__ as ha_version

from botpsy_runtime.chat_template import fallback_template
from botpsy_runtime.embedded import EmbeddedOptions
from botpsy_runtime.gguf_metadata import GGUFMetadata, read_gguf_metadata
from custom_components.botpsy.const import CONF_N_BATCH, CONF_N_CTX, CONF_N_THREADS
from scripts.evaluation.agents import async_botpsy_agent
from scripts.evaluation.fixtures import home_from_mapping
from scripts.evaluation.home_loader import async_load_home, eval_hass
from scripts.models import DEFAULT_MODEL, GEMMA, ModelError, resolve
from scripts.testing.tiny_gguf import write_tiny_model

from . import report as reports
from .concurrency import AT_ONCE, async_concurrency
from .e2e import (
    EXPECT,
    REQUEST,
    WARM_PER_RUN,
    WARMUP_REQUEST,
    AgentBench,
    Sample,
    async_follow_ups,
    async_measure_requests,
    async_warm_only,
)
from .engines import engine_figures
from .floor import Floor, FloorInput
from .homes import DEMO_HOME, generated_mapping
from .mix import (
    REQUESTS as MIX_REQUESTS,
    SEED as MIX_SEED,
    SIZES as MIX_SIZES,
    async_run_mix,
    mix_figures,
    mix_ratio,
    mix_requests,
)
from .server import SAME_SOURCE, LlamaServer, same_source_llama_server

SIZES = (25, 100, 1000)
SCALING_REQUEST = "Turn off the kitchen ceiling light"
SCALING_EXPECT = ("light.kitchen_ceiling_light", "off")
# The parts of a run, for --only ("prefix-reuse" runs on the demo home, so with it).
SECTIONS = ("demo", "prefix-reuse", "scaling", "mix", "concurrency", "remote", "engine")


@asynccontextmanager
async def home_with_agent(
    mapping: dict[str, Any], model: Path | None, server: str | None, threads: int, force_call: bool = False
) -> AsyncIterator[AgentBench]:
    """A fresh Home Assistant with `mapping` loaded and BotPsy's agent on the model or server."""
    fixture = home_from_mapping(mapping)
    with tempfile.TemporaryDirectory(prefix="botpsy-bench-") as config_dir:
        async with eval_hass(Path(config_dir)) as hass:
            home = await async_load_home(hass, fixture)
            agent = await async_botpsy_agent(hass, model, server, threads)
            yield AgentBench(hass, home, fixture, agent, force_call=force_call)


def write_warm_prompt(task: FloorInput, path: Path) -> None:
    """A warm request's prompt, split where its user turn starts, and its output, for reading."""
    prompt, start = task.prompt, task.user_turn_start
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"{prompt[:start]}\n<<<---- user turn (after the cached prefix) ---->>>\n{prompt[start:]}"
        f"\n<<<---- generated ---->>>\n{task.call_text}\n"
    )


async def floor_input(bench: AgentBench, warms: list[Sample]) -> FloorInput | None:
    """The last warm request, as the engine floor is measured on it: its prompt, where its
    cached prefix and its words start, and its output."""
    last = warms[-1].first if warms else None
    if last is None or not last.request.prompt:
        return None
    prompt = last.request.prompt
    start = await bench.async_user_turn_start(last, REQUEST)
    request = last.request
    # The words as they are in the prompt (after the last "Request:" label, if any).
    words_start = prompt.rfind(REQUEST)
    return FloorInput(
        prompt,
        start,
        words_start if words_start >= start else start,
        last.text,
        last.sampled_tokens,
        request.temperature,
        request.top_k,
        request.top_p,
    )


def engine_options(bench: AgentBench) -> dict[str, int]:
    """The worker's load options, as the agent's entry has them."""
    data = bench.entry_data
    return {
        "n_ctx": int(data[CONF_N_CTX]),
        "n_batch": int(data[CONF_N_BATCH]),
        "n_threads": int(data[CONF_N_THREADS]),
    }


async def embedded_demo(model: Path, args: argparse.Namespace, result: dict[str, Any]) -> dict[str, Any]:
    """Cold and warm on the demo home, the engine floor of the warm request between the
    runs, then prompt reuse of the tiny models on the same home."""
    async with home_with_agent(DEMO_HOME, model, None, args.threads, args.force_call) as bench:
        await bench.async_model_path_only()
        options = engine_options(bench)
        result["engine_options"] = options
        floor: Floor | None = None
        # One thread for all of the floor's llama.cpp calls (see Floor).
        thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-floor")
        loop = asyncio.get_running_loop()

        async def measure_floor(warms: list[Sample]) -> None:
            nonlocal floor
            if floor is None and (task := await floor_input(bench, warms)) is not None:
                logging.getLogger("bench").warning("Engine floor (llama.cpp alone), between the runs")
                floor = await loop.run_in_executor(thread, Floor, str(model), options, task)
            if floor is not None:
                await loop.run_in_executor(thread, floor.measure, WARM_PER_RUN)

        try:
            figures, warms = await async_measure_requests(bench, args.runs, bench.async_reload, after_run=measure_floor)
        finally:
            if floor is not None:
                result["floor"] = floor.figures()
                await loop.run_in_executor(thread, floor.close)
            thread.shutdown()
        figures["worker_rss_mb"] = bench.rss_mb()
        logging.getLogger("bench").warning("A conversation's second turn")
        result["follow_up"] = await async_follow_ups(bench, args.runs)
        if (last := await floor_input(bench, warms)) is not None:
            write_warm_prompt(last, args.out / "warm_prompt_embedded.txt")
        if not args.skip_prefix_reuse:
            await bench.async_remove()
            result["prefix_reuse"] = await prefix_reuse(bench, model, figures, args)
    return figures


async def prefix_reuse(demo: AgentBench, model: Path, main: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The warm request on the demo home with a plain transformer (tiny Qwen3), a sliding-window
    model (gemma-3-270m: the main run's figures when it is the benchmarked model) and a hybrid
    recurrent one (tiny Qwen3.5)."""
    found: dict[str, Any] = {}
    swa_model = resolve(GEMMA)
    with tempfile.TemporaryDirectory(prefix="botpsy-bench-models-") as folder:
        archs: tuple[tuple[str, Literal["qwen3", "qwen35"] | None], ...] = (
            ("transformer", "qwen3"),
            ("swa", None),
            ("hybrid", "qwen35"),
        )
        for label, arch in archs:
            if arch is None and swa_model.resolve() == model.resolve():
                keys = (
                    "prompt_tokens_evaluated_warm",
                    "user_turn_tokens",
                    "user_words_tokens",
                    "warm_latency_s",
                    "warm_ok",
                    "warm_acted",
                )
                found[label] = {
                    "model": "gemma-3-270m (the benchmarked model)",
                    "prompt_tokens": main.get("prompt_tokens_warm"),
                    **{k: main.get(k) for k in keys},
                }
                continue
            path = write_tiny_model(Path(folder) / f"tiny-{arch}.gguf", arch) if arch else swa_model
            agent = await async_botpsy_agent(demo.hass, path, None, args.threads)
            bench = AgentBench(demo.hass, demo.home, demo.fixture, agent, force_call=args.force_call)
            await bench.async_model_path_only()
            figures, _ = await async_warm_only(bench, args.runs, REQUEST, WARMUP_REQUEST, EXPECT)
            name = f"tiny {arch} (random weights)" if arch else "gemma-3-270m (base model)"
            found[label] = {"model": name, **figures}
            await bench.async_remove()
    return found


async def scaling(model: Path, args: argparse.Namespace) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for size in args.sizes:
        async with home_with_agent(generated_mapping(size), model, None, args.threads, args.force_call) as bench:
            await bench.async_model_path_only()
            figures, samples = await async_warm_only(bench, args.runs, SCALING_REQUEST, WARMUP_REQUEST, SCALING_EXPECT)
            first = samples[0] if samples else None
            opening = first.first if first else None
            found[str(size)] = {
                # The first request about the light: in a bigger home, its line is not in the
                # states block yet (the block shows what requests were about lately).
                "first_warm_latency_s": round(first.latency_s, 4) if first else None,
                "first_prompt_tokens_evaluated": opening.timings.evaluated_tokens if opening else None,
                "prompt_tokens": figures["prompt_tokens"],
                "prompt_tokens_evaluated_warm": figures["prompt_tokens_evaluated_warm"],
                "grammar_bytes": figures["grammar_bytes"],
                "warm_latency_s": figures["warm_latency_s"],
                "rss_mb": bench.rss_mb(),
                "event_loop_max_stall_ms": figures["event_loop_max_stall_ms"],
                "event_loop_worst_stall_ms": figures["event_loop_worst_stall_ms"],
                "gc_worst_pause_ms": figures["gc_worst_pause_ms"],
                "warm_ok": figures["warm_ok"],
                "warm_acted": figures["warm_acted"],
                "warm_errors": figures["warm_errors"],
            }
    return found


async def realistic_mix(model: Path, args: argparse.Namespace, context: dict[str, Any]) -> dict[str, Any]:
    """--mix-requests different requests (mix.mix_requests, --mix-seed) on each generated
    home of --mix-sizes, each asked once, in random order, with no warm-up before it; then
    the worker's memory beside the model's."""
    meta = read_gguf_metadata(str(model))
    found: dict[str, Any] = {}
    floors = False
    for size in args.mix_sizes:
        mapping = generated_mapping(size)
        floors = floors or bool(mapping.get("floors"))
        requests = mix_requests(mapping, args.mix_requests, args.mix_seed)
        async with home_with_agent(mapping, model, None, args.threads, args.force_call) as bench:
            options = context.setdefault("engine_options", engine_options(bench))
            results = await async_run_mix(bench, requests, f"{size} entities")
            found[str(size)] = mix_figures(results) | await bench.async_memory(meta, options["n_ctx"])
    key, ratio = mix_ratio(found)
    if key:
        found[key] = ratio
    found["seed"] = args.mix_seed
    # Generated homes have none (their mix names areas); a home with floors gets floor requests.
    found["floors"] = floors
    return found


async def concurrency(model: Path | None, server: LlamaServer | None, args: argparse.Namespace) -> dict[str, Any]:
    """Four requests at once beside one alone (concurrency.async_concurrency), on the demo
    home, through the embedded engine (`model`) or a llama-server started with as many slots."""
    url = server.url if server is not None else None
    async with home_with_agent(DEMO_HOME, model, url, args.threads, args.force_call) as bench:
        return await async_concurrency(bench, args.runs)


async def remote_demo(server: LlamaServer, args: argparse.Namespace) -> dict[str, Any]:
    async with home_with_agent(DEMO_HOME, None, server.url, args.threads, args.force_call) as bench:
        await bench.async_model_path_only()

        async def restart() -> None:
            await server.async_restart()
            await bench.async_reload()

        figures, warms = await async_measure_requests(bench, args.runs, restart)
        if (last := await floor_input(bench, warms)) is not None:
            write_warm_prompt(last, args.out / "warm_prompt_llama_server.txt")
    return figures


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    model = resolve(args.model)
    meta = read_gguf_metadata(str(model))
    report: dict[str, Any] = {"meta": run_meta(args, model, meta)}
    context: dict[str, Any] = {}
    caveats: list[str] = []
    # Built (once) before anything is measured.
    report["meta"]["llama_server"] = await llama_server_binary(args)

    if not args.skip_demo:
        logging.getLogger("bench").warning("End to end, embedded engine, demo home")
        report |= await embedded_demo(model, args, context)
        if "prefix_reuse" in context:
            report["prefix_reuse"] = context["prefix_reuse"]
        report["follow_up"] = context["follow_up"]

    if (floor := context.get("floor")) is not None:
        report |= floor_figures(report, floor)
    elif not args.skip_demo:
        caveats.append("No warm generation was recorded: no engine floor.")

    report |= await embedded_sections(model, args, context)

    # The worker's load options (as the agent's entry has them: those of scripts.evaluation's
    # agent when no embedded home ran), for llama-server and the engine figures.
    options = context.get("engine_options") or {"n_ctx": 8192, "n_batch": 512, "n_threads": args.threads}
    engine = EmbeddedOptions(str(model), options["n_ctx"], options["n_threads"], options["n_batch"])
    template_file = llama_server_template(args, meta)
    if template_file is not None:
        report["meta"]["llama_server_chat_template"] = "BotPsy's fallback for the architecture (the GGUF has none)"
    server = partial(LlamaServer, engine, template_file, report["meta"]["llama_server"])
    await llama_server_sections(server, args, report)

    if not args.skip_engine:
        logging.getLogger("bench").warning("Engine figures, embedded vs llama-server")
        if args.skip_remote:
            report["engine"] = await engine_figures(engine, args.runs, None)
        else:
            async with server() as remote_server:
                report["engine"] = await engine_figures(engine, args.runs, remote_server)

    report |= run_summary(report)
    caveats += outcome_caveats(report)
    report["meta"]["first_round_forced_to_call"] = args.force_call
    caveats += run_caveats(report, args.force_call)
    report["meta"]["load_average_end"] = round(os.getloadavg()[0], 2)
    busiest = max(report["meta"]["load_average"], report["meta"]["load_average_end"])
    if busiest > (os.cpu_count() or 1) * 0.5:
        caveats.append(f"The machine was busy (load average up to {busiest}): times are noisy.")
    report["caveats"] = caveats
    report["meta"]["seconds"] = round(time.monotonic() - started, 1)
    return report


def run_meta(args: argparse.Namespace, model: Path, meta: GGUFMetadata) -> dict[str, Any]:
    """What the run measured with and on, for reading its figures (the load average: how noisy they are)."""
    return {
        "model": meta.name,
        "model_path": str(model),
        "architecture": meta.architecture,
        "file_mb": round((meta.file_size or 0) / 2**20, 1),
        "threads": args.threads,
        "runs": args.runs,
        "warm_requests_per_run": WARM_PER_RUN,
        "cpu_count": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "ha_version": ha_version,
    }


async def llama_server_binary(args: argparse.Namespace) -> str:
    """The llama-server binary, built first when it is the same-source one and any part runs it."""
    binary: str = args.llama_server
    if binary == SAME_SOURCE and not (args.skip_remote and not args.concurrency_remote):
        binary = await asyncio.to_thread(same_source_llama_server)
    return binary


def floor_figures(report: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """The engine floor and the embedded warm request's ratios to it, so HA's overhead reads at a glance."""
    found: dict[str, Any] = {
        "floor": floor,
        "engine_floor_s": floor["engine_floor_s"],
        "engine_floor_batched_s": floor["engine_floor_batched_s"],
    }
    if report.get("warm_latency_s") and floor["engine_floor_s"]:
        found["ratio_warm_to_floor"] = round(report["warm_latency_s"] / floor["engine_floor_s"], 3)
    if report.get("warm_latency_s") and floor["engine_floor_batched_s"]:
        found["ratio_warm_to_floor_batched"] = round(report["warm_latency_s"] / floor["engine_floor_batched_s"], 3)
    # The floor's exact split of the same prompt (the HA side counts the two parts apart).
    found["user_turn_tokens"] = floor["user_turn_tokens"]
    return found


async def embedded_sections(model: Path, args: argparse.Namespace, context: dict[str, Any]) -> dict[str, Any]:
    """Scaling, the realistic mix and requests at once on the embedded engine, each unless skipped."""
    log = logging.getLogger("bench")
    found: dict[str, Any] = {}
    if not args.skip_scaling:
        log.warning("Scaling: generated homes of %s entities", ", ".join(map(str, args.sizes)))
        found["scaling"] = await scaling(model, args)
    if not args.skip_mix:
        log.warning(
            "Realistic mix: %d different requests on generated homes of %s entities",
            args.mix_requests,
            ", ".join(map(str, args.mix_sizes)),
        )
        found["mix"] = await realistic_mix(model, args, context)
    if not args.skip_concurrency:
        log.warning("Several at once: %d requests together, embedded engine", AT_ONCE)
        found["concurrency"] = {"embedded": await concurrency(model, None, args)}
    return found


def llama_server_template(args: argparse.Namespace, meta: GGUFMetadata) -> Path | None:
    """For a GGUF without a chat template (a base model such as gemma-3-270m), the file of
    BotPsy's fallback for the architecture, which the embedded engine uses: llama-server gets
    the same one, so both render the same prompt."""
    if meta.chat_template:
        return None
    template_file: Path = args.out / "chat_template.jinja"
    args.out.mkdir(parents=True, exist_ok=True)
    template_file.write_text(fallback_template(meta.architecture))
    return template_file


async def llama_server_sections(
    server: Callable[..., LlamaServer], args: argparse.Namespace, report: dict[str, Any]
) -> None:
    """The demo home through llama-server (beside the embedded figures) and its requests at
    once, each unless skipped; `server` starts one as the embedded engine loads the model."""
    log = logging.getLogger("bench")
    if not args.skip_remote:
        log.warning("End to end, llama-server")
        async with server() as remote_server:
            remote = await remote_demo(remote_server, args)
        if "engine_floor_s" in report and remote.get("warm_latency_s"):
            remote["ratio_warm_to_floor"] = round(remote["warm_latency_s"] / report["engine_floor_s"], 3)
            remote["ratio_warm_to_floor_batched"] = round(
                remote["warm_latency_s"] / report["engine_floor_batched_s"], 3
            )
        if report.get("warm_latency_s") and remote.get("warm_latency_s"):
            remote["ratio_to_embedded"] = round(remote["warm_latency_s"] / report["warm_latency_s"], 3)
        report["remote"] = remote
    if args.concurrency_remote:
        log.warning("Several at once: %d requests together, llama-server with %d slots", AT_ONCE, AT_ONCE)
        async with server(parallel=AT_ONCE) as remote_server:
            report.setdefault("concurrency", {})["remote"] = await concurrency(None, remote_server, args)


def run_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The figures across the whole run: the scaling ratio and the worst stalls anywhere."""
    found: dict[str, Any] = {}
    if scaling_figures := report.get("scaling"):
        sizes = sorted(scaling_figures, key=int)
        smallest, largest = scaling_figures[sizes[0]], scaling_figures[sizes[-1]]
        if smallest.get("warm_latency_s") and largest.get("warm_latency_s"):
            found["scaling_ratio_warm"] = round(largest["warm_latency_s"] / smallest["warm_latency_s"], 3)
    found["event_loop_worst_stall_ms_anywhere"] = worst_stall(report)
    found["gc_worst_pause_ms_anywhere"] = worst_stall(report, "gc_worst_pause_ms")
    return found


def run_caveats(report: dict[str, Any], force_call: bool) -> list[str]:
    """How the run differs from a user's requests, so nobody reads its figures as theirs."""
    caveats = []
    if force_call:
        caveats.append(
            "Each request's first round was forced to call a tool (--force-call: the grammar without its "
            "text branch), as a tool-tuned model would choose: a base model never calls on its own. Which "
            "call it makes is its own choice; *_ok says whether it was the right one."
        )
    remote_prompt = (report.get("remote") or {}).get("prompt_tokens_warm") or 0
    embedded_prompt = report.get("prompt_tokens_warm") or 0
    if remote_prompt and embedded_prompt and abs(remote_prompt - embedded_prompt) > 0.1 * embedded_prompt:
        caveats.append(
            f"llama-server's warm prompt has {remote_prompt} tokens, the embedded engine's {embedded_prompt}: "
            "not the same prompt (chat templates differ?), see warm_prompt_*.txt"
        )
    return caveats


def worst_stall(report: dict[str, Any], key: str = "event_loop_worst_stall_ms") -> float | None:
    """The event loop's largest stall (or, by `key`, garbage collection) in any warm
    request of the run (every engine, home and model)."""
    parts = [report, report.get("remote") or {}]
    parts += list((report.get("prefix_reuse") or {}).values()) + list((report.get("scaling") or {}).values())
    parts += [v for k, v in (report.get("mix") or {}).items() if k.isdigit()]
    stalls = [p[key] for p in parts if p.get(key) is not None]
    return max(stalls, default=None)


def outcome_caveats(report: dict[str, Any]) -> list[str]:
    """What went wrong in the requests, so nobody reads a failed request's time as a latency."""
    parts = {"embedded": report, "llama-server": report.get("remote") or {}}
    parts |= {f"prefix_reuse {k}": v for k, v in (report.get("prefix_reuse") or {}).items()}
    parts |= {f"scaling {k}": v for k, v in (report.get("scaling") or {}).items()}
    caveats = []
    for name, figures in parts.items():
        for kind in ("warm", "cold"):
            if errors := figures.get(f"{kind}_errors"):
                caveats.append(f"{name}, {kind}: engine or agent errors (not in the medians): {errors[0][:200]}")
            acted = str(figures.get(f"{kind}_acted", ""))
            if acted and acted.split("/")[0] == "0":
                caveats.append(
                    f"{name}, {kind}: no service ran (the model answered with text): the latency is that "
                    "answer's, not a call's"
                )
            elif ok := str(figures.get(f"{kind}_ok", "")):
                done, total = ok.split("/")
                if done != total:
                    caveats.append(f"{name}, {kind}: the expected light turned off in {ok} requests")
    mix = report.get("mix") or {}
    for size, figures in ((k, v) for k, v in mix.items() if k.isdigit()):
        if errors := figures.get("errors"):
            caveats.append(f"mix {size}: engine or agent errors (not in the percentiles): {errors[0][:200]}")
        if figures.get("right_share") is not None and figures["right_share"] < 1:
            caveats.append(
                f"mix {size}: the outcome was right in {figures['right']} requests (see mix.{size}.wrong): "
                "a fast wrong answer is no success"
            )
    if mix and not mix.get("floors"):
        caveats.append("mix: generated homes have no floors, so the mix names devices and areas, no floors.")
    return caveats


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"GGUF file: a path or a short name of scripts/models.py (default: {DEFAULT_MODEL})",
    )
    parser.add_argument("--runs", type=int, default=5, help="repetitions; figures are medians")
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    parser.add_argument("--skip-remote", action="store_true", help="no llama-server figures")
    parser.add_argument(
        "--llama-server",
        default=SAME_SOURCE,
        help=f"the llama-server binary for the remote figures, e.g. llama-server (Debian's, on PATH); default: "
        f"{SAME_SOURCE}, built from the embedded engine's llama.cpp sources (cached; minutes the first time)",
    )
    parser.add_argument("--skip-scaling", action="store_true", help="no generated homes")
    parser.add_argument("--skip-prefix-reuse", action="store_true", help="no tiny-model prompt reuse figures")
    parser.add_argument("--skip-engine", action="store_true", help="no engine-level rates")
    parser.add_argument(
        "--force-call",
        action="store_true",
        help="each request's first round must call a tool, as a tool-tuned model would (for base models, "
        "such as gemma-3-270m, that never do; default: the model may answer in text)",
    )
    parser.add_argument("--sizes", type=_sizes, default=SIZES, help="scaling's home sizes, e.g. 25,100")
    parser.add_argument("--skip-demo", action="store_true", help="no demo-home figures (cold, warm, floor, follow-up)")
    parser.add_argument("--skip-mix", action="store_true", help="no realistic mix of requests")
    parser.add_argument("--skip-concurrency", action="store_true", help="no requests at once")
    parser.add_argument(
        "--mix-requests",
        type=int,
        default=MIX_REQUESTS,
        help=f"different requests per home in the realistic mix (default {MIX_REQUESTS}; each asked once, "
        "--runs does not repeat them)",
    )
    parser.add_argument(
        "--mix-sizes",
        type=_sizes,
        default=MIX_SIZES,
        help=f"the mix's generated home sizes (default {','.join(map(str, MIX_SIZES))})",
    )
    parser.add_argument("--mix-seed", type=int, default=MIX_SEED, help="the mix's requests and order")
    parser.add_argument(
        "--only",
        type=lambda s: tuple(p.strip() for p in s.split(",") if p.strip()),
        default=(),
        help=f"only these parts, e.g. mix or scaling,mix (of {', '.join(SECTIONS)}); the --skip-* of the others",
    )
    args = parser.parse_args(argv)
    llama_server_wanted = not args.skip_remote
    if args.only:
        if unknown := set(args.only) - set(SECTIONS):
            parser.error(f"--only: unknown part {', '.join(sorted(unknown))} (of {', '.join(SECTIONS)})")
        wanted = set(args.only)
        args.skip_demo = args.skip_demo or not wanted & {"demo", "prefix-reuse"}
        for part in SECTIONS[1:]:
            name = f"skip_{part.replace('-', '_')}"
            setattr(args, name, getattr(args, name) or part not in wanted)
    # llama-server's own part, or its side of "concurrency" (unless --skip-remote said none).
    args.concurrency_remote = not args.skip_concurrency and llama_server_wanted
    if args.mix_requests < 1:
        parser.error("--mix-requests: at least 1")
    return args


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(","))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="[%(asctime)s] %(message)s", datefmt="%H:%M:%S")
    try:
        report = asyncio.run(bench(args))
    except ModelError as err:
        raise SystemExit(f"scripts/bench: --model: {err}") from err
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (args.out / "bench.md").write_text(reports.markdown(report))
    written = reports.plots(report, args.out)
    print(f"Wrote {args.out / 'bench.json'}, bench.md, {', '.join(p.name for p in written)}", file=sys.stderr)
    print(reports.summary(report))


if __name__ == "__main__":
    main()
