"""The call formats read and write calls as the models do (Qwen3.5 XML, Hermes JSON, FunctionGemma)."""

from __future__ import annotations

from pathlib import Path

import pytest

from botpsy_runtime.formats import FORMATS, CallFormat, ToolCall, detect_format
from botpsy_runtime.gguf_metadata import read_gguf_metadata


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
