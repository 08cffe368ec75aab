"""Grammars for AI Task structures, checked with llama.cpp's grammar sampler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from botpsy_runtime.json_grammar import json_schema_grammar
from scripts.testing.grammar_check import GrammarChecker

SCHEMA = {
    "type": "object",
    "properties": {
        "room": {"type": "string", "enum": ["kitchen", "hall"]},
        "count": {"type": "number", "minimum": 0.0, "maximum": 9.0},
        "floors": {"type": "integer", "minimum": 1, "maximum": 3},
        "urgent": {"type": "boolean"},
        "note": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["room", "count", "floors", "urgent", "note", "tags"],
}
GOOD = {"room": "kitchen", "count": 2.5, "floors": 3, "urgent": False, "note": 'a "quoted" word', "tags": ["x", "y"]}


@pytest.fixture(scope="module")
def checker(tiny_models: dict[str, Path]) -> GrammarChecker:
    return GrammarChecker(tiny_models["qwen3"])


def test_matching_documents_are_accepted(checker: GrammarChecker) -> None:
    grammar = json_schema_grammar(SCHEMA)
    assert grammar is not None
    assert checker.accepts(grammar, json.dumps(GOOD))
    assert checker.accepts(grammar, json.dumps({**GOOD, "tags": [], "count": 9}))


@pytest.mark.parametrize(
    "change",
    [{"room": "attic"}, {"count": 9.5}, {"count": -1}, {"floors": 4}, {"urgent": "no"}, {"tags": [1]}],
)
def test_out_of_structure_documents_are_refused(checker: GrammarChecker, change: dict[str, object]) -> None:
    grammar = json_schema_grammar(SCHEMA)
    assert grammar is not None
    assert not checker.accepts(grammar, json.dumps({**GOOD, **change}))


def test_unsupported_schemas_fall_back() -> None:
    assert json_schema_grammar({"type": "object", "properties": {"a": {"type": "string"}}, "required": []}) is None
    assert json_schema_grammar({"anyOf": [{"type": "string"}]}) is None
