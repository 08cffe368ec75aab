"""GBNF integer ranges accept exactly their integers, and the value rules shared by the call
and JSON grammars accept what their type allows (llama.cpp's grammar sampler says so)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from botpsy_runtime.gbnf_ranges import int_range, scalar_rule
from scripts.testing.grammar_check import GrammarChecker


@pytest.fixture(scope="module")
def checker(tiny_models: dict[str, Path]) -> GrammarChecker:
    return GrammarChecker(tiny_models["qwen3"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(low=st.integers(-300, 9000), span=st.integers(0, 9000), probe=st.integers(-400, 20000))
def test_integer_ranges_are_exact(checker: GrammarChecker, low: int, span: int, probe: int) -> None:
    grammar = f"root ::= {int_range(low, low + span)}"
    assert checker.accepts(grammar, str(probe)) == (low <= probe <= low + span)


def test_value_rules_of_booleans_and_numbers(checker: GrammarChecker) -> None:
    def accepts(rule: str | None, text: str) -> bool:
        assert rule is not None
        return checker.accepts(f"root ::= {rule}", text)

    boolean = scalar_rule("boolean", None, None)
    assert accepts(boolean, "true") and accepts(boolean, "false") and not accepts(boolean, "1")
    # Without both bounds: any integer of up to 10 digits (a 32-bit integer), no more.
    for unbounded in (scalar_rule("integer", None, None), scalar_rule("integer", 0, None)):
        assert accepts(unbounded, "-2147483648") and accepts(unbounded, "1000000")
        assert not accepts(unbounded, "12345678901") and not accepts(unbounded, "1.5")
    # With both: only integers within them (fractional bounds rounded inwards).
    bounded = scalar_rule("integer", 0.5, 10.5)
    assert accepts(bounded, "1") and accepts(bounded, "10")
    assert not accepts(bounded, "0") and not accepts(bounded, "11")
    number = scalar_rule("number", 0, 1)
    assert accepts(number, "0.25") and accepts(number, "1.0") and not accepts(number, "1.5")
    # Below zero too: a freezer's -25..-15, a thermostat's -10..35 (not any 6-digit number).
    freezer = scalar_rule("number", -25, -15)
    assert accepts(freezer, "-18.5") and accepts(freezer, "-25") and accepts(freezer, "-15.0")
    assert not accepts(freezer, "-14") and not accepts(freezer, "-26") and not accepts(freezer, "18")
    outdoor = scalar_rule("number", -10, 35)
    assert accepts(outdoor, "-9.5") and accepts(outdoor, "0") and accepts(outdoor, "21.5")
    assert not accepts(outdoor, "-11") and not accepts(outdoor, "36") and not accepts(outdoor, "-100")
    # Without bounds: any decimal of up to 10 digits before the point.
    unbounded_number = scalar_rule("number", None, None)
    assert accepts(unbounded_number, "-1234567.5") and not accepts(unbounded_number, "12345678901.5")
    assert scalar_rule("string", None, None) is None and scalar_rule("rgb", None, None) is None
