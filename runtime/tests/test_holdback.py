"""The one rule for holding back a tail that may still become a stop string or a call marker."""

from __future__ import annotations

from botpsy_runtime.holdback import releasable_length


def test_a_tail_that_may_become_a_string_is_held_back() -> None:
    assert releasable_length("Hello <tool", ["<tool_call>"]) == len("Hello ")
    assert releasable_length("Hello <", ["<tool_call>"]) == len("Hello ")
    # The earliest tail that may still become one of them decides.
    assert releasable_length("ab", ["b!", "ab!"]) == 0
    assert releasable_length("xab", ["b!", "ab!"]) == 1


def test_text_that_cannot_become_one_is_released() -> None:
    assert releasable_length("Hello <tools", ["<tool_call>"]) == len("Hello <tools")
    assert releasable_length("Hello", []) == len("Hello")
    assert releasable_length("Hello", [""]) == len("Hello")
    assert releasable_length("", ["END"]) == 0


def test_only_tails_shorter_than_the_string_are_held_back() -> None:
    # A whole occurrence is the caller's to cut; an earlier start only looks within the
    # length of the longest string.
    assert releasable_length("say END", ["END"]) == len("say END")
    assert releasable_length("E" * 10, ["EEE"]) == 8
