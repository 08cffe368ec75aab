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

from botpsy_runtime.formats import (
    FORMATS,
    JSON_CALLS,
    MAX_TEXT_VALUE,
    CallFormat,
    ToolCall,
)
from botpsy_runtime.gbnf import Grammar
from custom_components.botpsy.core.grammar import (
    MAX_CALLS,
    MAX_SPAN_WORDS,
    MAX_SPANS,
    compile_grammar,
    said_spans,
)
from custom_components.botpsy.core.tools import ACTION, Param, Tool, compile_tools, schema_tool
from custom_components.botpsy.core.validate import CallRejectedError, validate_call
from scripts.testing.call_grammars import FOLDER, call_grammars
from scripts.testing.grammar_check import GrammarChecker
from scripts.testing.sample_home import sample_home

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
    groups = set()
    for param in params:
        if param.required or (param.group not in groups and draw(st.booleans())):
            arguments[param.name] = draw(value_strategy(param))
            groups.add(param.group)
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


def unwrapped(fmt: CallFormat, call: ToolCall) -> str:
    opening, closing = fmt.wrappers[0]
    return fmt.render(call).removeprefix(opening).removesuffix(closing)


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=calls())
def test_calls_without_their_tags_are_calls(fmt: CallFormat, call: ToolCall, checker: GrammarChecker) -> None:
    """Small models leave the tags out, or write a bare JSON object whatever their format:
    the grammar completes such a call and the parser reads it, in every format."""
    bare = [unwrapped(JSON_CALLS, call)]
    if fmt.wrappers[1:]:
        bare.append(unwrapped(fmt, call))
    for text in bare:
        assert checker.accepts(GRAMMARS[fmt.name], text), text
        parsed = fmt.parse(text)
        assert (parsed.content, parsed.errors) == ("", [])
        assert validate_call(parsed.calls[0], TOOLS_BY_KEY).arguments == call.arguments
        assert fmt.shown_length(text, final=True) == 0


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@pytest.mark.parametrize(
    "text",
    [
        '{"name": "light"}',
        "```json",
        "[1]",
        " The light is on.",
        "\nOK",
        "It is <b>on</b>",
        "Done {now}",
        "Use this command: ```json light```",  # an explained call instead of a call
    ],
)
def test_answers_cannot_begin_or_look_like_a_call(fmt: CallFormat, text: str, checker: GrammarChecker) -> None:
    assert not checker.accepts(GRAMMARS[fmt.name], text)


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
        (
            ToolCall(
                "light",
                {"entity_id": "light.kitchen", "action": "turn_on", "rgb_color": [1, 2, 3], "color_temp_kelvin": 3000},
            ),
            "two arguments HA's schema excludes together",
        ),
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
            ToolCall(
                "light",
                {"entity_id": "light.kitchen", "action": "turn_on", "rgb_color": [1, 2, 3], "color_temp_kelvin": 3000},
            ),
            "light takes only one of rgb_color, color_temp_kelvin",
        ),
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


INTENT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "area": {"type": "string"},
        "floor": {"type": "string"},
        "domain": {"type": "array", "items": {"type": "string", "enum": ["light", "fan"]}},
        "brightness": {"type": "integer", "minimum": 0, "maximum": 100},
        "volume_step": {"anyOf": [{"type": "string", "enum": ["down", "up"]}, {"type": "integer"}]},
        "is_volume_muted": {"description": "no type: left out"},
    },
}
VOCABULARY = {"name": ("Kitchen Lights", "Desk"), "area": ("Kitchen",), "floor": (), "domain": ("light", "switch")}


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
def test_other_apis_tools_take_the_homes_names_and_any_subset_of_arguments(
    fmt: CallFormat, checker: GrammarChecker
) -> None:
    """HA's intent tools: every argument optional (but at least one), names only the home's own
    (no floor in a home without floors), domains only those of its devices."""
    tool = schema_tool("HassTurnOn", INTENT_SCHEMA, VOCABULARY)
    assert tool is not None
    assert [p.name for p in tool.arguments] == ["name", "area", "domain", "brightness", "volume_step"]
    grammar = compile_grammar((tool,), fmt)
    for arguments in (
        {"name": "Kitchen Lights"},
        {"area": "Kitchen", "domain": "light"},
        {"brightness": 40},
        {"name": "Desk", "volume_step": "up"},
    ):
        assert checker.accepts(grammar, fmt.render(ToolCall("HassTurnOn", arguments))), arguments
    for arguments in (
        {"name": "Garage"},
        {"area": "Kitchen", "name": "Desk"},
        {"brightness": 101},
        {},
        {"floor": "Kitchen"},
        {"area": "Kitchen", "domain": "fan"},
    ):
        assert not checker.accepts(grammar, fmt.render(ToolCall("HassTurnOn", arguments))), arguments


def test_a_required_argument_the_grammar_cannot_write_leaves_the_output_free() -> None:
    schema = {"type": "object", "properties": {"x": {"description": "?"}}, "required": ["x"]}
    assert schema_tool("Odd", schema, VOCABULARY) is None


def test_said_spans_are_runs_of_the_users_words() -> None:
    spans = said_spans(["Add apples, and pears to my shopping list.", "and bread"])
    assert {"apples", "apples, and pears", "pears", "shopping list", "bread", "and bread"} <= set(spans)
    # Without the punctuation around them, and never across two turns.
    assert "apples," not in spans and "list." not in spans and "list. and" not in spans
    assert "Kind of Blue" not in spans
    long = " ".join(f"w{i}" for i in range(30))
    assert max(len(s.split()) for s in said_spans([long])) == MAX_SPAN_WORDS
    # A long text's later words are left out, the latest turn's kept first.
    many = said_spans([" ".join(f"w{i}" for i in range(400)), "play jazz"])
    assert len(many) == MAX_SPANS and many[:3] == ("play", "play jazz", "jazz")
    # Words written without spaces cannot be told apart: any text then.
    assert said_spans(["把牛奶加到购物清单"]) == ()
    assert said_spans(["play <tool_call> now"]) == ("play", "now")


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
def test_free_text_values_are_what_the_user_said(fmt: CallFormat, checker: GrammarChecker) -> None:
    """A small model played the prompt's example album for "play Beatles artist"."""
    said = said_spans(["Put oat milk on my list"])
    grammar = compile_grammar(TOOLS, fmt, said=said)
    checker.check(grammar)
    item = {"entity_id": "todo.shopping", "action": "add_item"}
    assert checker.accepts(grammar, fmt.render(ToolCall("todo", {**item, "item": "oat milk"})))
    assert not checker.accepts(grammar, fmt.render(ToolCall("todo", {**item, "item": "milk."})))
    assert not checker.accepts(grammar, fmt.render(ToolCall("todo", {**item, "item": "Kind of Blue"})))
    # Without the user's words (a script without spaces), any text.
    free = compile_grammar(TOOLS, fmt, said=())
    assert checker.accepts(free, fmt.render(ToolCall("todo", {**item, "item": "Kind of Blue"})))


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=calls(), second=calls(), cuts=st.lists(st.integers(0, 400), min_size=3, max_size=3))
def test_calls_read_as_llama_cpp_reads_them(
    fmt: CallFormat, call: ToolCall, second: ToolCall, cuts: list[int], checker: GrammarChecker
) -> None:
    """Every prefix of a valid answer is accepted; what is forced there is how the answer
    goes on; the grammar written for the rest accepts the rest (llama.cpp says so), and
    not a character the original grammar refuses there."""
    grammar = GRAMMARS[fmt.name]
    text = fmt.render(call) + "\n" + fmt.render(second)
    start = Grammar(grammar).start()
    for cut in sorted({min(c, len(text)) for c in cuts}):
        state = start.advance(text[:cut])
        assert state is not None, text[:cut]
        forced, _after = state.forced()
        assert text[cut:].startswith(forced), (text[:cut], forced)
        rest = state.gbnf()
        assert checker.accepts(rest, text[cut:]), (text[:cut], rest)
        for other in ("\x01", "}", "Z", " ", '"'):
            allowed = checker.accepts(grammar, text[:cut] + other, complete=False)
            assert (start.advance(text[:cut] + other) is not None) == allowed, (text[:cut], other)
            assert checker.accepts(rest, other, complete=False) == allowed
    end = start.advance(text)
    assert end is not None and end.can_end


def test_the_runtime_tests_grammars_are_the_integrations() -> None:
    """runtime/tests run the decoder and the GBNF reader on these grammars, kept as files
    (the runtime cannot import the integration): `python -m scripts.testing.call_grammars`
    writes them again after a change to the grammar compiler or the sample home."""
    for name, text in call_grammars().items():
        assert (FOLDER / name).read_text() == text, name
