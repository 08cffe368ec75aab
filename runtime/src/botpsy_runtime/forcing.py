"""How much of the text a grammar forces may be appended as tokens, decided one way for
the embedded worker (llama.cpp's tokenizer) and the remote engine (llama-server's
/tokenize): the same seam rule on both, so both fast-forward the same tokens."""

from __future__ import annotations

from collections.abc import Sequence


def forced_count(split: Sequence[tuple[int, bytes]], previous: int, text: bytes, *, ends: bool, budget: int) -> int:
    """How many tokens after the first of `split`, a tokenization of `text` (the piece of
    the token just sampled, `previous`, then the forced text) as (token, piece) pairs, may
    be appended: none if the split does not
    keep `previous` as it is (a seam the tokenizer never makes) or does not spell `text`;
    not the last unless the grammar `ends` after the forced text (it might merge with what
    follows); at most `budget`; whole UTF-8 characters only."""
    ids = [token for token, _ in split]
    pieces = [piece for _, piece in split]
    if len(ids) < 2 or ids[0] != previous or b"".join(pieces) != text:
        return 0
    take = min(len(ids) - (1 if ends else 2), budget)
    while take > 0 and not _whole(b"".join(pieces[1 : 1 + take])):
        take -= 1
    return max(take, 0)


def whole_characters(data: bytes) -> int:
    """Length of the longest prefix of `data` that is whole UTF-8 characters."""
    for cut in range(len(data), max(0, len(data) - 4), -1):
        if _whole(data[:cut]):
            return cut
    return 0


def _whole(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
