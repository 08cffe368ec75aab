"""Formats and grammars, checked with llama.cpp's own grammar sampler.

Property: every call the tools allow renders in each format, is accepted by the compiled
grammar, and parses back to the same validated call. Calls the tools do not allow are
refused by the grammar, and malformed or cut outputs are rejected by the parser with a
reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from custom_components.botpsy.core.formats import FORMATS, MAX_TEXT_VALUE, CallFormat, ToolCall, detect_format
from custom_components.botpsy.core.grammar import MAX_CALLS, compile_grammar, int_range
from custom_components.botpsy.core.tools import ACTION, Param, Tool, compile_tools
from custom_components.botpsy.core.validate import CallRejectedError, validate_call
from tests.grammar_check import GrammarChecker

from .sample_home import sample_home

TOOLS = compile_tools(sample_home())
TOOLS_BY_KEY = {t.key: t for t in TOOLS}


@pytest.fixture(scope="module")
def checker(tiny_models: dict[str, Path]) -> GrammarChecker:
    return GrammarChecker(tiny_models["qwen3"])


GRAMMARS = {name: compile_grammar(TOOLS, fmt) for name, fmt in FORMATS.items()}


def test_llama_cpp_parses_the_grammars(checker: GrammarChecker) -> None:
    for grammar in GRAMMARS.values():
        checker.check(grammar)


def value_strategy(param: Param) -> st.SearchStrategy[Any]:
    if param.type == "enum":
        return st.sampled_from(param.options)
    if param.type == "boolean":
        return st.booleans()
    if param.type == "integer":
        return st.integers(int(param.minimum or 0), int(param.maximum if param.maximum is not None else 1000))
    if param.type == "number":
        low, high = int((param.minimum or 0) * 100), int((param.maximum or 100) * 100)
        return st.integers(low, high).map(lambda n: n / 100)
    if param.type == "rgb":
        return st.lists(st.integers(0, 255), min_size=3, max_size=3)
    return st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="<"), min_size=1, max_size=12)


@st.composite
def calls(draw: st.DrawFn) -> ToolCall:
    tool: Tool = draw(st.sampled_from(TOOLS))
    arguments: dict[str, Any] = {}
    params = tool.arguments
    if tool.targets:
        arguments["entity_id"] = draw(st.sampled_from(sorted(tool.targets)))
        params = tool.targets[arguments["entity_id"]]
    if tool.service:
        arguments[ACTION] = tool.service
    for param in params:
        if param.required or draw(st.booleans()):
            arguments[param.name] = draw(value_strategy(param))
    return ToolCall(tool.name, arguments)


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=calls())
def test_allowed_calls_render_are_accepted_and_parse_back(
    fmt: CallFormat, call: ToolCall, checker: GrammarChecker
) -> None:
    text = fmt.render(call)
    assert checker.accepts(GRAMMARS[fmt.name], text), text
    parsed = fmt.parse(text)
    assert parsed.errors == [] and parsed.content == ""
    assert len(parsed.calls) == 1
    valid = validate_call(parsed.calls[0], TOOLS_BY_KEY)
    assert valid.arguments == call.arguments


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
def test_two_calls_and_text_answers(fmt: CallFormat, checker: GrammarChecker) -> None:
    first = ToolCall("light", {"entity_id": "light.kitchen", "action": "turn_off"})
    second = ToolCall("switch", {"entity_id": "switch.coffee", "action": "turn_on"})
    text = fmt.render(first) + "\n" + fmt.render(second)
    assert checker.accepts(GRAMMARS[fmt.name], text)
    assert fmt.parse(text).calls == [first, second]
    assert checker.accepts(GRAMMARS[fmt.name], "The kitchen light is on.")
    assert fmt.parse("The kitchen light is on.").content == "The kitchen light is on."


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
def test_calls_per_answer_are_bounded(fmt: CallFormat, checker: GrammarChecker) -> None:
    call = fmt.render(ToolCall("light", {"entity_id": "light.kitchen", "action": "turn_off"}))
    assert checker.accepts(GRAMMARS[fmt.name], "\n".join([call] * MAX_CALLS))
    assert not checker.accepts(GRAMMARS[fmt.name], "\n".join([call] * (MAX_CALLS + 1)))
    item = fmt.render(
        ToolCall("todo", {"entity_id": "todo.shopping", "action": "add_item", "item": "x" * (MAX_TEXT_VALUE + 1)})
    )
    assert not checker.accepts(GRAMMARS[fmt.name], item)


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@pytest.mark.parametrize(
    ("call", "why"),
    [
        (ToolCall("lamp", {"entity_id": "light.kitchen", "action": "turn_on"}), "unknown function"),
        (ToolCall("light", {"entity_id": "light.kitchen", "action": "dim"}), "unknown action"),
        (ToolCall("light", {"entity_id": "light.kitchen", "action": "lock"}), "another domain's action"),
        (ToolCall("light", {"entity_id": "light.kitchen"}), "no action"),
        (ToolCall("light", {"entity_id": "light.garage", "action": "turn_on"}), "unknown entity"),
        (ToolCall("light", {"entity_id": "switch.coffee", "action": "turn_on"}), "entity of another domain"),
        (
            ToolCall("light", {"entity_id": "light.hallway", "action": "turn_on", "brightness_pct": 50}),
            "non-dimmable light",
        ),
        (ToolCall("light", {"entity_id": "light.desk", "action": "turn_on", "brightness_pct": 101}), "out of range"),
        (
            ToolCall("fan", {"entity_id": "fan.bedroom", "action": "set_preset_mode", "preset_mode": "turbo"}),
            "not an option",
        ),
        (ToolCall("fan", {"entity_id": "fan.attic", "action": "set_preset_mode", "preset_mode": "auto"}), "no presets"),
        (ToolCall("fan", {"entity_id": "fan.attic", "action": "set_percentage"}), "required argument missing"),
        (
            ToolCall("climate", {"entity_id": "climate.living", "action": "set_hvac_mode", "hvac_mode": "cool"}),
            "mode it lacks",
        ),
        (ToolCall("lock", {"entity_id": "lock.front_door", "action": "unlock", "code": "1234"}), "lock code"),
    ],
)
def test_calls_the_tools_do_not_allow_are_refused(
    fmt: CallFormat, call: ToolCall, why: str, checker: GrammarChecker
) -> None:
    assert not checker.accepts(GRAMMARS[fmt.name], fmt.render(call)), why


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (ToolCall("lamp", {"entity_id": "light.kitchen"}), "there is no function 'lamp'"),
        (
            ToolCall("light", {"entity_id": "light.kitchen"}),
            "light needs an action: one of turn_off, turn_on",
        ),
        (ToolCall("light", {"entity_id": "light.kitchen", "action": "lock"}), "one of turn_off, turn_on, not 'lock'"),
        (
            ToolCall("light", {"entity_id": "switch.coffee", "action": "turn_on"}),
            "switch.coffee cannot be used with light",
        ),
    ],
)
def test_validation_names_the_functions_actions(call: ToolCall, reason: str) -> None:
    with pytest.raises(CallRejectedError) as refused:
        validate_call(call, TOOLS_BY_KEY)
    assert str(refused.value).endswith(reason)


def test_a_valid_call_runs_its_actions_service_with_the_rest_as_data() -> None:
    call = ToolCall("light", {"entity_id": "light.desk", "action": "turn_on", "brightness_pct": "40"})
    valid = validate_call(call, TOOLS_BY_KEY)
    assert (valid.domain, valid.tool.service) == ("light", "turn_on")
    assert valid.service_data == {"entity_id": "light.desk", "brightness_pct": 40}
    assert valid.arguments == {"entity_id": "light.desk", "action": "turn_on", "brightness_pct": 40}


@pytest.mark.parametrize(
    ("fmt", "text", "error"),
    [
        ("qwen_xml", "<tool_call>\n<function=light_turn_off>\n<parameter=entity_id>\nlight.kitchen\n", "unfinished"),
        ("qwen_xml", "<tool_call>\nlight_turn_off\n</tool_call>", "malformed call"),
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(low=st.integers(-300, 9000), span=st.integers(0, 9000), probe=st.integers(-400, 20000))
def test_integer_ranges_are_exact(checker: GrammarChecker, low: int, span: int, probe: int) -> None:
    grammar = f"root ::= {int_range(low, low + span)}"
    assert checker.accepts(grammar, str(probe)) == (low <= probe <= low + span)


def test_format_follows_the_chat_template(tiny_model: Path) -> None:
    from custom_components.botpsy.core.gguf_metadata import read_gguf_metadata

    assert detect_format(read_gguf_metadata(tiny_model).chat_template).name == "qwen_xml"
    assert detect_format("{{ '<tool_call>' }}{{ tool_call | tojson }}").name == "hermes_json"
    assert detect_format("<start_function_call>").name == "gemma"
