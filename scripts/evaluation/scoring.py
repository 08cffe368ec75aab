"""Scoring of one case, as each suite's original project scores it (no Home Assistant here).

End-state (assist) suites: the state of every entity of the home after the request must
equal the state before it overlaid with the case's `expect_changes` (no other entity or
attribute changed, `ignore_changes` aside), and the reply must not apologise. Tool-call
(intents) suites: the request must reach the same targets with the same effect as HA's
own handling of the expected intent with its slots; a question must be answered with the
values HA's answer holds.

A failing case gets one cause, for the report's grouping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
import enum
import math
import re
from typing import Any

# entity id -> {"state": ..., attribute: value, ...}
Snapshot = dict[str, dict[str, Any]]
# entity id -> {key: new value} (None: the key went away)
Changes = dict[str, dict[str, Any]]

APOLOGY = re.compile(r"\bsorry\b", re.IGNORECASE)
NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")


class Failure(enum.StrEnum):
    """Why a case failed, most specific first."""

    TIMEOUT = "timeout"
    FORMAT_ERROR = "format error"
    NO_ACTION = "no action"
    WRONG_TARGET = "wrong target"
    EXTRA_ACTION = "extra action"
    WRONG_VALUE = "wrong value"
    APOLOGY = "apology"
    WRONG_ANSWER = "wrong answer"
    ERROR = "error"


@dataclass(slots=True)
class Call:
    """A call the agent made, as the report lists it."""

    name: str
    arguments: dict[str, Any]
    valid: bool = True
    executed: bool = False
    error: str | None = None


@dataclass(slots=True)
class Outcome:
    """What came of sending a sentence (or of HA handling the expected intent)."""

    changes: Changes
    # Entities that state-changing service calls targeted (intents scoring).
    targets: set[str] = field(default_factory=set)
    reply: str = ""
    calls: list[Call] = field(default_factory=list)
    timed_out: bool = False
    error: str | None = None


@dataclass(slots=True)
class Expectation:
    """What an assist-suite case expects: its changes (nothing else may change), what to ignore, the reply's words."""

    changes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    ignore: Mapping[str, Iterable[str]] = field(default_factory=dict)
    # Words of which the reply must hold one (a question's answer); none: any reply.
    response: Iterable[str] = ()
    # Facts the reply must hold, every one (states and numbers, as the intents suites check them).
    facts: str = ""


@dataclass(slots=True)
class Verdict:
    passed: bool
    failure: Failure | None
    detail: str
    expected_changes: Changes


def _in_range(expected: Mapping[str, Any], value: Any) -> bool:
    """`value` within a case's range (`below`, `above`, `between: [low, high]`)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    low, high = expected.get("between") or (None, None)
    return (
        ("below" not in expected or number < float(expected["below"]))
        and ("above" not in expected or number > float(expected["above"]))
        and (low is None or float(low) <= number <= float(high))
    )


RANGE_KEYS = frozenset({"below", "above", "between"})


def same(a: Any, b: Any) -> bool:
    """Equal as the original scorer compares (str() equal too), numbers within rounding;
    an expected range (`{below: 200}`, for "dimmer") holds the values in it."""
    for expected, value in ((a, b), (b, a)):
        if isinstance(expected, Mapping) and expected and expected.keys() <= RANGE_KEYS:
            return _in_range(expected, value)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if a == b or str(a) == str(b):
        return True
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
    except (TypeError, ValueError):
        return False


def diff(before: Snapshot, after: Snapshot, ignore: Mapping[str, Iterable[str]] | None = None) -> Changes:
    """What differs between two snapshots, as new values."""
    result: Changes = {}
    for entity_id in sorted(before.keys() | after.keys()):
        old, new = before.get(entity_id, {}), after.get(entity_id, {})
        ignored = set((ignore or {}).get(entity_id, ()))
        keys = (old.keys() | new.keys()) - ignored
        changed = {k: new.get(k) for k in keys if not same(old.get(k), new.get(k))}
        if changed:
            result[entity_id] = dict(sorted(changed.items()))
    return result


def overlay(snapshot: Snapshot, expect_changes: Mapping[str, Mapping[str, Any]]) -> Snapshot:
    """The snapshot as the case expects it afterwards."""
    result = {entity_id: dict(values) for entity_id, values in snapshot.items()}
    for entity_id, change in expect_changes.items():
        target = result.setdefault(entity_id, {})
        if "state" in change:
            target["state"] = change["state"]
        target.update(change.get("attributes") or {})
    return result


def apologises(reply: str) -> bool:
    return bool(APOLOGY.search(reply))


def _cause(expected: Changes, actual: Changes, outcome: Outcome) -> Failure:
    """The cause of a wrong end state."""
    if not actual:
        if any(not c.valid for c in outcome.calls):
            return Failure.FORMAT_ERROR
        return Failure.NO_ACTION
    if expected and not expected.keys() & actual.keys():
        return Failure.WRONG_TARGET
    if actual.keys() - expected.keys():
        return Failure.EXTRA_ACTION
    return Failure.WRONG_VALUE


def score_end_state(before: Snapshot, after: Snapshot, expect: Expectation, outcome: Outcome) -> Verdict:
    """An assist-suite case: the whole home's end state, and no apology."""
    wanted = overlay(before, expect.changes)
    expected = diff(before, wanted, expect.ignore)
    unexpected = diff(wanted, after, expect.ignore)
    actual = diff(before, after, expect.ignore)
    words = [w.lower() for w in expect.response]
    if outcome.timed_out:
        return Verdict(False, Failure.TIMEOUT, "no answer in time", expected)
    if unexpected:
        detail = "; ".join(
            f"{e}: " + ", ".join(f"{k}={v!r} (expected {wanted.get(e, {}).get(k)!r})" for k, v in keys.items())
            for e, keys in unexpected.items()
        )
        return Verdict(False, _cause(expected, actual, outcome), detail, expected)
    if expected and apologises(outcome.reply):
        return Verdict(False, Failure.APOLOGY, f"right state, but the reply apologises: {outcome.reply!r}", expected)
    if words and not any(w in outcome.reply.lower() for w in words):
        return Verdict(False, Failure.WRONG_ANSWER, f"the reply names none of {words}", expected)
    if missing := _missing_facts(expect.facts, outcome.reply):
        return Verdict(False, Failure.WRONG_ANSWER, f"the reply lacks {missing}", expected)
    return Verdict(True, None, "", expected)


def score_target(target: str, outcome: Outcome) -> Verdict:
    """A device-actions case: the request acts on its group's entity, and on nothing else.

    Acting is calling a service on it (an action on a device already in that state counts).
    """
    expected = {target: {}}
    if outcome.timed_out:
        return Verdict(False, Failure.TIMEOUT, "no answer in time", expected)
    acted = outcome.targets | outcome.changes.keys()
    if acted == {target}:
        if apologises(outcome.reply):
            return Verdict(False, Failure.APOLOGY, f"acted on {target}, but the reply apologises", expected)
        return Verdict(True, None, "", expected)
    if not acted:
        cause = Failure.FORMAT_ERROR if any(not c.valid for c in outcome.calls) else Failure.NO_ACTION
    elif target in acted:
        cause = Failure.EXTRA_ACTION
    else:
        cause = Failure.WRONG_TARGET
    return Verdict(False, cause, f"expected {target} alone; acted on {sorted(acted)}", expected)


def score_intent(expected: Outcome, outcome: Outcome) -> Verdict:
    """An intents-suite case: the same targets and effect as HA's handling of the intent.

    A question (the intent changes nothing and targets nothing) passes when nothing
    changed and the reply holds every number of HA's own answer.
    """
    if outcome.timed_out:
        return Verdict(False, Failure.TIMEOUT, "no answer in time", expected.changes)
    is_query = not expected.changes and not expected.targets
    if is_query and not outcome.changes and not outcome.targets:
        if expected.error is None and (missing := _missing_facts(expected.reply, outcome.reply)):
            return Verdict(False, Failure.WRONG_ANSWER, f"the reply lacks {missing}", {})
        return Verdict(True, None, "", {})
    same_changes = not diff(_as_snapshot(expected.changes), _as_snapshot(outcome.changes))
    if same_changes and outcome.targets == expected.targets:
        if apologises(outcome.reply) and not apologises(expected.reply):
            detail = f"right effect, but the reply apologises: {outcome.reply!r}"
            return Verdict(False, Failure.APOLOGY, detail, expected.changes)
        return Verdict(True, None, "", expected.changes)
    if not outcome.changes and not outcome.targets:
        cause = Failure.FORMAT_ERROR if any(not c.valid for c in outcome.calls) else Failure.NO_ACTION
    elif is_query:
        cause = Failure.EXTRA_ACTION
    elif not (expected.targets & outcome.targets or expected.changes.keys() & outcome.changes.keys()):
        cause = Failure.WRONG_TARGET
    elif outcome.targets - expected.targets or outcome.changes.keys() - expected.changes.keys():
        cause = Failure.EXTRA_ACTION
    elif expected.targets - outcome.targets:
        cause = Failure.WRONG_TARGET
    else:
        cause = Failure.WRONG_VALUE
    detail = (
        f"expected targets {sorted(expected.targets)} changes {expected.changes}; "
        f"got targets {sorted(outcome.targets)} changes {outcome.changes}"
    )
    return Verdict(False, cause, detail, expected.changes)


def _as_snapshot(changes: Changes) -> Snapshot:
    return {entity_id: dict(values) for entity_id, values in changes.items()}


def _missing_facts(facts: str, reply: str) -> list[str]:
    """The facts (numbers compared as numbers, words as words) a reply does not state."""
    numbers = {float(n.replace(",", ".")) for n in NUMBER.findall(reply)}
    words = set(re.findall(r"[\w']+", reply.lower()))
    missing = []
    for fact in facts.split():
        if NUMBER.fullmatch(fact):
            if float(fact.replace(",", ".")) not in numbers:
                missing.append(fact)
        elif fact.lower() not in words and not re.search(rf"\b{re.escape(fact.replace('_', ' '))}\b", reply, re.I):
            missing.append(fact)
    return missing
