"""The one seam rule of forced text, for the embedded worker and the remote engine."""

from __future__ import annotations

from botpsy_runtime.forcing import forced_count, whole_characters


def split(ids: list[int], pieces: list[bytes]) -> list[tuple[int, bytes]]:
    return list(zip(ids, pieces, strict=True))


def test_forced_tokens_keep_the_token_before_and_leave_the_last_to_sampling() -> None:
    tool_call = split([1, 2, 3, 4], [b"<", b"tool", b"_call", b">"])
    assert forced_count(tool_call, 1, b"<tool_call>", ends=False, budget=10) == 2
    assert forced_count(tool_call, 1, b"<tool_call>", ends=True, budget=10) == 3
    assert forced_count(tool_call, 1, b"<tool_call>", ends=True, budget=1) == 1


def test_nothing_is_forced_across_a_seam_the_tokenizer_never_makes() -> None:
    # The split merged the token before with the forced text: it is not kept as sampled.
    assert forced_count(split([9, 3, 4], [b"<tool", b"_call", b">"]), 1, b"<tool_call>", ends=True, budget=10) == 0
    # The pieces do not spell the text.
    assert forced_count(split([1, 2, 3], [b"<", b"x", b">"]), 1, b"<y>", ends=True, budget=10) == 0
    assert forced_count(split([1], [b"<"]), 1, b"<", ends=True, budget=10) == 0


def test_forced_tokens_end_on_whole_characters() -> None:
    e_acute = "é".encode()
    text = b"a" + e_acute + b"b"
    pieces = split([1, 2, 3, 4], [b"a", e_acute[:1], e_acute[1:], b"b"])
    assert forced_count(pieces, 1, text, ends=False, budget=10) == 2
    assert forced_count(pieces, 1, text, ends=False, budget=1) == 0
    assert whole_characters(b"ab" + e_acute[:1]) == 2
