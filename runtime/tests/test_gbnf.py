"""The remote engine's reading of GBNF, checked against llama.cpp's own grammar sampler.

What `gbnf.State` says a grammar allows after a text, llama.cpp must allow too: the same
texts are accepted, the forced text is what every accepted continuation starts with, and
the grammar `State.gbnf` writes for llama-server accepts exactly the rest of the original.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from botpsy_runtime.formats import FORMATS, CallFormat
from botpsy_runtime.gbnf import GbnfError, Grammar
from scripts.testing.grammar_check import GrammarChecker

from .grammars import call_grammar


@pytest.fixture(scope="module")
def checker(tiny_models: dict[str, Path]) -> GrammarChecker:
    return GrammarChecker(tiny_models["qwen3"])


def accepts(grammar: str, text: str, *, complete: bool = True) -> bool:
    state = Grammar(grammar).start().advance(text)
    return state is not None and (state.can_end or not complete)


SYNTAX = [
    # (grammar, texts to try)
    (r'root ::= "a\x41\u00e9\t\n\\\"\[\]\-" "z"', ['aAé\t\n\\"[]-z', "aAé", "z"]),
    (r"root ::= [a-cx] [^a-z0-9] .", ["b!!", "x--", "d!!", "ba1", "aZé"]),
    (r"root ::= [-a] [a-] [\]\[] [x^]", ["-a]^", "a-[x", "aa]]", "-a[y"]),
    ('root ::= x y\nx ::= "x" | "X"  # a comment\ny ::= ( "1" | "2" "3" )', ["x1", "X23", "x2", "y1"]),
    ('root ::= "a"* "b"+ "c"? "d"{2} "e"{1,} "f"{0,2}', ["bdde", "aabbcddeeeff", "bcdd", "bddefff", "abdd"]),
    ('root ::= ( "ab" | "c" ){2,3} "!"', ["abc!", "ccab!", "c!", "ababab!", "abababab!"]),
    ('root ::= "a" (\n  "b" |\n  "c"\n)\n', ["ab", "ac", "a"]),
    ('root ::= "x" ( "y" [0-9]{1,3} )* ""', ["x", "xy1y22y333", "xy1234", "xy"]),
    ('root ::= "1" r\nr ::= "2" r | "3"', ["123", "12223", "12", "13"]),
    ('root ::= a\r\na ::= "é" [à-ü]\r\n', ["éä", "éz"]),
]


@pytest.mark.parametrize(("grammar", "texts"), SYNTAX)
def test_reads_gbnf_as_llama_cpp_does(grammar: str, texts: list[str], checker: GrammarChecker) -> None:
    checker.check(grammar)
    for text in texts:
        for k in range(len(text) + 1):
            assert accepts(grammar, text[:k], complete=False) == checker.accepts(grammar, text[:k], complete=False)
        assert accepts(grammar, text) == checker.accepts(grammar, text), text


@pytest.mark.parametrize(
    ("grammar", "why"),
    [
        ('root ::= x\nx ::= "a" y', "undefined rule 'y'"),
        ('rule ::= "a"', "no root rule"),
        ("root ::= <[42]>", "token references"),
        ('root ::= "\\q"', "unknown escape"),
        ('root ::= ( "a" ', "expecting '\\)'"),
        ('root ::= "a" "b"\n  "c"', "expecting name"),
        ("root ::= *", "expecting an item"),
        ('root ::= "a"{x}', "expecting an integer"),
        ('root ::= "a"{1,2', "expecting '}'"),
        ('root ::= "a" root_b', "expecting newline or end"),
    ],
)
def test_refuses_what_it_does_not_read(grammar: str, why: str) -> None:
    with pytest.raises(GbnfError, match=why):
        Grammar(grammar)


def test_forced_text_and_the_end() -> None:
    start = Grammar('root ::= "<call>" ( "on" | "off" ) "</call>" ( "\\n" root )?').start()
    assert not start.can_end
    forced, after = start.forced()
    assert forced == "<call>o"
    assert after.forced()[0] == ""
    done = after.advance("n")
    assert done is not None
    assert done.forced()[0] == "</call>"
    end = done.advance("</call>")
    assert end is not None and end.can_end and not end.finished
    assert end.forced()[0] == ""  # it may end, or go on: nothing is forced
    state = Grammar('root ::= "x" "yz"').start().advance("x")
    assert state is not None and not state.finished
    forced, after = state.forced()
    assert forced == "yz" and after.finished


def test_remainder_grammar_on_what_may_end(checker: GrammarChecker) -> None:
    state = Grammar('root ::= "a" "b"? [^"]*').start().advance("ab")
    assert state is not None and state.can_end
    rest = state.gbnf()
    checker.check(rest)
    assert checker.accepts(rest, "")
    assert checker.accepts(rest, "xyz")
    assert not checker.accepts(rest, 'x"')


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=list(FORMATS))
def test_text_answers_and_text_only_rounds(fmt: CallFormat, checker: GrammarChecker) -> None:
    for grammar in (call_grammar(fmt.name, "answer"), call_grammar(fmt.name, "text")):
        start = Grammar(grammar).start()
        text = "The kitchen light is on, 100%."
        state = start.advance(text[:4])
        assert state is not None and state.forced()[0] == ""
        rest = state.gbnf()
        assert checker.accepts(rest, text[4:])
        assert not checker.accepts(rest, text[4:] + "{", complete=False)
    calls_only = call_grammar(fmt.name, "calls")
    assert Grammar(calls_only).start().advance("The") is None
