"""Tool-call formats: how a model writes a call, and how BotPsy reads it back.

Three formats, one interface: Qwen3.5's XML (BotPsy's own), Hermes JSON (Qwen3 and most
fine-tunes) and FunctionGemma's. The format follows the model's chat template
(`detect_format`), not its name. Each format also tells the grammar compiler how a call
and its values are spelled, so the grammar always matches what `parse` accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
import re
from typing import Any, Protocol

from .holdback import releasable_length

# Longest free text value a grammar admits (a to-do item, a search query).
MAX_TEXT_VALUE = 100


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model wrote (or the server parsed): a function name and its arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class ParsedOutput:
    """What the model wrote: text for the user, calls, and calls it botched (with why)."""

    content: str
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def add(self, call: ToolCall | str) -> None:
        """A call that was read, or why one could not be."""
        if isinstance(call, str):
            self.errors.append(call)
        else:
            self.calls.append(call)


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


# The first character of a call, or of a near miss of one, in any format: a tag, a bare
# JSON object or list, a code fence. An answer may not begin with one (the grammar sees
# to it), so the first character decides between answer and call, and output that begins
# like a call is never shown to the user as text.
CALL_OPENERS = "<{[`"


class CallFormat(Protocol):
    """How a model family writes tool calls: rendering and reading them, and their spelling in a grammar."""

    name: str
    # Text that starts a call: what the prompt's "answer" text may never contain.
    call_start: str

    @property
    def wrappers(self) -> tuple[tuple[str, str], ...]:
        """(opening, closing) text around a call: the format's own first, then the near misses
        the grammar also admits (small models often leave the tags out)."""

    def render(self, call: ToolCall) -> str:
        """The exact text of `call` in the format's own tags, arguments in the order given."""

    def parse(self, text: str) -> ParsedOutput:
        """Split model output into content and calls."""

    def shown_length(self, text: str, *, final: bool = False) -> int:
        """How much of a partial output may be shown as answer text."""

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        """GBNF sequence of a call without its wrapper; `arguments` are GBNF sequences from
        `grammar_argument`."""

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        """GBNF sequence of one argument whose value is the GBNF `value`."""

    def grammar_string(self, literal: str | None) -> str:
        """GBNF of a string value: `literal` exactly, or any string if None."""

    def value_text(self, value: Any) -> str:
        """How a non-string value is written."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


_FENCE = re.compile(r"^```[a-z]*\n?(.*?)\n?```$", re.S)
_DECODER = json.JSONDecoder()


def _json_call(data: Any) -> ToolCall | str:
    """A call from a decoded `{"name": ..., "arguments": {...}}` (or `"parameters"`)."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return "call has no function name"
    arguments = data.get("arguments", data.get("parameters", {}))
    if not isinstance(arguments, dict):
        return f"arguments of {data['name']} are not an object"
    return ToolCall(data["name"], arguments)


def _read_json(text: str, position: int) -> tuple[ToolCall | str, int] | None:
    """The JSON call (or why it is unusable) at `position`, and where it ends."""
    try:
        data, end = _DECODER.raw_decode(text, position)
    except json.JSONDecodeError as err:
        return f"call is not valid JSON ({err.msg})", len(text)
    if isinstance(data, list):  # a list of calls
        calls = [_json_call(item) for item in data]
        errors = [c for c in calls if isinstance(c, str)]
        return (errors[0] if errors else calls[0] if len(calls) == 1 else "several calls in one list"), end
    return _json_call(data), end


class _TaggedFormat:
    """Calls in tags: text before the first call is the content; each `_call` match is
    read by `_read_call`; whatever is left over is an unfinished call. Output that begins
    like a call without the tags is read as calls (`_read_bare`), never as content."""

    call_start: str
    wrappers: tuple[tuple[str, str], ...]
    _call: re.Pattern[str]

    def _read_call(self, body: str) -> ToolCall | str:
        """The call in the body of a tagged call, or why it is unusable."""
        raise NotImplementedError

    def _render_body(self, call: ToolCall) -> str:
        raise NotImplementedError

    def _read_bare(self, text: str, position: int) -> tuple[ToolCall | str, int] | None:
        """A call without tags at `position` (and where it ends), or None if there is none."""
        return _read_json(text, position) if text.startswith(("{", "["), position) else None

    def shown_length(self, text: str, *, final: bool = False) -> int:
        """How much of the output so far is answer text for the user: none if it begins
        like a call, else up to where a call starts (or may be starting, unless `final`)."""
        stripped = text.lstrip()
        if not stripped or stripped[0] in CALL_OPENERS:
            return 0
        cut = text.find(self.call_start)
        if cut >= 0:
            return cut
        return len(text) if final else releasable_length(text, (self.call_start,))

    def render(self, call: ToolCall) -> str:
        opening, closing = self.wrappers[0]
        return opening + self._render_body(call) + closing

    def parse(self, text: str) -> ParsedOutput:
        start = text.find(self.call_start)
        if start < 0:
            stripped = text.strip()
            if stripped[:1] in CALL_OPENERS:
                return self._parse_bare(stripped)
            return ParsedOutput(content=stripped)
        out = ParsedOutput(content=text[:start].strip())
        rest = text[start:]
        for match in self._call.finditer(rest):
            out.add(self._read_call(match.group(1)))
        if leftover := self._call.sub("", rest).strip():
            out.errors.append(f"unfinished or malformed call: {leftover[:80]!r}")
        return out

    def _parse_bare(self, text: str) -> ParsedOutput:
        out = ParsedOutput(content="")
        if fenced := _FENCE.match(text):
            text = fenced.group(1).strip()
        position = 0
        while position < len(text) and (found := self._read_bare(text, position)) is not None:
            call, position = found
            out.add(call)
            while position < len(text) and text[position] in " \n\t,":
                position += 1
        if position < len(text):
            out.errors.append(f"unfinished or malformed call: {text[position : position + 80]!r}")
        return out

    def value_text(self, value: Any) -> str:
        return _json(value)


class QwenXMLFormat(_TaggedFormat):
    """`<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>`."""

    name = "qwen_xml"
    call_start = "<tool_call>"
    wrappers = (("<tool_call>\n", "\n</tool_call>"), ("", ""))
    _call = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)
    _function = re.compile(r"<function=([^>\n]+)>\n(.*?)</function>", re.S)
    _parameter = re.compile(r"<parameter=([^>\n]+)>\n(.*?)\n</parameter>\n", re.S)

    def _render_body(self, call: ToolCall) -> str:
        params = "".join(
            f"<parameter={k}>\n{v if isinstance(v, str) else self.value_text(v)}\n</parameter>\n"
            for k, v in call.arguments.items()
        )
        return f"<function={call.name}>\n{params}</function>"

    def _read_call(self, body: str) -> ToolCall | str:
        function = self._function.fullmatch(body)
        if function is not None:
            return self._read_function(function)
        # Qwen3.5 descends from models that wrote JSON inside the same tags (Hermes calls);
        # without a grammar (a model server) it may still.
        if body.lstrip().startswith("{") and (found := _read_json(body, len(body) - len(body.lstrip()))):
            call, end = found
            if isinstance(call, ToolCall) and not body[end:].strip():
                return call
        return f"malformed call: {body[:80]!r}"

    def _read_function(self, function: re.Match[str]) -> ToolCall | str:
        params = function.group(2)
        if self._parameter.sub("", params).strip():
            return f"malformed arguments in call of {function.group(1)}"
        return ToolCall(function.group(1), dict(self._parameter.findall(params)))

    def _read_bare(self, text: str, position: int) -> tuple[ToolCall | str, int] | None:
        if function := self._function.match(text, position):
            return self._read_function(function), function.end()
        return super()._read_bare(text, position)

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        """GBNF of a call: its arguments between `<function=NAME>` and `</function>`."""
        return " ".join([gbnf_literal(f"<function={name}>\n"), *arguments, gbnf_literal("</function>")])

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        """GBNF of one argument: its value on a line of its own, inside `<parameter=KEY>` tags."""
        return f"{gbnf_literal(f'<parameter={key}>\n')} {value} {gbnf_literal('\n</parameter>\n')}"

    def grammar_string(self, literal: str | None) -> str:
        """GBNF of a string value: raw text on one line without `<`, or `literal` exactly."""
        # Raw text; it cannot contain the closing tag's line break.
        return gbnf_literal(literal) if literal is not None else f"[^\\n<]{{1,{MAX_TEXT_VALUE}}}"


class HermesJSONFormat(_TaggedFormat):
    """`<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>`."""

    name = "hermes_json"
    call_start = "<tool_call>"
    wrappers = (("<tool_call>\n", "\n</tool_call>"), ("", ""))
    _call = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)

    def _render_body(self, call: ToolCall) -> str:
        return _json({"name": call.name, "arguments": call.arguments})

    def _read_call(self, body: str) -> ToolCall | str:
        try:
            return _json_call(json.loads(body))
        except json.JSONDecodeError as err:
            return f"call is not valid JSON ({err.msg})"

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        """GBNF of a call: its arguments inside `{"name": NAME, "arguments": {...}}`."""
        head = gbnf_literal(f'{{"name": {_json(name)}, "arguments": {{')
        return " ".join([head, *arguments, gbnf_literal("}}")])

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        """GBNF of one argument: `"KEY": VALUE`, after a comma unless it is the first."""
        return f"{gbnf_literal(('' if first else ', ') + _json(key) + ': ')} {value}"

    def grammar_string(self, literal: str | None) -> str:
        """GBNF of a string value: a JSON string of 1 to MAX_TEXT_VALUE characters, or `literal` exactly."""
        if literal is not None:
            return gbnf_literal(_json(literal))
        return f'"\\"" ( [^"\\\\\\x00-\\x1f] | "\\\\" ["\\\\/bfnrt] ){{1,{MAX_TEXT_VALUE}}} "\\""'


class GemmaFormat(_TaggedFormat):
    """FunctionGemma: `<start_function_call>call:NAME{k:<escape>v<escape>,n:1}<end_function_call>`."""

    name = "gemma"
    call_start = "<start_function_call>"
    wrappers = (("<start_function_call>", "<end_function_call>"),)
    _call = re.compile(r"<start_function_call>(.*?)<end_function_call>", re.S)
    _body = re.compile(r"call:([A-Za-z0-9_.-]+)\{(.*)\}", re.S)
    _argument = re.compile(r"([A-Za-z0-9_]+):(<escape>(.*?)<escape>|\[[^\]]*\]|[^,<{}\[]*)(,|$)", re.S)

    def _render_body(self, call: ToolCall) -> str:
        args = ",".join(
            f"{k}:<escape>{v}<escape>" if isinstance(v, str) else f"{k}:{self.value_text(v)}"
            for k, v in call.arguments.items()
        )
        return f"call:{call.name}{{{args}}}"

    def _read_call(self, body: str) -> ToolCall | str:
        match = self._body.fullmatch(body)
        if match is None:
            return f"malformed call: {body[:80]!r}"
        arguments: dict[str, Any] = {}
        params = match.group(2)
        position = 0
        while position < len(params) and (argument := self._argument.match(params, position)) is not None:
            key, raw, escaped = argument.group(1), argument.group(2), argument.group(3)
            arguments[key] = escaped if escaped is not None else _plain(raw)
            position = argument.end()
        if position != len(params):
            return f"malformed arguments in call of {match.group(1)}"
        return ToolCall(match.group(1), arguments)

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        """GBNF of a call: its arguments inside `call:NAME{...}`."""
        return " ".join([gbnf_literal(f"call:{name}{{"), *arguments, gbnf_literal("}")])

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        """GBNF of one argument: `KEY:VALUE`, after a comma unless it is the first."""
        return f"{gbnf_literal(('' if first else ',') + key + ':')} {value}"

    def grammar_string(self, literal: str | None) -> str:
        """GBNF of a string value: text without `<` between `<escape>` marks, or `literal` exactly."""
        inner = gbnf_literal(literal) if literal is not None else f"[^<]{{1,{MAX_TEXT_VALUE}}}"
        return f'"<escape>" {inner} "<escape>"'


def _plain(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


FORMATS: dict[str, CallFormat] = {f.name: f for f in (QwenXMLFormat(), HermesJSONFormat(), GemmaFormat())}
# Every model has seen calls as JSON objects: the near miss the grammar admits in every format.
JSON_CALLS = FORMATS["hermes_json"]


def detect_format(chat_template: str | None) -> CallFormat:
    """The call format the model's chat template teaches it."""
    template = chat_template or ""
    if "<function=" in template and "<parameter=" in template:
        return FORMATS["qwen_xml"]
    if "start_function_call" in template:
        return FORMATS["gemma"]
    return FORMATS["hermes_json"]
