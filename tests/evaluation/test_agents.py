"""What an agent did, read from HA's chat log events."""

from __future__ import annotations

from scripts.evaluation.agents import _calls


def test_streamed_calls_are_read_from_their_results() -> None:
    """A streamed answer's assistant content is not announced; its results name the calls."""
    done = {"name": "light", "arguments": {"entity_id": "light.a", "action": "turn_on"}, "executed": True}
    refused = {"name": "light", "arguments": {"entity_id": "light.b"}, "executed": False, "error": "no action"}
    contents = [
        {"role": "tool_result", "tool_call_id": "1", "tool_name": "light", "result": {"data": done}},
        {"role": "tool_result", "tool_call_id": "2", "tool_name": "light", "result": {"data": refused, "error": True}},
    ]
    first, second = _calls(contents)
    assert (first.name, first.arguments, first.executed, first.valid) == ("light", done["arguments"], True, True)
    assert (second.executed, second.valid, second.error) == (False, False, "no action")
