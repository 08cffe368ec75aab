"""Check a parsed call against the compiled tools and turn its values into typed data.

The first of the checks every call passes before anything runs (HA's own service schema,
exposure and user permissions follow in the HA adapter). A rejection says what was wrong
in words a model can repair from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import json
import re
from typing import Any

from botpsy_runtime.formats import ToolCall

from .tools import ACTION, Param, Tool

_INTEGER = re.compile(r"^-?\d+$")


class CallRejectedError(Exception):
    """The call cannot run; str() is the reason, for the model and the user."""


@dataclass(frozen=True, slots=True)
class ValidCall:
    """A call that passed the checks: its tool, its target, and its values typed."""

    tool: Tool
    entity_id: str
    data: dict[str, Any]

    @property
    def domain(self) -> str:
        """The domain of the service it runs: its target's."""
        return self.entity_id.partition(".")[0]

    @property
    def service_data(self) -> dict[str, Any]:
        """The service call's data: the target and the typed arguments."""
        return {"entity_id": self.entity_id, **self.data} if self.entity_id else dict(self.data)

    @property
    def arguments(self) -> dict[str, Any]:
        """The call as the model made it, with its values typed."""
        if not self.tool.service:
            return self.service_data
        return {"entity_id": self.entity_id, ACTION: self.tool.service, **self.data}


def _number(param: Param, raw: Any) -> float | int:
    value: float | int
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise CallRejectedError(f"{param.name} must be a number, not {raw!r}")
    if isinstance(raw, str):
        text = raw.strip()
        try:
            value = int(text) if _INTEGER.match(text) else float(text)
        except ValueError:
            raise CallRejectedError(f"{param.name} must be a number, not {raw!r}") from None
    else:
        value = raw
    if param.type == "integer":
        if not float(value).is_integer():
            raise CallRejectedError(f"{param.name} must be a whole number, not {value}")
        value = int(value)
    if (param.minimum is not None and value < param.minimum) or (param.maximum is not None and value > param.maximum):
        unit = f" {param.unit}" if param.unit else ""
        raise CallRejectedError(f"{param.name} must be between {param.minimum} and {param.maximum}{unit}, not {value}")
    return value


def coerce(param: Param, value: Any) -> Any:
    """`value` as `param`'s type, or CallRejectedError."""
    if param.type in ("integer", "number"):
        return _number(param, value)
    if param.type == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise CallRejectedError(f"{param.name} must be true or false, not {value!r}")
    if param.type == "rgb":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise CallRejectedError(f"{param.name} must be [red, green, blue], not {value!r}") from None
        if (
            not isinstance(value, list)
            or len(value) != 3
            or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in value)
        ):
            raise CallRejectedError(f"{param.name} must be [red, green, blue] with values 0-255, not {value!r}")
        return value
    if not isinstance(value, str) or not value.strip():
        raise CallRejectedError(f"{param.name} must be a non-empty text, not {value!r}")
    if param.type == "enum" and value not in param.options:
        raise CallRejectedError(f"{param.name} must be one of {', '.join(param.options)}, not {value!r}")
    return value


def find_tool(call: ToolCall, tools: Mapping[str, Tool]) -> Tool:
    """The tool `call` names, from tools by `Tool.key`: its function, and its action if
    the function has actions."""
    if (tool := tools.get(call.name)) is not None:
        return tool
    actions = [t.service for t in tools.values() if t.name == call.name]
    if not actions:
        raise CallRejectedError(f"there is no function {call.name!r}")
    action = call.arguments.get(ACTION)
    if (tool := tools.get(f"{call.name}.{action}")) is None:
        given = "" if action is None else f", not {action!r}"
        raise CallRejectedError(f"{call.name} needs an {ACTION}: one of {', '.join(actions)}{given}")
    return tool


def validate_call(call: ToolCall, tools: Mapping[str, Tool]) -> ValidCall:
    """Check `call` against `tools` (by `Tool.key`); its data typed, or CallRejectedError."""
    tool = find_tool(call, tools)
    arguments = dict(call.arguments)
    if tool.service:
        arguments.pop(ACTION)
    entity_id = ""
    if tool.targets:
        entity_id = arguments.pop("entity_id", None)
        if not isinstance(entity_id, str) or not entity_id:
            raise CallRejectedError(f"{tool.name} needs an entity_id")
        if entity_id not in tool.targets:
            raise CallRejectedError(f"{entity_id} cannot be used with {tool.name}")
    params = {p.name: p for p in (tool.targets[entity_id] if tool.targets else tool.arguments)}
    for name in arguments:
        if name not in params:
            raise CallRejectedError(f"{tool.name} takes no argument {name!r} for {entity_id}")
    groups: dict[str, list[str]] = {}
    for param in params.values():
        if param.required and param.name not in arguments:
            raise CallRejectedError(f"{tool.name} needs {param.name} for {entity_id}")
        if param.group and param.name in arguments:
            groups.setdefault(param.group, []).append(param.name)
    for names in groups.values():
        if len(names) > 1:
            raise CallRejectedError(f"{tool.name} takes only one of {', '.join(names)}")
    data = {name: coerce(params[name], value) for name, value in arguments.items()}
    return ValidCall(tool, entity_id, data)
