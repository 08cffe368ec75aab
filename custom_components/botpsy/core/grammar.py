"""Compile tools into a GBNF grammar (llama.cpp) in the model's own call format.

The model may answer in text, or emit one or more calls; every call the grammar admits
names a real function and one of its real targets, and gives only that target's
arguments, with values of the right type inside their enum or range. Targets with the
same argument list share one rule, so the grammar grows with distinct capabilities, not
with the number of entities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import re

from botpsy_runtime.formats import JSON_CALLS, CallFormat, gbnf_literal
from botpsy_runtime.gbnf_ranges import int_range, scalar_rule

from .tools import ACTION, Param, Tool

# Text answers may not start like a call or a near miss of one (formats.CALL_OPENERS), nor
# with blank space (the first character decides); tags and JSON have no place in them.
# No code either: a spoken reply has no use for backticks, and a model that explains a
# call in a code block instead of making it must not show the user call syntax.
ANSWER_RULE = "answer ::= [^<{[`\\x00 \\t\\n] [^<{`\\x00]*"
# Calls in one answer: a bound that stops a model from looping (a base model repeats the
# same call until it runs out of tokens). Free text values are bounded by the formats.
MAX_CALLS = 4
# A free-text value said by the user is at most this many of their words; a grammar holds
# at most MAX_SPANS such values (a long text's later words are left out).
MAX_SPAN_WORDS = 10
MAX_SPANS = 1500
# Punctuation around a span of words is not part of what was said ("apples," is "apples").
_SPAN_EDGES = ".,!?;:\"'()[]{}\u201c\u201d\u2018\u2019\u00ab\u00bb"
# Scripts written without spaces between words: their words cannot be told apart here.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")


def said_spans(texts: Sequence[str]) -> tuple[str, ...]:
    """Every run of up to MAX_SPAN_WORDS consecutive words of `texts` (the user's turns,
    the latest last), without the punctuation around it: what a free-text value (a song
    to play, an item for a list, a search) may be. The latest turn's come first, and no
    more than MAX_SPANS. Empty when the words cannot be told apart (a script without
    spaces), and then any text is allowed."""
    if any(_UNSPACED.search(text) for text in texts):
        return ()
    spans: dict[str, None] = {}
    for text in reversed(texts):
        words = text.split()
        for first in range(len(words)):
            for last in range(first + 1, min(first + MAX_SPAN_WORDS, len(words)) + 1):
                span = " ".join(words[first:last]).strip(_SPAN_EDGES)
                if span and "<" not in span:  # no tag can begin in a value
                    spans[span] = None
                if len(spans) == MAX_SPANS:
                    return tuple(spans)
    return tuple(spans)


def _value(fmt: CallFormat, param: Param, text_rule: str) -> str:
    if param.type == "enum":
        return " | ".join(fmt.grammar_string(option) for option in param.options)
    if param.type == "string":
        return text_rule
    return _plain_value(param)


def _plain_value(param: Param) -> str:
    """GBNF of a boolean, number or color: spelled alike in every call format, unlike text."""
    rule = scalar_rule(param.type, param.minimum, param.maximum)
    if rule is not None:
        return rule
    channel = int_range(0, 255)
    return f'"[" ( {channel} ) ", " ( {channel} ) ", " ( {channel} ) "]"'


def _rule_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower()


@dataclass(frozen=True, slots=True)
class _Slot:
    """A place for one argument: one of `choices` (key, value rule), or none if optional."""

    choices: tuple[tuple[str, str], ...]
    required: bool


def _slots(arguments: list[tuple[Param | None, str, str]]) -> list[_Slot]:
    """(param, key, value rule) in order as slots: the optional arguments of an exclusive
    group share one."""
    slots: list[_Slot] = []
    groups: dict[str, int] = {}
    for param, key, value in arguments:
        group = param.group if param is not None and not param.required else None
        if group is not None and group in groups:
            slot = slots[groups[group]]
            slots[groups[group]] = _Slot((*slot.choices, (key, value)), False)
            continue
        if group is not None:
            groups[group] = len(slots)
        slots.append(_Slot(((key, value),), param is None or param.required))
    return slots


def _argument_list(fmt: CallFormat, slots: list[_Slot]) -> str:
    """GBNF of the arguments in their slots' order, the optional ones optional (but not
    all of them left out), each separated from the one written before it as the format
    separates them."""

    def written(slot: _Slot, *, first: bool) -> str:
        choices = [fmt.grammar_argument(key, value, first=first) for key, value in slot.choices]
        return choices[0] if len(choices) == 1 else "( " + " | ".join(f"( {c} )" for c in choices) + " )"

    def argument(slot: _Slot) -> str:
        text = written(slot, first=False)
        return text if slot.required else f"( {text} )?"

    # The first argument written is in one of the leading optional slots or the first required one.
    starts = []
    for index, slot in enumerate(slots):
        starts.append(" ".join([written(slot, first=True), *(argument(later) for later in slots[index + 1 :])]))
        if slot.required:
            return starts[0] if len(starts) == 1 else "( " + " | ".join(f"( {s} )" for s in starts) + " )"
    # Arguments that are all optional (HA's intent tools): at least one; a call that names
    # no target is never what a model means (the 0.5B wrote {} for "turn on the kitchen light").
    return "( " + " | ".join(f"( {s} )" for s in starts) + " )" if starts else ""


def _tool_rules(
    tools: tuple[Tool, ...], fmt: CallFormat, prefix: str, rules: dict[str, str], text_rule: str
) -> list[str]:
    """A rule per tool for its calls spelled in `fmt` (added to `rules`); their names.
    Free-text values are `text_rule`."""
    names = []
    for tool in tools:
        base = prefix + _rule_name(tool.key)
        groups: dict[tuple[Param, ...], list[str]] = {}
        for entity_id, params in tool.targets.items():
            groups.setdefault(params, []).append(entity_id)
        if not tool.targets:
            groups[tool.arguments] = []
        if tool.service:
            rules[f"{base}-action"] = fmt.grammar_string(tool.service)
        alternatives = []
        for index, (params, entity_ids) in enumerate(groups.items()):
            arguments: list[tuple[Param | None, str, str]] = []  # (param, key, value rule)
            if entity_ids:
                target = f"{base}-t{index}"
                rules[target] = " | ".join(fmt.grammar_string(e) for e in entity_ids)
                arguments.append((None, "entity_id", target))
            if tool.service:  # the function's action that runs this tool's service
                arguments.append((None, ACTION, f"{base}-action"))
            for param in params:
                value = f"{base}-{_rule_name(param.name)}-v{index}"
                rules[value] = _value(fmt, param, text_rule)
                arguments.append((param, param.name, value))
            alternatives.append(fmt.grammar_call(tool.name, [_argument_list(fmt, _slots(arguments))]))
        rules[base] = " | ".join(f"( {a} )" for a in alternatives)
        names.append(base)
    return names


def compile_grammar(
    tools: tuple[Tool, ...],
    fmt: CallFormat,
    *,
    allow_text: bool = True,
    max_calls: int = MAX_CALLS,
    said: Sequence[str] = (),
) -> str:
    """The grammar: `answer` text, or up to `max_calls` calls separated by newlines.

    A call is spelled in the model's format, in its tags or without them, or as a bare
    JSON object (the near misses small models write): the parser reads them all, so what
    a model means as a call becomes one, completed with a real function, target, action
    and in-range values. An answer cannot begin like any of them.

    A free-text value (what to play, add to a list, search for) is one of `said`, the
    spans of the user's words (`said_spans`), where given: a small model otherwise plays
    the prompt's example album, or an item the user never named. Without them, any text.
    """
    if not tools:
        return f"root ::= answer\n{ANSWER_RULE}\n"
    rules: dict[str, str] = {}
    wrapped = []
    spellings = [(fmt, fmt.wrappers)]
    if fmt is not JSON_CALLS:
        spellings.append((JSON_CALLS, (("", ""),)))
    for index, (spelling, wrappers) in enumerate(spellings):
        body = f"body{index}"
        text = f"said{index}"  # no tool's rule is named so: theirs begin with s{index}-
        rules[body] = " | ".join(_tool_rules(tools, spelling, f"s{index}-", rules, text))
        if text in rules.values():  # a free-text value's rule is just its name
            rules[text] = (
                " | ".join(spelling.grammar_string(v) for v in said) if said else spelling.grammar_string(None)
            )
        for opening, closing in wrappers:
            parts = [*([gbnf_literal(opening)] if opening else []), body, *([gbnf_literal(closing)] if closing else [])]
            wrapped.append(" ".join(parts))
    lines = [
        "root ::= answer | calls" if allow_text else "root ::= calls",
        f'calls ::= call ( "\\n" call ){{0,{max_calls - 1}}}',
        "call ::= " + " | ".join(f"( {w} )" for w in wrapped),
        ANSWER_RULE,
    ]
    lines += [f"{name} ::= {body}" for name, body in rules.items()]
    return "\n".join(lines) + "\n"
