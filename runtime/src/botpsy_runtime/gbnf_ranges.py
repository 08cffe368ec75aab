"""GBNF rules for numbers within a range (llama.cpp grammars have no numeric bounds), and
for the values spelled the same in JSON and in every call format (booleans and numbers).

An integer range is written as alternatives of digit-by-digit sub-ranges; small ranges are
enumerated. Shared by the tool grammars and the JSON-schema grammar.
"""

from __future__ import annotations

import math

# Ranges this wide or narrower are written as the list of their values.
_ENUMERATE_UP_TO = 200
# An integer without both bounds: up to 10 digits, any 32-bit integer (what a schema
# without a maximum may well expect), yet an end to a model that would write digits forever.
_ANY_INTEGER = '"-"? [0-9] [0-9]{0,9}'


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
    """GBNF for decimals within [low, high] (the fraction at the upper bound is zeros);
    without both bounds, any decimal with as many digits as `_ANY_INTEGER`."""
    fraction = '( "." [0-9] [0-9]? )?'
    if low is None or high is None:
        return f"{_ANY_INTEGER} {fraction}"
    if low < 0:  # the negatives as their magnitudes ("-" 5.5 for -5.5), then 0..high
        negative = f'"-" ( {number_range(max(0.0, -high), -low)} )'
        return negative if high < 0 else f"{negative} | {number_range(0, high)}"
    top = math.floor(high)
    below = int_range(math.floor(low), top - 1) if top - 1 >= math.floor(low) else None
    at_top = f'"{top}" ( ".0" "0"? )?' if float(high).is_integer() else f'"{top}" {fraction}'
    return f"( {below} ) {fraction} | {at_top}" if below else at_top


def scalar_rule(kind: object, low: float | None, high: float | None) -> str | None:
    """GBNF of a value of JSON schema type `kind` that is a boolean, an integer or a number
    (within [low, high] where both are given), or None for any other type."""
    if kind == "boolean":
        return '"true" | "false"'
    if kind == "integer":
        if low is None or high is None:
            return _ANY_INTEGER
        return int_range(math.ceil(low), math.floor(high))
    if kind == "number":
        return number_range(low, high)
    return None
