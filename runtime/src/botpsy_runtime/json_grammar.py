"""GBNF for JSON matching a schema, with exact ranges and enums (AI Task structures).

llama.cpp's own converter ignores numeric ranges; this one spells them out with the same
range rules as the tool grammar. It covers what HA's AI Task structures produce (objects
of strings, enums, numbers, integers, booleans and lists of them) and says None for
anything else, so the caller can fall back to llama.cpp's converter.
"""

from __future__ import annotations

import json
from typing import Any

from .formats import MAX_TEXT_VALUE, gbnf_literal
from .gbnf_ranges import scalar_rule

_STRING = f'"\\"" ( [^"\\\\\\x00-\\x1f] | "\\\\" ["\\\\/bfnrt] ){{0,{MAX_TEXT_VALUE}}} "\\""'


class _Unsupported(Exception):
    pass


def _value(schema: dict[str, Any], rules: dict[str, str], name: str) -> str:
    if "enum" in schema:
        return " | ".join(gbnf_literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        item = f"{name}-item"
        rules[item] = _value(schema.get("items") or {"type": "string"}, rules, item)
        return f'"[" ( {item} ( ", " {item} )* )? "]"'
    if kind == "object":
        return _object(schema, rules, name)
    return _scalar(kind, schema.get("minimum"), schema.get("maximum"))


def _scalar(kind: object, low: Any, high: Any) -> str:
    """GBNF of a string, boolean or number: values with no rules of their own, unlike lists and objects."""
    if kind == "string":
        return _STRING
    rule = scalar_rule(kind, low, high)
    if rule is None:
        raise _Unsupported(kind)
    return rule


def _object(schema: dict[str, Any], rules: dict[str, str], name: str) -> str:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    if set(properties) != required:
        raise _Unsupported("optional properties")
    parts = []
    for index, (key, sub) in enumerate(properties.items()):
        rule = f"{name}-{index}"
        rules[rule] = _value(sub, rules, rule)
        parts.append(f"{gbnf_literal(('' if index == 0 else ', ') + json.dumps(key) + ': ')} ( {rule} )")
    return " ".join(['"{"', *parts, '"}"'])


def json_schema_grammar(schema: dict[str, Any]) -> str | None:
    """GBNF for JSON documents matching `schema`, or None if the schema is beyond it."""
    rules: dict[str, str] = {}
    try:
        root = _value(schema, rules, "v")
    except _Unsupported:
        return None
    return "\n".join([f"root ::= {root}", *(f"{k} ::= {v}" for k, v in rules.items())]) + "\n"
