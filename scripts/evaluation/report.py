"""report.json, report.md and a PNG chart of one evaluation (and its baseline)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
import re
from typing import Any


@dataclass(slots=True)
class CaseResult:
    """One sentence's result, as report.json lists it (runs merged)."""

    id: str
    home: str
    category: str
    group: str
    sentence: str
    passed: bool
    failure: str | None
    detail: str
    expected_changes: dict[str, Any]
    actual_changes: dict[str, Any]
    calls: list[dict[str, Any]]
    reply: str
    latency_s: float
    prompt_tokens: int
    decoded_tokens: int
    runs: int = 1
    passed_runs: int = 0
    expected_error: str | None = None
    # Its number in its conversation (multi-turn cases; the conversation is its group).
    turn: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


FAILURE_ORDER = (
    "wrong target", "wrong value", "no action", "extra action", "format error", "timeout", "apology", "wrong answer",
)  # fmt: skip


def summary(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Passed runs over all runs (one run per sentence unless --runs says more)."""
    passed = sum(r.passed_runs for r in results)
    total = sum(r.runs for r in results)
    return {"passed": passed, "total": total, "score": round(100 * passed / total, 1) if total else 0.0}


def groups(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Tests whose every phrasing passed, over all tests (a test: one request, said several ways)."""
    by_test: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        by_test[result.group].append(result)
    passed = sum(all(r.passed for r in group) for group in by_test.values())
    total = len(by_test)
    return {"passed": passed, "total": total, "score": round(100 * passed / total, 1) if total else 0.0}


def conversations(results: Sequence[CaseResult]) -> dict[str, Any] | None:
    """Conversations whose every turn passed, over all conversations; None without any."""
    turns = [r for r in results if r.turn is not None]
    return groups(turns) if turns else None


def by_category(results: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for result in results:
        groups[result.category].append(result)
    return {name: summary(group) for name, group in sorted(groups.items())}


def failures(results: Sequence[CaseResult]) -> dict[str, int]:
    counts = Counter(r.failure for r in results if r.failure)
    return {cause: counts[cause] for cause in sorted(counts, key=_failure_rank)}


def _failure_rank(cause: str) -> tuple[int, str]:
    return (FAILURE_ORDER.index(cause) if cause in FAILURE_ORDER else len(FAILURE_ORDER), cause)


# Words that English replies have and replies in the other languages BotPsy claims rarely do.
_ENGLISH = re.compile(r"\b(?:the|is|was|were|did|not|nothing|changed|sorry|done|which|what|you|could|found)\b", re.I)


def english_replies(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Replies that read as English (two or more of its common words), for a suite in
    another language: each should be in the suite's language."""
    english = [r for r in results if len(set(w.lower() for w in _ENGLISH.findall(r.reply))) >= 2]
    return {"english": len(english), "total": len(results), "examples": [r.reply for r in english[:10]]}


def _latency(results: Sequence[CaseResult]) -> dict[str, float]:
    values = sorted(r.latency_s for r in results)
    if not values:
        return {}
    return {"median_s": values[len(values) // 2], "p90_s": values[min(len(values) - 1, int(0.9 * len(values)))]}


@dataclass(slots=True)
class SuiteInfo:
    """The suite a report is of, as its heading names it (replies are checked for a language other than English)."""

    name: str
    format: str
    language: str = "en"


def build(
    suite: SuiteInfo, agent: dict[str, Any], results: Sequence[CaseResult], baseline: Sequence[CaseResult]
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "suite": suite.name,
        "format": suite.format,
        "agent": agent,
        "summary": summary(results),
        "groups": groups(results),
        **({"conversations": talk} if (talk := conversations(results)) else {}),
        "categories": by_category(results),
        "failures": failures(results),
        "latency": _latency(results),
        **({"language": suite.language, "english_replies": english_replies(results)} if suite.language != "en" else {}),
        "cases": [r.as_dict() for r in results],
    }
    if baseline:
        report["baseline"] = {
            "agent": {"kind": "builtin"},
            "summary": summary(baseline),
            "groups": groups(baseline),
            **({"conversations": talk} if (talk := conversations(baseline)) else {}),
            "categories": by_category(baseline),
            "failures": failures(baseline),
            **({"english_replies": english_replies(baseline)} if suite.language != "en" else {}),
            "cases": [r.as_dict() for r in baseline],
        }
    return report


def markdown(report: dict[str, Any]) -> str:
    name = report["suite"]
    base = report.get("baseline")
    agent = report["agent"]
    label = agent["kind"] + (f" ({agent['engine']})" if agent.get("engine") else "")
    head = f"| | {label} |" + (" HA built-in agent |" if base else "")
    rule = "|---|---|" + ("---|" if base else "")

    def row(title: str, ours: dict[str, Any], theirs: dict[str, Any] | None) -> str:
        cell = f"{ours['passed']}/{ours['total']} ({ours['score']}%)"
        other = f" {theirs['passed']}/{theirs['total']} ({theirs['score']}%) |" if theirs else (" - |" if base else "")
        return f"| {title} | {cell} |{other}"

    lines = [f"# Evaluation: {name} ({report['format']} format)", "", head, rule]
    lines.append(row("**all**", report["summary"], base["summary"] if base else None))
    if "groups" in report:
        lines.append(row("tests with every phrasing right", report["groups"], base.get("groups") if base else None))
    if "conversations" in report:
        theirs = base.get("conversations") if base else None
        lines.append(row("conversations with every turn right", report["conversations"], theirs))
    for category, figures in report["categories"].items():
        lines.append(row(category, figures, base["categories"].get(category) if base else None))
    if report.get("latency"):
        lat = report["latency"]
        lines += ["", f"Latency per request: median {lat['median_s']} s, 90th percentile {lat['p90_s']} s."]
    lines += ["", "## Failures by cause", ""]
    failed = [c for c in report["cases"] if not c["passed"]]
    if not failed:
        lines.append("None.")
    for cause in report["failures"]:
        group = [c for c in failed if c["failure"] == cause]
        lines += [f"### {cause} ({len(group)})", ""]
        for case in group:
            calls = ", ".join(f"{c['name']}({c['arguments']})" for c in case["calls"]) or "no calls"
            detail = case["detail"] or "-"
            lines.append(f"- `{case['id']}` {case['sentence']!r}: {detail}; {calls}; reply {case['reply']!r}")
        lines.append("")
    return "\n".join(lines) + "\n"


def chart(report: dict[str, Any], path: Path) -> None:
    """Scores per category, the agent beside HA's built-in one."""
    # matplotlib (heavy) only for the chart; pyplot only once the Agg backend is chosen.
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    categories = ["all", *report["categories"]]
    ours = [report["summary"]["score"], *(v["score"] for v in report["categories"].values())]
    base = report.get("baseline")
    width = 0.4 if base else 0.6
    figure, axes = plt.subplots(figsize=(max(6.0, 1.1 * len(categories)), 4.0))
    positions = range(len(categories))
    axes.bar([p - (width / 2 if base else 0) for p in positions], ours, width, label=report["agent"]["kind"])
    if base:
        theirs = [base["summary"]["score"], *(base["categories"].get(c, {}).get("score", 0) for c in categories[1:])]
        axes.bar([p + width / 2 for p in positions], theirs, width, label="HA built-in agent")
    axes.set_xticks(list(positions), categories, rotation=30, ha="right")
    axes.set_ylabel("score (%)")
    axes.set_ylim(0, 100)
    axes.set_title(f"{report['suite']}: share of sentences ending in the right state")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def score_line(report: dict[str, Any]) -> str:
    s = report["summary"]
    return f"{report['suite']}: {s['passed']}/{s['total']} ({s['score']}%)"
