"""Forced text: what llama.cpp's grammar sampler leaves no choice about, byte by byte.

The grammars are BotPsy's own (the integration's call grammars, json_schema_grammar) and llama.cpp's
JSON-schema converter; the prefix is offered token by token to the grammar first.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
from pathlib import Path

import llama_cpp
from llama_cpp.llama_grammar import json_schema_to_gbnf
import pytest

from botpsy_runtime.constrained import Decoder, Vocabulary, parse_grammar
from botpsy_runtime.gbnf_ranges import int_range
from botpsy_runtime.json_grammar import json_schema_grammar

from .grammars import call_grammar

XML_CALL = call_grammar("qwen_xml", "one_call")


class Forced:
    """Forced bytes after a prefix, on a vocabulary-only tiny model."""

    def __init__(self, model: Path) -> None:
        self.llm = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)
        self.vocab = Vocabulary(self.llm._model)

    def after(self, grammar: str, prefix: str = "") -> tuple[bytes, bool]:
        parsed = parse_grammar(self.vocab, grammar)
        decoder = Decoder(self.vocab, None, parsed)
        try:
            for token in self.llm.tokenize(prefix.encode(), add_bos=False, special=True):
                assert decoder.allowed(token), (prefix, token)
                decoder.accept(token)
            return decoder.forced_bytes()
        finally:
            decoder.close()
            llama_cpp.llama_sampler_free(parsed)


@pytest.fixture(scope="module")
def forced(tiny_models: dict[str, Path]) -> Iterator[Forced]:
    yield Forced(tiny_models["qwen3"])


def test_every_byte_has_a_token(forced: Forced) -> None:
    assert forced.vocab.byte_tokens is not None
    assert [forced.vocab.piece(t) for t in forced.vocab.byte_tokens] == [bytes([b]) for b in range(1, 256)]


@pytest.mark.parametrize(
    ("prefix", "expected", "end"),
    [
        # Tagged, bare or as JSON (the near misses): a choice; then the head up to the
        # function name, which is a choice.
        ("", "", False),
        ("<t", "ool_call>\n<function=", False),
        ('{"', 'name": "', False),
        ("<tool_call>\n<function=l", "", False),  # light or lock
        # The rest of the name, the target's tag, and the domain of every target.
        ("<tool_call>\n<function=li", "ght>\n<parameter=entity_id>\nlight.", False),
        # A unique target, then the action: turning the kitchen light on or off is a choice.
        (
            "<tool_call>\n<function=light>\n<parameter=entity_id>\nlight.k",
            "itchen\n</parameter>\n<parameter=action>\nturn_o",
            False,
        ),
        # A unique action without arguments: the call runs to its end, and the grammar ends there.
        (
            "<tool_call>\n<function=light>\n<parameter=entity_id>\nlight.kitchen\n</parameter>\n"
            "<parameter=action>\nturn_of",
            "f\n</parameter>\n</function>\n</tool_call>",
            True,
        ),
        (
            "<tool_call>\n<function=lo",
            "ck>\n<parameter=entity_id>\nlock.front_door\n</parameter>\n<parameter=action>\n",
            False,
        ),
        # Optional arguments: a choice after the action (a light without any: none).
        (
            "<tool_call>\n<function=light>\n<parameter=entity_id>\nlight.desk\n</parameter>\n"
            "<parameter=action>\nturn_on",
            "\n</parameter>\n<",
            False,
        ),
        (
            "<tool_call>\n<function=light>\n<parameter=entity_id>\nlight.hallway\n</parameter>\n"
            "<parameter=action>\nturn_on",
            "\n</parameter>\n</function>\n</tool_call>",
            True,
        ),
        # Free text: nothing is forced.
        ("<tool_call>\n<function=find_entities>\n<parameter=query>\n", "", False),
    ],
)
def test_forced_text_of_a_call(forced: Forced, prefix: str, expected: str, end: bool) -> None:
    assert forced.after(XML_CALL, prefix) == (expected.encode(), end)


def test_text_or_calls_is_a_choice(forced: Forced) -> None:
    grammar = call_grammar("qwen_xml", "answer")
    assert forced.after(grammar) == (b"", False)
    # After a whole call, another call or the end: a choice.
    call = (
        "<tool_call>\n<function=switch>\n<parameter=entity_id>\nswitch.coffee\n</parameter>\n"
        "<parameter=action>\nturn_on\n</parameter>\n</function>\n"
    )
    assert forced.after(grammar, call) == (b"</tool_call>", False)
    assert forced.after(grammar, call + "</tool_call>") == (b"", False)


def test_hermes_and_gemma_heads(forced: Forced) -> None:
    hermes = call_grammar("hermes_json", "calls")
    assert forced.after(hermes) == (b"", False)  # in its tags or bare: a choice
    assert forced.after(hermes, "<") == (b'tool_call>\n{"name": "', False)
    assert forced.after(hermes, "{") == (b'"name": "', False)
    assert forced.after(hermes, '<tool_call>\n{"name": "t') == (
        b'odo", "arguments": {"entity_id": "todo.shopping", "action": "add_item", "item": "',
        False,
    )
    gemma = call_grammar("gemma", "calls")
    assert forced.after(gemma) == (b"", False)  # its own call, or a JSON object
    assert forced.after(gemma, "<") == (b"start_function_call>call:", False)


def test_json_schemas(forced: Forced) -> None:
    schema = {"type": "object", "properties": {"mode": {"enum": ["heat", "cool"]}}, "required": ["mode"]}
    ours = json_schema_grammar(schema)
    assert ours is not None
    assert forced.after(ours) == (b'{"mode": "', False)
    assert forced.after(ours, '{"mode": "h') == (b'eat"}', True)
    # llama.cpp's converter allows optional white space between tokens: choices everywhere.
    theirs = json_schema_to_gbnf(json.dumps(schema))
    assert forced.after(theirs) == (b"{", False)
    assert forced.after(theirs, '{"mode":"c') == (b'ool"}', False)


def test_numbers_and_ranges(forced: Forced) -> None:
    grammar = f'root ::= "brightness=" ( {int_range(0, 100)} ) "%"'
    assert forced.after(grammar) == (b"brightness=", False)
    assert forced.after(grammar, "brightness=10") == (b"", False)  # 10% or 100%
    assert forced.after(grammar, "brightness=100") == (b"%", True)


def test_multibyte_characters_are_forced_byte_by_byte(forced: Forced) -> None:
    assert forced.after('root ::= "grüße"') == ("grüße".encode(), True)
    # ä and ö share their first byte: that byte is forced, the character is a choice.
    assert forced.after('root ::= "a" ( "ä" | "ö" )', "a") == (b"\xc3", False)


def test_forced_text_stops_at_the_limit(forced: Forced) -> None:
    parsed = parse_grammar(forced.vocab, 'root ::= "' + "x" * 50 + '"')
    decoder = Decoder(forced.vocab, None, parsed)
    try:
        assert decoder.forced_bytes(limit=20) == (b"x" * 20, False)
        assert decoder.grammar_seconds > 0
    finally:
        decoder.close()
        llama_cpp.llama_sampler_free(parsed)


def test_unparsable_grammar_is_refused(forced: Forced) -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        parse_grammar(forced.vocab, "root ::= ( unclosed")
