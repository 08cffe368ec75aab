"""The call formats read and write calls as the models do (Qwen3.5 XML, Hermes JSON, FunctionGemma)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings, strategies as st
import pytest

from botpsy_runtime.formats import FORMATS, CallFormat, ToolCall, detect_format, gbnf_literal
from botpsy_runtime.gguf_metadata import read_gguf_metadata
from scripts.testing.grammar_check import GrammarChecker


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@pytest.mark.parametrize(
    "text",
    [
        '{"name": "light", "arguments": {"entity_id": "light.kitchen"',
        '```json\n{"name": "light", "arguments": 3}\n```',
        '[{"name": "light"}, {"arguments": {}}]',
        "{name: light}",
    ],
)
def test_output_that_begins_like_a_call_is_never_shown(fmt: CallFormat, text: str) -> None:
    parsed = fmt.parse(text)
    assert parsed.content == "" and parsed.calls == [] and parsed.errors
    assert fmt.shown_length(text[:5]) == fmt.shown_length(text, final=True) == 0


def test_unconstrained_output_is_read_leniently() -> None:
    """What servers without a grammar return: fenced, listed or "parameters" calls."""
    call = ToolCall("light", {"entity_id": "light.kitchen", "action": "turn_off"})
    fenced = '```json\n{"name": "light", "parameters": {"entity_id": "light.kitchen", "action": "turn_off"}}\n```'
    listed = '[{"name": "light", "arguments": {"entity_id": "light.kitchen", "action": "turn_off"}}]'
    for fmt in FORMATS.values():
        assert fmt.parse(fenced).calls == [call]
        assert fmt.parse(listed).calls == [call]
    assert FORMATS["hermes_json"].shown_length("Sure.\n<tool_") == len("Sure.\n")


def test_qwen_xml_reads_a_hermes_json_call_in_its_tags() -> None:
    """What Qwen3.5's ancestors wrote; without a grammar (a model server) it may too."""
    call = ToolCall("light", {"entity_id": "light.kitchen", "action": "turn_on"})
    assert FORMATS["qwen_xml"].parse(FORMATS["hermes_json"].render(call)).calls == [call]


@pytest.mark.parametrize(
    ("fmt", "text", "error"),
    [
        ("qwen_xml", "<tool_call>\n<function=light_turn_off>\n<parameter=entity_id>\nlight.kitchen\n", "unfinished"),
        ("qwen_xml", "<tool_call>\nlight_turn_off\n</tool_call>", "malformed call"),
        ("qwen_xml", '<tool_call>\n{"name": "light", "arguments": {}} and more\n</tool_call>', "malformed call"),
        (
            "hermes_json",
            '<tool_call>\n{"name": "light_turn_off", "arguments": {"entity_id": \n</tool_call>',
            "not valid JSON",
        ),
        ("hermes_json", '<tool_call>\n{"arguments": {}}\n</tool_call>', "no function name"),
        ("gemma", "<start_function_call>call:light_turn_off{entity_id:<escape>light.kitchen", "unfinished"),
    ],
)
def test_malformed_or_truncated_output_is_rejected_with_a_reason(fmt: str, text: str, error: str) -> None:
    parsed = FORMATS[fmt].parse(text)
    assert parsed.calls == []
    assert any(error in e for e in parsed.errors), parsed.errors


def test_format_follows_the_chat_template(tiny_model: Path) -> None:
    assert detect_format(read_gguf_metadata(tiny_model).chat_template).name == "qwen_xml"
    assert detect_format("{{ '<tool_call>' }}{{ tool_call | tojson }}").name == "hermes_json"
    assert detect_format("<start_function_call>").name == "gemma"


WORDS = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz ABC.,'-éü0123456789"), min_size=1, max_size=30)
NAMES = st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True)


@st.composite
def string_calls(draw: st.DrawFn) -> ToolCall:
    """Calls whose values are text: what every format reads back as it was written."""
    arguments = draw(st.dictionaries(NAMES, WORDS.map(str.strip).filter(bool), max_size=4))
    return ToolCall(draw(NAMES), arguments)


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@settings(max_examples=50, deadline=None)
@given(first=string_calls(), second=string_calls(), before=st.sampled_from(["", "Sure."]))
def test_written_calls_read_back(fmt: CallFormat, first: ToolCall, second: ToolCall, before: str) -> None:
    text = f"{before}\n{fmt.render(first)}\n{fmt.render(second)}" if before else fmt.render(first) + fmt.render(second)
    parsed = fmt.parse(text)
    assert (parsed.content, parsed.calls, parsed.errors) == (before, [first, second], [])


@pytest.mark.parametrize("name", ["hermes_json", "gemma"])
def test_typed_values_read_back(name: str) -> None:
    call = ToolCall("light", {"brightness_pct": 40, "transition": 1.5, "flash": False, "rgb_color": [255, 0, 10]})
    assert FORMATS[name].parse(FORMATS[name].render(call)).calls == [call]


def test_qwen_xml_values_are_text_and_json() -> None:
    """Qwen3.5 writes each value on its own line: text as it is, anything else as JSON."""
    call = ToolCall("light", {"entity_id": "light.desk", "brightness_pct": 40, "rgb_color": [1, 2, 3]})
    text = FORMATS["qwen_xml"].render(call)
    assert "<parameter=brightness_pct>\n40\n</parameter>" in text
    assert "<parameter=rgb_color>\n[1, 2, 3]\n</parameter>" in text
    assert FORMATS["qwen_xml"].parse(text).calls == [
        ToolCall("light", {"entity_id": "light.desk", "brightness_pct": "40", "rgb_color": "[1, 2, 3]"})
    ]


def test_calls_without_their_tags() -> None:
    """A call as its bare body (a small model's habit) is still a call, never shown text."""
    bare = "<function=light>\n<parameter=entity_id>\nlight.desk\n</parameter>\n</function>"
    assert FORMATS["qwen_xml"].parse(bare).calls == [ToolCall("light", {"entity_id": "light.desk"})]
    json_call = '{"name": "lock", "arguments": {"entity_id": "lock.front_door"}}'
    for fmt in FORMATS.values():
        assert fmt.parse(json_call).calls == [ToolCall("lock", {"entity_id": "lock.front_door"})]


@pytest.mark.parametrize(
    ("fmt", "text", "error"),
    [
        ("qwen_xml", "<tool_call>\n<function=light>\nstray\n</function>\n</tool_call>", "malformed arguments"),
        ("gemma", "<start_function_call>call:light{entity_id:<escape>x<escape>;}<end_function_call>", "malformed"),
        ("gemma", "<start_function_call>light()<end_function_call>", "malformed call"),
        ("qwen_xml", "<function=light>\n</function> trailing", "unfinished or malformed"),
    ],
)
def test_broken_calls_say_why(fmt: str, text: str, error: str) -> None:
    parsed = FORMATS[fmt].parse(text)
    assert any(error in e for e in parsed.errors), parsed.errors


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
def test_shown_text_stops_where_a_call_may_begin(fmt: CallFormat) -> None:
    start = fmt.wrappers[0][0]
    assert fmt.shown_length("It is on.") == len("It is on.")
    assert fmt.shown_length("It is on." + start[:3]) == len("It is on.")  # may be a call starting
    assert fmt.shown_length("It is on." + start[:3], final=True) == len("It is on.") + 3
    assert fmt.shown_length("It is on. " + start + "x") == len("It is on. ")
    assert fmt.shown_length("  ") == 0


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
def test_a_calls_grammar_accepts_the_call_as_written(fmt: CallFormat, checker: GrammarChecker) -> None:
    """grammar_call/grammar_argument/grammar_string write what render writes, as llama.cpp reads GBNF."""
    call = ToolCall("todo", {"entity_id": "todo.shopping", "item": "oat milk"})
    arguments = [
        fmt.grammar_argument("entity_id", fmt.grammar_string("todo.shopping"), first=True),
        fmt.grammar_argument("item", fmt.grammar_string(None), first=False),
    ]
    opening, closing = fmt.wrappers[0]
    grammar = f"root ::= {gbnf_literal(opening)} {fmt.grammar_call('todo', arguments)} {gbnf_literal(closing)}"
    assert checker.accepts(grammar, fmt.render(call))
    assert not checker.accepts(grammar, fmt.render(ToolCall("todo", {"entity_id": "todo.other", "item": "x"})))


@pytest.fixture(scope="module")
def checker(tiny_models: dict[str, Path]) -> GrammarChecker:
    return GrammarChecker(tiny_models["qwen3"])
