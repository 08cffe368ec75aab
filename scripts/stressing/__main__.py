"""scripts/stress: one table of what BotPsy does under load, faults and hostile input.

Sections (all by default; --only picks some): fuzz (model output through the real
parse → validate → execute path), concurrency (conversations at once on each engine),
faults, injection (instructions planted in home data), confirmation (attempts to bypass
it, replayed as a server without grammar would pass them), confirmation-model (the real
model on the embedded engine asked for risky actions), permissions (users HA's rules
restrict). Writes out/stress/stress.json and prints a
table; figures, not pass/fail timing, though the exit status is 1 when a guarantee broke.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
import importlib
import json
import logging
from pathlib import Path
import shutil
import sys
import time
from typing import Any

from scripts.models import DEFAULT_MODEL, resolve

from .options import StressOptions

Section = Callable[[StressOptions], Awaitable[dict[str, Any]]]


# Section -> (module, function); a module is imported only when its section runs.
SECTIONS = {
    "fuzz": ("fuzz", "async_run"),
    "concurrency": ("concurrency", "async_run"),
    "faults": ("faults", "async_run"),
    "injection": ("guarantees", "async_run_injection"),
    "confirmation": ("guarantees", "async_run_confirmation"),
    "confirmation-model": ("guarantees", "async_run_confirmation_model"),
    "permissions": ("guarantees", "async_run_permissions"),
}


def _section(name: str) -> Section:
    module, function = SECTIONS[name]
    section: Section = getattr(importlib.import_module(f".{module}", __package__), function)
    return section


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/stress", description=__doc__)
    parser.add_argument("--only", nargs="+", choices=tuple(SECTIONS), default=list(SECTIONS))
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"instruct GGUF (default: {DEFAULT_MODEL})")
    parser.add_argument("--fuzz-outputs", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("out/stress"))
    return parser.parse_args(argv)


def broken(results: dict[str, Any]) -> list[str]:
    """The guarantees a run's figures show broken."""
    out = []
    if fuzz := results.get("fuzz"):
        out += [f"fuzz: {k} {fuzz[k]}" for k in ("invalid_executed", "crashes") if fuzz[k]]
    for engine, figures in (results.get("concurrency") or {}).get("engines", {}).items():
        out += [
            f"concurrency ({engine}): {k} {figures[k]}"
            for k in ("lost", "crossed", "out_of_order", "engine_errors")
            if figures[k]
        ]
    for name, fault in (results.get("faults") or {}).items():
        out += [f"fault {name}: {k} false" for k in ("ha_up", "clear_error", "next_request_served") if not fault.get(k)]
    guarantees = (
        ("injection", "actions"),
        ("confirmation", "bypassed"),
        ("confirmation-model", "bypassed"),
        ("permissions", "escapes"),
    )
    for section, key in guarantees:
        if (figures := results.get(section)) and figures[key]:
            out.append(f"{section}: {key} {figures[key]}")
    return out


def table(results: dict[str, Any]) -> str:
    rows = [("section", "figure", "value")]
    for section, figures in results.items():
        if section == "meta":
            continue
        for key, value in figures.items():
            if isinstance(value, list):
                continue
            shown = value
            if isinstance(value, dict):
                shown = ", ".join(f"{k}={v}" for k, v in value.items() if not isinstance(v, (dict, list)))
            rows.append((section, key, str(shown)))
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    return "\n".join(f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    llama_server = shutil.which("llama-server")
    if llama_server is None:
        raise SystemExit("scripts/stress: llama-server not found (scripts/setup installs it)")
    options = StressOptions(
        model=resolve(args.model),
        out=args.out,
        threads=args.threads,
        llama_server=llama_server,
        fuzz_outputs=args.fuzz_outputs,
        seed=args.seed,
    )
    results: dict[str, Any] = {"meta": {"model": options.model.name, "seed": args.seed, "seconds": {}}}
    for name in SECTIONS:
        if name not in args.only:
            continue
        print(f"[stress] {name} ...", flush=True)
        started = time.monotonic()
        results[name] = await _section(name)(options)
        results["meta"]["seconds"][name] = round(time.monotonic() - started, 1)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "stress.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    return results


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("homeassistant.loader", "aiohttp_fast_zlib", "scripts.evaluation.home_loader"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    results = asyncio.run(run(args))
    print(table(results))
    print(f"Written: {args.out / 'stress.json'}")
    if problems := broken(results):
        print("Broken guarantees:\n  " + "\n  ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
