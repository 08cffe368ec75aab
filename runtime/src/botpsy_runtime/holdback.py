"""How much of a growing text may be given out while its end may still become a stop
string or a call marker: one rule for the embedded worker, the remote engine and the
call formats."""

from __future__ import annotations

from collections.abc import Sequence


def releasable_length(text: str, strings: Sequence[str]) -> int:
    """Length of `text` before the earliest tail of it that is the start (but not the whole)
    of one of `strings`: that tail may still grow into one, so it is held back. A whole
    occurrence is the caller's to find (and cut) first."""
    longest = max((len(s) for s in strings), default=0)
    for start in range(max(0, len(text) - longest + 1), len(text)):
        if any(s.startswith(text[start:]) for s in strings):
            return start
    return len(text)
