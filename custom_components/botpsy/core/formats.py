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

# Longest free text value a grammar admits (a to-do item, a search query).
MAX_TEXT_VALUE = 100


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class ParsedOutput:
    """What the model wrote: text for the user, calls, and calls it botched (with why)."""

    content: str
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


class CallFormat(Protocol):
    name: str
    # Text that starts a call: what the prompt's "answer" text may never contain.
    call_start: str

    def render(self, call: ToolCall) -> str:
        """The exact text of `call`, arguments in the order given."""

    def parse(self, text: str) -> ParsedOutput:
        """Split model output into content and calls."""

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        """GBNF sequence of a call; `arguments` are GBNF sequences from `grammar_argument`."""

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        """GBNF sequence of one argument whose value is the GBNF `value`."""

    def grammar_string(self, literal: str | None) -> str:
        """GBNF of a string value: `literal` exactly, or any string if None."""

    def value_text(self, value: Any) -> str:
        """How a non-string value is written."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _TaggedFormat:
    """Calls wrapped in tags: text before the first call is the content; each `_call`
    match is read by `_read_call`; whatever is left over is an unfinished call."""

    call_start: str
    _call: re.Pattern[str]

    def _read_call(self, match: re.Match[str]) -> ToolCall | str:
        """The call in `match`, or why it is unusable."""
        raise NotImplementedError

    def parse(self, text: str) -> ParsedOutput:
        start = text.find(self.call_start)
        out = ParsedOutput(content=(text if start < 0 else text[:start]).strip())
        if start < 0:
            return out
        rest = text[start:]
        for match in self._call.finditer(rest):
            call = self._read_call(match)
            if isinstance(call, str):
                out.errors.append(call)
            else:
                out.calls.append(call)
        if leftover := self._call.sub("", rest).strip():
            out.errors.append(f"unfinished or malformed call: {leftover[:80]!r}")
        return out

    def value_text(self, value: Any) -> str:
        return _json(value)


class QwenXMLFormat(_TaggedFormat):
    """`<tool_call>\\n<function=NAME>\\n<parameter=K>\\nV\\n</parameter>\\n</function>\\n</tool_call>`."""

    name = "qwen_xml"
    call_start = "<tool_call>"
    _call = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)
    _function = re.compile(r"^<function=([^>\n]+)>\n(.*)</function>$", re.S)
    _parameter = re.compile(r"<parameter=([^>\n]+)>\n(.*?)\n</parameter>\n", re.S)

    def render(self, call: ToolCall) -> str:
        params = "".join(
            f"<parameter={k}>\n{v if isinstance(v, str) else self.value_text(v)}\n</parameter>\n"
            for k, v in call.arguments.items()
        )
        return f"<tool_call>\n<function={call.name}>\n{params}</function>\n</tool_call>"

    def _read_call(self, match: re.Match[str]) -> ToolCall | str:
        function = self._function.match(match.group(1))
        if function is None:
            return f"malformed call: {match.group(1)[:80]!r}"
        body = function.group(2)
        if self._parameter.sub("", body).strip():
            return f"malformed arguments in call of {function.group(1)}"
        return ToolCall(function.group(1), dict(self._parameter.findall(body)))

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        head = gbnf_literal(f"<tool_call>\n<function={name}>\n")
        return " ".join([head, *arguments, gbnf_literal("</function>\n</tool_call>")])

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        return f"{gbnf_literal(f'<parameter={key}>\n')} {value} {gbnf_literal('\n</parameter>\n')}"

    def grammar_string(self, literal: str | None) -> str:
        # Raw text; it cannot contain the closing tag's line break.
        return gbnf_literal(literal) if literal is not None else f"[^\\n<]{{1,{MAX_TEXT_VALUE}}}"


class HermesJSONFormat(_TaggedFormat):
    """`<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>`."""

    name = "hermes_json"
    call_start = "<tool_call>"
    _call = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)

    def render(self, call: ToolCall) -> str:
        return f"<tool_call>\n{_json({'name': call.name, 'arguments': call.arguments})}\n</tool_call>"

    def _read_call(self, match: re.Match[str]) -> ToolCall | str:
        try:
            data = json.loads(match.group(1))
        except json.JSONDecodeError as err:
            return f"call is not valid JSON ({err.msg})"
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return "call has no function name"
        arguments = data.get("arguments", {})
        if not isinstance(arguments, dict):
            return f"arguments of {data['name']} are not an object"
        return ToolCall(data["name"], arguments)

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        head = gbnf_literal(f'<tool_call>\n{{"name": {_json(name)}, "arguments": {{')
        return " ".join([head, *arguments, gbnf_literal("}}\n</tool_call>")])

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        return f"{gbnf_literal(('' if first else ', ') + _json(key) + ': ')} {value}"

    def grammar_string(self, literal: str | None) -> str:
        if literal is not None:
            return gbnf_literal(_json(literal))
        return f'"\\"" ( [^"\\\\\\x00-\\x1f] | "\\\\" ["\\\\/bfnrt] ){{1,{MAX_TEXT_VALUE}}} "\\""'


class GemmaFormat(_TaggedFormat):
    """FunctionGemma: `<start_function_call>call:NAME{k:<escape>v<escape>,n:1}<end_function_call>`."""

    name = "gemma"
    call_start = "<start_function_call>"
    _call = re.compile(r"<start_function_call>call:([A-Za-z0-9_.-]+)\{(.*?)\}<end_function_call>", re.S)
    _argument = re.compile(r"([A-Za-z0-9_]+):(<escape>(.*?)<escape>|\[[^\]]*\]|[^,<{}\[]*)(,|$)", re.S)

    def render(self, call: ToolCall) -> str:
        args = ",".join(
            f"{k}:<escape>{v}<escape>" if isinstance(v, str) else f"{k}:{self.value_text(v)}"
            for k, v in call.arguments.items()
        )
        return f"<start_function_call>call:{call.name}{{{args}}}<end_function_call>"

    def _read_call(self, match: re.Match[str]) -> ToolCall | str:
        arguments: dict[str, Any] = {}
        body = match.group(2)
        position = 0
        while position < len(body) and (argument := self._argument.match(body, position)) is not None:
            key, raw, escaped = argument.group(1), argument.group(2), argument.group(3)
            arguments[key] = escaped if escaped is not None else _plain(raw)
            position = argument.end()
        if position != len(body):
            return f"malformed arguments in call of {match.group(1)}"
        return ToolCall(match.group(1), arguments)

    def grammar_call(self, name: str, arguments: list[str]) -> str:
        head = gbnf_literal(f"<start_function_call>call:{name}{{")
        return " ".join([head, *arguments, gbnf_literal("}<end_function_call>")])

    def grammar_argument(self, key: str, value: str, *, first: bool) -> str:
        return f"{gbnf_literal(('' if first else ',') + key + ':')} {value}"

    def grammar_string(self, literal: str | None) -> str:
        inner = gbnf_literal(literal) if literal is not None else f"[^<]{{1,{MAX_TEXT_VALUE}}}"
        return f'"<escape>" {inner} "<escape>"'


def _plain(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


FORMATS: dict[str, CallFormat] = {f.name: f for f in (QwenXMLFormat(), HermesJSONFormat(), GemmaFormat())}


def detect_format(chat_template: str | None) -> CallFormat:
    """The call format the model's chat template teaches it."""
    template = chat_template or ""
    if "<function=" in template and "<parameter=" in template:
        return FORMATS["qwen_xml"]
    if "start_function_call" in template:
        return FORMATS["gemma"]
    return FORMATS["hermes_json"]
