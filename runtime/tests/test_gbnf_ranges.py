"""GBNF integer ranges accept exactly their integers (llama.cpp's grammar sampler says so)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from botpsy_runtime.gbnf_ranges import int_range
from scripts.testing.grammar_check import GrammarChecker


@pytest.fixture(scope="module")
def checker(tiny_models: dict[str, Path]) -> GrammarChecker:
    return GrammarChecker(tiny_models["qwen3"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(low=st.integers(-300, 9000), span=st.integers(0, 9000), probe=st.integers(-400, 20000))
def test_integer_ranges_are_exact(checker: GrammarChecker, low: int, span: int, probe: int) -> None:
    grammar = f"root ::= {int_range(low, low + span)}"
    assert checker.accepts(grammar, str(probe)) == (low <= probe <= low + span)
