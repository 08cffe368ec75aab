"""Compile tools into a GBNF grammar (llama.cpp) in the model's own call format.

The model may answer in text, or emit one or more calls; every call the grammar admits
names a real function and one of its real targets, and gives only that target's
arguments, with values of the right type inside their enum or range. Targets with the
same argument list share one rule, so the grammar grows with distinct capabilities, not
with the number of entities.
"""

from __future__ import annotations

import math
import re

from .formats import CallFormat
from .tools import ACTION, Param, Tool

# Text answers may not start a call: "<" is left out of them.
ANSWER_RULE = "answer ::= [^<\\x00] [^<\\x00]*"
_ENUMERATE_UP_TO = 200
# Calls in one answer: a bound that stops a model from looping (a base model repeats the
# same call until it runs out of tokens). Free text values are bounded by the formats.
MAX_CALLS = 4


def _fill_nines(value: int, count: int) -> int:
    text = str(value)
    return int(text[:-count] + "9" * count) if count <= len(text) else int("9" * count)


def _fill_zeros(value: int, count: int) -> int:
    return value - value % int(10**count)


def _split_range(low: int, high: int) -> list[tuple[int, int]]:
    """[low, high] as sub-ranges whose bounds have the same length and differ digit by digit."""
    stops = {high}
    nines = 1
    stop = _fill_nines(low, nines)
    while low <= stop < high:
        stops.add(stop)
        nines += 1
        stop = _fill_nines(low, nines)
    zeros = 1
    stop = _fill_zeros(high + 1, zeros) - 1
    while low < stop <= high:
        stops.add(stop)
        zeros += 1
        stop = _fill_zeros(high + 1, zeros) - 1
    ranges = []
    start = low
    for end in sorted(stops):
        ranges.append((start, end))
        start = end + 1
    return ranges


def _digits_rule(low: int, high: int) -> str:
    parts = []
    for a, b in zip(str(low), str(high), strict=True):
        parts.append(f'"{a}"' if a == b else f"[{a}-{b}]")
    return " ".join(parts)


def int_range(low: int, high: int) -> str:
    """GBNF for exactly the integers low..high, in their plain decimal spelling."""
    if low > high:
        raise ValueError(f"empty range {low}..{high}")
    if low < 0:
        negative = f'"-" ( {int_range(max(1, -high), -low)} )'
        return negative if high < 0 else f"{negative} | {int_range(0, high)}"
    if high - low <= _ENUMERATE_UP_TO:
        return " | ".join(f'"{n}"' for n in range(low, high + 1))
    return " | ".join(f"( {_digits_rule(a, b)} )" for a, b in _split_range(low, high))


def number_range(low: float | None, high: float | None) -> str:
    """GBNF for decimals within [low, high] (the fraction at the upper bound is zeros)."""
    fraction = '( "." [0-9] [0-9]? )?'
    if low is None or high is None or low < 0:
        return f'"-"? [0-9] [0-9]{{0,5}} {fraction}'
    top = math.floor(high)
    below = int_range(math.floor(low), top - 1) if top - 1 >= math.floor(low) else None
    at_top = f'"{top}" ( ".0" "0"? )?' if float(high).is_integer() else f'"{top}" {fraction}'
    return f"( {below} ) {fraction} | {at_top}" if below else at_top


def _value(fmt: CallFormat, param: Param) -> str:
    if param.type == "enum":
        return " | ".join(fmt.grammar_string(option) for option in param.options)
    if param.type == "string":
        return fmt.grammar_string(None)
    if param.type == "boolean":
        return '"true" | "false"'
    if param.type == "integer":
        if param.minimum is None or param.maximum is None:
            return '"-"? [0-9] [0-9]{0,5}'
        return int_range(math.ceil(param.minimum), math.floor(param.maximum))
    if param.type == "number":
        return number_range(param.minimum, param.maximum)
    channel = int_range(0, 255)
    return f'"[" ( {channel} ) ", " ( {channel} ) ", " ( {channel} ) "]"'


def _rule_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower()


def compile_grammar(
    tools: tuple[Tool, ...], fmt: CallFormat, *, allow_text: bool = True, max_calls: int = MAX_CALLS
) -> str:
    """The grammar: `answer` text, or up to `max_calls` calls separated by newlines."""
    rules: dict[str, str] = {}
    tool_rules = []
    for tool in tools:
        base = _rule_name(tool.key)
        groups: dict[tuple[Param, ...], list[str]] = {}
        for entity_id, params in tool.targets.items():
            groups.setdefault(params, []).append(entity_id)
        if not tool.targets:
            groups[tool.arguments] = []
        if tool.service:
            rules[f"{base}-action"] = fmt.grammar_string(tool.service)
        alternatives = []
        for index, (params, entity_ids) in enumerate(groups.items()):
            arguments = []
            if entity_ids:
                target = f"{base}-t{index}"
                rules[target] = " | ".join(fmt.grammar_string(e) for e in entity_ids)
                arguments.append(fmt.grammar_argument("entity_id", target, first=True))
            if tool.service:  # the function's action that runs this tool's service
                arguments.append(fmt.grammar_argument(ACTION, f"{base}-action", first=not arguments))
            for param in params:
                value = f"{base}-{_rule_name(param.name)}-v{index}"
                rules[value] = _value(fmt, param)
                argument = fmt.grammar_argument(param.name, value, first=not arguments)
                arguments.append(argument if param.required else f"( {argument} )?")
            alternatives.append(fmt.grammar_call(tool.name, arguments))
        rules[base] = " | ".join(f"( {a} )" for a in alternatives)
        tool_rules.append(base)
    if not tool_rules:
        return f"root ::= answer\n{ANSWER_RULE}\n"
    lines = [
        "root ::= answer | calls" if allow_text else "root ::= calls",
        f'calls ::= call ( "\\n" call ){{0,{max_calls - 1}}}',
        "call ::= " + " | ".join(tool_rules),
        ANSWER_RULE,
    ]
    lines += [f"{name} ::= {body}" for name, body in rules.items()]
    return "\n".join(lines) + "\n"
