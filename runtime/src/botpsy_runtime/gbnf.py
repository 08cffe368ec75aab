"""Where a GBNF grammar stands after a text, for a model server that has the grammar but no
fast path for the text it forces.

llama-server samples every token of a constrained answer one by one, even where the grammar
leaves a single possible text (most of a tool call: its keys, quotes and braces). The
embedded worker appends such text in one batch (`worker.py`, `constrained.py`); the remote
engine does the same through the server (`remote.py`): it asks for one token at a time, and
between two it appends the forced text to the prompt, which the server evaluates as a batch,
with the grammar of what may still follow. Home Assistant does not load llama.cpp, so this
module reads the grammar itself: GBNF as llama.cpp's parser reads it
(`src/llama-grammar.cpp`), and its pushdown stacks as llama.cpp advances them, one code
point at a time. The server's grammar sampler remains the judge of every token it samples,
under the grammar `State.gbnf` writes; a grammar this module cannot read gets no fast path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
import functools
import re

# llama.cpp reads a repetition bound above this as no bound.
_MAX_REPETITION = 2000
# Stacks kept per state (a choice among a thousand entities takes about as many); a state
# that branches into more is not followed (GbnfError).
MAX_STACKS = 20000
# Forced text is looked for this many characters ahead at most.
MAX_FORCED = 512
_PLAIN = re.compile(r'[^"\\]+')  # literal text without escapes


class GbnfError(ValueError):
    """A grammar this module does not read (or llama.cpp would not)."""


@dataclass(frozen=True, slots=True)
class CharSet:
    """One character out of `ranges` (inclusive code point pairs), or out of none of them."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False
    any: bool = False

    def matches(self, char: int) -> bool:
        """Whether the code point `char` is one of the set."""
        if self.any:
            return True
        return any(low <= char <= high for low, high in self.ranges) != self.negated

    @property
    def single(self) -> int | None:
        """The one character this set admits, if it admits only one."""
        return _single(self)


@functools.cache
def _single(chars: CharSet) -> int | None:
    if chars.any or chars.negated or not chars.ranges:
        return None
    lows = {low for low, _ in chars.ranges}
    if len(lows) == 1 and lows == {high for _, high in chars.ranges}:
        return lows.pop()
    return None


@functools.cache
def _literal(char: int) -> CharSet:
    return CharSet(((char, char),))


Symbol = CharSet | int  # a character, or a reference to a rule by its index
Sequence = tuple[Symbol, ...]
# (rule, alternative, position): what is left of one alternative of a rule.
Frame = tuple[int, int, int]
# Frames from the bottom of the pushdown stack to its top; the top's next symbol is a
# character. An empty stack: the grammar is complete.
Stack = tuple[Frame, ...]


class _Parser:
    """llama.cpp's GBNF reader, rule for rule, into rules without repetition operators."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.ids: dict[str, int] = {}
        self.rules: dict[int, list[Sequence]] = {}

    def _peek(self, offset: int = 0) -> str:
        at = self.pos + offset
        return self.text[at] if at < len(self.text) else ""

    def _error(self, what: str) -> GbnfError:
        return GbnfError(f"{what} at {self.text[self.pos : self.pos + 20]!r}")

    def _space(self, newline_ok: bool) -> None:
        while (c := self._peek()) and (c in " \t#" or (newline_ok and c in "\r\n")):
            if c == "#":
                while (c := self._peek()) and c not in "\r\n":
                    self.pos += 1
            else:
                self.pos += 1

    def _name(self) -> str:
        start = self.pos
        while (c := self._peek()) and (c.isascii() and (c.isalnum() or c == "-")):
            self.pos += 1
        if self.pos == start:
            raise self._error("expecting name")
        return self.text[start : self.pos]

    def _id(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids))

    def _new_id(self, base: str) -> int:
        return self._id(f"{base}_{len(self.ids)}")

    def _char(self) -> int:
        c = self._peek()
        if not c:
            raise self._error("unexpected end of input")
        if c != "\\":
            self.pos += 1
            return ord(c)
        escape = self._peek(1)
        self.pos += 2
        if escape in ("x", "u", "U"):
            size = {"x": 2, "u": 4, "U": 8}[escape]
            digits = self.text[self.pos : self.pos + size]
            if len(digits) != size or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self._error(f"expecting {size} hex chars")
            self.pos += size
            return int(digits, 16)
        simple = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}
        if escape not in simple:
            raise self._error("unknown escape")
        return ord(simple[escape])

    def parse(self) -> tuple[list[list[Sequence]], int]:
        self._space(True)
        while self.pos < len(self.text):
            name = self._name()
            self._space(False)
            if self.text[self.pos : self.pos + 3] != "::=":
                raise self._error("expecting ::=")
            self.pos += 3
            self._space(True)
            self._alternates(name, self._id(name), nested=False)
            if self._peek() == "\r":
                self.pos += 2 if self._peek(1) == "\n" else 1
            elif self._peek() == "\n":
                self.pos += 1
            elif self._peek():
                raise self._error("expecting newline or end")
            self._space(True)
        if "root" not in self.ids:
            raise GbnfError("no root rule")
        missing = [name for name, i in self.ids.items() if i not in self.rules]
        if missing:
            raise GbnfError(f"undefined rule {missing[0]!r}")
        return [self.rules[i] for i in range(len(self.ids))], self.ids["root"]

    def _alternates(self, name: str, rule: int, *, nested: bool) -> None:
        alternatives = [self._sequence(name, nested)]
        while self._peek() == "|":
            self.pos += 1
            self._space(True)
            alternatives.append(self._sequence(name, nested))
        self.rules[rule] = alternatives

    def _sequence(self, name: str, nested: bool) -> Sequence:
        out: list[Symbol] = []
        last = len(out)  # where the last item (what a repetition repeats) starts
        while c := self._peek():
            if c == '"':
                last = len(out)
                out += self._string()
            elif c == "[":
                last = len(out)
                out.append(self._char_class())
            elif c.isascii() and (c.isalnum() or c == "-"):
                last = len(out)
                out.append(self._id(self._name()))
            elif c == "(":
                last = len(out)
                out.append(self._group(name))
            elif c == ".":
                self.pos += 1
                last = len(out)
                out.append(CharSet((), any=True))
            elif c in "*+?{":
                self.pos += 1
                least, most = self._bounds(c, nested)
                if last == len(out):
                    raise self._error("expecting an item before a repetition")
                out[last:] = self._repeat(name, tuple(out[last:]), least, most)
            else:
                if c in "<!":
                    raise self._error("token references are not read here")
                break
            self._space(nested)
        return tuple(out)

    def _string(self) -> list[CharSet]:
        """A quoted literal, one character per symbol (runs without escapes read at once)."""
        self.pos += 1
        out: list[CharSet] = []
        while self._peek() != '"':
            if plain := _PLAIN.match(self.text, self.pos):
                out += map(_literal, map(ord, plain.group()))
                self.pos = plain.end()
            else:
                out.append(_literal(self._char()))
        self.pos += 1
        return out

    def _char_class(self) -> CharSet:
        """A bracketed character class, `[^...]` negated, with its ranges as written."""
        self.pos += 1
        negated = self._peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while self._peek() != "]":
            low = self._char()
            high = low
            if self._peek() == "-" and self._peek(1) not in ("]", ""):
                self.pos += 1
                high = self._char()
            ranges.append((low, high))
        self.pos += 1
        return CharSet(tuple(ranges), negated)

    def _group(self, name: str) -> int:
        """A parenthesized group, read into a rule of its own (as llama.cpp does); its index."""
        self.pos += 1
        self._space(True)
        sub = self._new_id(name)
        self._alternates(name, sub, nested=True)
        if self._peek() != ")":
            raise self._error("expecting ')'")
        self.pos += 1
        return sub

    def _bounds(self, operator: str, nested: bool) -> tuple[int, int | None]:
        if operator != "{":
            self._space(nested)
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[operator]
        self._space(nested)
        low = self._int()
        self._space(nested)
        high: int | None = low
        if self._peek() == ",":
            self.pos += 1
            self._space(nested)
            high = self._int() if self._peek().isdigit() else None
            self._space(nested)
        if self._peek() != "}":
            raise self._error("expecting '}'")
        self.pos += 1
        if low > _MAX_REPETITION:
            raise self._error("too many repetitions")
        if high is not None and high > _MAX_REPETITION:
            high = None
        return low, high

    def _int(self) -> int:
        start = self.pos
        while self._peek().isascii() and self._peek().isdigit():
            self.pos += 1
        if self.pos == start:
            raise self._error("expecting an integer")
        return int(self.text[start : self.pos])

    def _repeat(self, name: str, item: Sequence, low: int, high: int | None) -> list[Symbol]:
        """S{m,n} as llama.cpp rewrites it: S m times, then n-m nested optional S."""
        out: list[Symbol] = list(item * low)
        if high is None:
            rest = self._new_id(name)
            self.rules[rest] = [(*item, rest), ()]
            out.append(rest)
            return out
        previous: int | None = None
        for _ in range(high - low):
            optional = self._new_id(name)
            self.rules[optional] = [(*item, previous) if previous is not None else item, ()]
            previous = optional
        if previous is not None:
            out.append(previous)
        return out


class Grammar:
    """A GBNF grammar as llama.cpp reads it."""

    def __init__(self, text: str) -> None:
        self.rules, self.root = _Parser(text).parse()

    @functools.cached_property
    def rules_gbnf(self) -> str:
        """Every rule as GBNF, for the grammars of what may follow (rules nothing refers to
        cost llama-server nothing but their reading)."""
        return "".join(
            f"r{i} ::= " + " | ".join(_sequence_gbnf(s) for s in alternatives) + "\n"
            for i, alternatives in enumerate(self.rules)
        )

    def start(self) -> State:
        """The state before any text: at the start of the root rule."""
        return State(self, _expand(self.rules, [((self.root, a, 0),) for a in range(len(self.rules[self.root]))]))


def _expand(rules: list[list[Sequence]], todo: list[Stack]) -> frozenset[Stack]:
    """Every stack reachable from `todo` whose top is at a character (or that is empty), as
    llama.cpp's `llama_grammar_advance_stack` finds them."""
    done: set[Stack] = set()
    seen: set[Stack] = set()
    while todo:
        stack = todo.pop()
        if stack in seen:
            continue
        seen.add(stack)
        if len(seen) > 10 * MAX_STACKS:
            raise GbnfError("the grammar branches too much here")
        if not stack:
            done.add(stack)
            continue
        rule, alternative, position = stack[-1]
        symbols = rules[rule][alternative]
        if position == len(symbols):
            todo.append(stack[:-1])
            continue
        symbol = symbols[position]
        if isinstance(symbol, CharSet):
            done.add(stack)
            if len(done) > MAX_STACKS:
                raise GbnfError("the grammar branches too much here")
            continue
        # A rule's last symbol leaves no frame behind (llama.cpp does the same): a repetition
        # does not deepen the stack.
        rest = stack[:-1] if position + 1 == len(symbols) else (*stack[:-1], (rule, alternative, position + 1))
        todo.extend((*rest, (symbol, a, 0)) for a in range(len(rules[symbol])))
    return frozenset(done)


class State:
    """The grammar's pushdown stacks after some text: what it may still write."""

    def __init__(self, grammar: Grammar, stacks: frozenset[Stack]) -> None:
        self.grammar = grammar
        self.stacks = stacks

    @property
    def can_end(self) -> bool:
        """Whether the grammar may end here: the text so far is complete."""
        return () in self.stacks

    @property
    def finished(self) -> bool:
        """Nothing more may be written: only the end."""
        return self.stacks == frozenset({()})

    def advance(self, text: str) -> State | None:
        """The state after `text`, or None if the grammar does not admit it."""
        stacks = self.stacks
        rules = self.grammar.rules
        for c in map(ord, text):
            todo: list[Stack] = []
            for stack in stacks:
                if not stack:
                    continue
                rule, alternative, position = stack[-1]
                symbol = rules[rule][alternative][position]
                if isinstance(symbol, CharSet) and symbol.matches(c):
                    todo.append((*stack[:-1], (rule, alternative, position + 1)))
            if not todo:
                return None
            stacks = _expand(rules, todo)
        return State(self.grammar, stacks)

    def forced(self) -> tuple[str, State]:
        """The longest text the grammar allows alone from here (it may not end before it
        either), and the state after it."""
        state: State = self
        out: list[str] = []
        while len(out) < MAX_FORCED and not state.can_end:
            chars = {self._top(stack).single for stack in state.stacks}
            if len(chars) != 1 or (char := chars.pop()) is None:
                break
            following = state.advance(chr(char))
            if following is None:  # cannot happen: every stack admits it
                break
            out.append(chr(char))
            state = following
        return "".join(out), state

    def _top(self, stack: Stack) -> CharSet:
        rule, alternative, position = stack[-1]
        symbol = self.grammar.rules[rule][alternative][position]
        assert isinstance(symbol, CharSet)
        return symbol

    def gbnf(self) -> str:
        """A GBNF grammar of exactly what may follow: for llama-server, whose grammar
        starts at the root on every request."""
        rules = self.grammar.rules
        alternatives: list[str] = []
        for stack in sorted(self.stacks):
            if not stack:
                continue
            parts: list[Symbol] = []
            for rule, alternative, position in reversed(stack):
                parts += rules[rule][alternative][position:]
            alternatives.append(_sequence_gbnf(parts))
        body = " | ".join(f"( {a} )" for a in alternatives)
        root = f"root ::= ( {body} )?" if self.can_end else f"root ::= {body}"
        return root + "\n" + self.grammar.rules_gbnf


@functools.cache
def _escape(char: int, *, in_class: bool) -> str:
    c = chr(char)
    if c in {"\\", '"'} or (in_class and c in "[]-"):
        return "\\" + c
    if 0x20 <= char < 0x7F and not (in_class and c == "^"):
        return c
    return f"\\x{char:02X}" if char < 0x100 else (f"\\u{char:04X}" if char < 0x10000 else f"\\U{char:08X}")


def _sequence_gbnf(symbols: Iterable[Symbol]) -> str:
    parts: list[str] = []
    literal: list[str] = []
    for symbol in symbols:
        if isinstance(symbol, CharSet) and (char := symbol.single) is not None:
            literal.append(_escape(char, in_class=False))
            continue
        if literal:
            parts.append('"' + "".join(literal) + '"')
            literal = []
        if isinstance(symbol, int):
            parts.append(f"r{symbol}")
        elif symbol.any:
            parts.append(".")
        else:
            inner = "".join(
                _escape(low, in_class=True) + ("" if low == high else "-" + _escape(high, in_class=True))
                for low, high in symbol.ranges
            )
            parts.append(f"[{'^' if symbol.negated else ''}{inner}]")
    if literal:
        parts.append('"' + "".join(literal) + '"')
    return " ".join(parts) if parts else '""'
