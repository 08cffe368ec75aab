"""report.json / report.md / report.png from case results."""

from __future__ import annotations

import json
from pathlib import Path

from scripts.evaluation.report import CaseResult, SuiteInfo, build, chart, markdown, score_line


def result(case_id: str, category: str, passed: bool, failure: str | None = None, group: str = "") -> CaseResult:
    return CaseResult(
        id=case_id,
        home="home",
        category=category,
        group=group or case_id,
        sentence=f"sentence {case_id}",
        passed=passed,
        failure=failure,
        detail="" if passed else "light.kitchen: state='off' (expected 'on')",
        expected_changes={"light.kitchen": {"state": "on"}},
        actual_changes={} if not passed else {"light.kitchen": {"state": "on"}},
        calls=[{"name": "light", "arguments": {"entity_id": "light.kitchen", "action": "turn_on"}, "valid": True,
                "executed": passed, "error": None}],
        reply="Turned on the kitchen light." if passed else "Sorry",
        latency_s=1.5,
        prompt_tokens=900,
        decoded_tokens=30,
        passed_runs=int(passed),
    )  # fmt: skip


def test_report_files(tmp_path: Path) -> None:
    ours = [result("a", "light", True), result("b", "light", False, "no action"), result("c", "lock", False, "timeout")]
    theirs = [result("a", "light", True), result("b", "light", True), result("c", "lock", False, "no action")]
    report = build(SuiteInfo("mini", "assist"), {"kind": "botpsy", "engine": "embedded"}, ours, theirs)
    assert report["summary"] == {"passed": 1, "total": 3, "score": 33.3}
    assert report["groups"] == {"passed": 1, "total": 3, "score": 33.3}
    assert report["categories"] == {
        "light": {"passed": 1, "total": 2, "score": 50.0},
        "lock": {"passed": 0, "total": 1, "score": 0.0},
    }
    assert report["failures"] == {"no action": 1, "timeout": 1}
    assert report["baseline"]["summary"]["score"] == 66.7
    case = report["cases"][1]
    for key in ("sentence", "passed", "failure", "expected_changes", "actual_changes", "calls", "reply",
                "latency_s", "prompt_tokens", "decoded_tokens"):  # fmt: skip
        assert key in case
    assert set(case["calls"][0]) == {"name", "arguments", "valid", "executed", "error"}
    json.dumps(report)

    text = markdown(report)
    assert "| **all** | 1/3 (33.3%) | 2/3 (66.7%) |" in text
    assert "| lock | 0/1 (0.0%) | 0/1 (0.0%) |" in text
    assert "### no action (1)" in text and "### timeout (1)" in text
    assert "sentence b" in text
    assert score_line(report) == "mini: 1/3 (33.3%)"

    chart(report, tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_test_passes_only_when_every_phrasing_does() -> None:
    results = [result("t1/0", "light", True, group="t1"), result("t1/1", "light", False, "no action", group="t1"),
               result("t2/0", "light", True, group="t2")]  # fmt: skip
    report = build(SuiteInfo("homes", "assist"), {"kind": "botpsy"}, results, [])
    assert report["summary"]["passed"] == 2
    assert report["groups"] == {"passed": 1, "total": 2, "score": 50.0}
    assert "| tests with every phrasing right | 1/2 (50.0%) |" in markdown(report)
