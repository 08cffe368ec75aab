"""scripts/eval: how often a request ends in the right state, BotPsy beside HA's built-in agent.

Loads each home of the suite (either format, detected) into a real Home Assistant, sends
every sentence to the agent and scores the outcome as the suite's own project does.
Writes report.json, report.md and report.png to --out; the last line printed is the
overall score. Seeded: two runs of the same model give the same answers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
from pathlib import Path
import sys

from homeassistant.helpers.llm import LLM_API_ASSIST
from tqdm import tqdm

from custom_components.botpsy.const import DOMAIN
from scripts.models import DEFAULT_MODEL, ModelError, resolve

from . import report as reports
from .dataset import DatasetError, load_suite
from .run import AgentSpec, CaseResult, async_run_suite

# --tools: the HA LLM APIs BotPsy's conversation agent uses (its own, HA's Assist API, or both).
TOOLS = {"botpsy": (DOMAIN,), "assist": (LLM_API_ASSIST,), "both": (DOMAIN, LLM_API_ASSIST)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/eval", description=__doc__)
    parser.add_argument("--dataset", type=Path, required=True, help="a suite folder (assist or intents format)")
    parser.add_argument("--agent", choices=("botpsy", "builtin"), default="botpsy")
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"GGUF for the embedded engine: a path or a short name of scripts/models.py (default: {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--tools", choices=tuple(TOOLS), default="botpsy", help="HA LLM APIs of the BotPsy agent (default: botpsy)"
    )
    parser.add_argument("--server", help="URL of an OpenAI-compatible server instead of the embedded engine")
    parser.add_argument("--runs", type=int, default=1, help="runs of every sentence")
    parser.add_argument("--out", type=Path, default=Path("out/eval"))
    parser.add_argument("--confirm", action="store_true", help='answer "yes" once when the agent asks to confirm')
    parser.add_argument("--no-baseline", action="store_true", help="do not run HA's built-in agent beside BotPsy")
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    parser.add_argument("--limit", type=int, help="only the first N sentences (a quick try)")
    parser.add_argument("--per-test", type=int, help="only the first N phrasings of every test")
    return parser.parse_args(argv)


async def evaluate(args: argparse.Namespace) -> dict[str, object]:
    suite = load_suite(args.dataset)
    if args.per_test:
        suite = suite.first_phrasings(args.per_test)
    if args.limit:
        suite = suite.limited(args.limit)
    spec = AgentSpec(
        kind=args.agent,
        model=resolve(args.model) if args.agent == "botpsy" and not args.server else None,
        server=args.server,
        tools=TOOLS[args.tools],
        threads=args.threads,
        confirm=args.confirm,
        timeout_s=args.timeout,
    )
    agents = [spec]
    if args.agent == "botpsy" and not args.no_baseline:
        agents.insert(0, AgentSpec(kind="builtin", confirm=args.confirm, timeout_s=args.timeout))
    results: dict[str, list[CaseResult]] = {}
    total = len(suite.cases) * args.runs * len(agents)
    with tqdm(total=total, unit="case", file=sys.stderr, dynamic_ncols=True) as bar:
        for agent in agents:
            bar.set_description(f"{suite.name} / {agent.kind}")

            def progress(result: CaseResult) -> None:
                bar.update(result.runs)
                bar.set_postfix_str("pass" if result.passed else (result.failure or "fail"))

            results[agent.kind] = await async_run_suite(suite, agent, args.runs, progress)
    described = {"kind": spec.kind, "runs": args.runs, "confirm": args.confirm}
    if spec.kind == "botpsy":
        described |= {"engine": "remote" if spec.server else "embedded", "tools": list(spec.tools or ())}
        # The model that ran: its file name (the path is where this machine keeps it).
        if spec.model:
            described |= {"model": spec.model.name, "model_path": str(spec.model)}
        else:
            described["model"] = spec.server
    baseline = results.get("builtin", []) if spec.kind == "botpsy" else []
    languages = {str(home.fixture.get("language") or "en") for home in suite.homes}
    language = languages.pop() if len(languages) == 1 else "en"
    return reports.build(reports.SuiteInfo(suite.name, suite.format, language), described, results[spec.kind], baseline)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # Said once per home loaded: the custom integrations are ours, the zlib fallback harmless.
    for noisy in ("homeassistant.loader", "aiohttp_fast_zlib"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    try:
        report = asyncio.run(evaluate(args))
    except DatasetError as err:
        raise SystemExit(f"scripts/eval: {err}") from err
    except ModelError as err:
        raise SystemExit(f"scripts/eval: --model: {err}") from err
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    (args.out / "report.md").write_text(reports.markdown(report))
    reports.chart(report, args.out / "report.png")
    print(f"Report: {args.out / 'report.md'}")
    if "baseline" in report:
        print(reports.score_line({**report, "suite": f"{report['suite']} (HA built-in agent)", **report["baseline"]}))
    print(reports.score_line(report))


if __name__ == "__main__":
    main()
