"""One generation round streamed into the chat log: text as it comes, calls parsed and sorted.

Text that cannot be (the start of) a call streams at once; calls are parsed when the
model is done, then each is run through the ChatLog, held for the user's confirmation,
or dropped (a repeat of one already run, or one the request does not allow).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
import json
import time
from typing import TYPE_CHECKING, Any

from homeassistant.components import conversation
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.json import json_dumps

from botpsy_runtime.engine import Engine, Finished, GenerateRequest, TextDelta, Timings, ToolCallDelta
from botpsy_runtime.errors import EngineError
from botpsy_runtime.formats import CallFormat, ParsedOutput, ToolCall

from .const import DOMAIN, LOGGER
from .core.policy import undoes
from .core.tools import ACTION
from .stats import EngineStats

if TYPE_CHECKING:
    from .confirmation import Risk, Verdict


async def async_say(chat_log: conversation.ChatLog, agent_id: str, text: str) -> None:
    """Add the agent's `text` to the chat log (streamed to the user like a model's)."""

    async def reply() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant", "content": text}

    async for _content in chat_log.async_add_delta_content_stream(agent_id, reply()):
        pass


@dataclass(slots=True)
class CallPolicy:
    """Which of the calls a round writes may run: the request decides (`request`), the
    generation applies it as it runs them."""

    # The confirmation and permission check of each call (None: every call may run).
    gate: Callable[[ToolCall], Awaitable[Verdict]] | None = None
    # Every call run this turn (shared by its rounds): a repeat is not run again.
    ran: set[str] = field(default_factory=set)
    # A call the request does not allow (an action for a question, a device it does not name).
    refuse: Callable[[ToolCall], bool] = lambda _call: False
    # One call written for every device that fits, as the calls for each of them.
    spread: Callable[[ToolCall], list[ToolCall]] = lambda call: [call]
    # False in the last round: the calls the model still writes are not run.
    allow_calls: bool = True
    # The action of each device acted on this turn; a call undoing it is not run, unless
    # the request asks for both ways ("off and on again").
    acted: dict[str, str] = field(default_factory=dict)
    both_ways: bool = False


class Generation:
    """One generation: streams plain text as it comes, holds back and parses calls."""

    def __init__(
        self, fmt: CallFormat | None, stats: EngineStats, policy: CallPolicy | None = None, *, stream_text: bool = True
    ) -> None:
        self.fmt = fmt
        self.policy = policy if policy is not None else CallPolicy()
        self.stats = stats
        self.stream_text = stream_text
        self.held: list[tuple[ToolCall, Risk]] = []
        self.refused: list[tuple[ToolCall, str]] = []  # by the gate, with the reason
        self.text = ""  # the model's whole output
        self.parsed: ParsedOutput | None = None
        self.timings: Timings | None = None
        self.calls: list[llm.ToolInput] = []  # run, or refused by the gate (external, with their result)

    def trace(self) -> dict[str, Any]:
        """The round for the conversation's trace: token figures as HA's AI integrations
        report them, and model output that could not be used."""
        details: dict[str, Any] = {}
        if (t := self.timings) is not None:
            details["stats"] = {
                "input_tokens": t.prompt_tokens,
                "cached_input_tokens": t.cached_tokens,
                "output_tokens": t.decoded_tokens + t.forced_tokens,
            }
        if self.parsed is not None and self.parsed.errors:
            details["format_errors"] = list(self.parsed.errors)
        return details

    async def stream(
        self, engine: Engine, request: GenerateRequest
    ) -> AsyncGenerator[conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict]:
        """Run the round on `engine`: text streamed as it comes, then the calls it wrote run, held or refused."""
        yield {"role": "assistant"}
        started = time.monotonic()
        text = ""
        sent = 0
        server_calls: list[ToolCall] = []
        try:
            async for event in engine.generate(request):
                if isinstance(event, TextDelta):
                    text += event.text
                    # Stream what cannot be (the start of) a call.
                    limit = self.fmt.shown_length(text) if self.fmt else len(text)
                    if limit > sent and self.stream_text:
                        yield {"content": text[sent:limit]}
                        sent = limit
                elif isinstance(event, ToolCallDelta):
                    server_calls.append(ToolCall(event.name, _arguments(event.arguments)))
                elif isinstance(event, Finished):
                    LOGGER.debug("Generation finished (%s): %s", event.reason, event.timings.as_dict())
                    self.stats.async_record(event.timings, time.monotonic() - started)
                    self.timings = event.timings
        except EngineError as err:
            self.stats.async_record_error(str(err))  # logged once until a request succeeds
            raise engine_failure("engine_error", err) from err
        self.text = text
        self.parsed = self.fmt.parse(text) if self.fmt else ParsedOutput(content=text.strip())
        if self.parsed.errors:
            LOGGER.debug("Unusable calls in model output: %s", self.parsed.errors)
        limit = self.fmt.shown_length(text, final=True) if self.fmt else len(text)
        if limit > sent and self.stream_text:
            yield {"content": text[sent:limit]}
        written = self.parsed.calls + server_calls if self.policy.allow_calls else []
        async for delta in self._run(
            [spread for written_call in written for spread in self.policy.spread(written_call)]
        ):
            yield delta

    async def stream_calls(
        self, calls: list[ToolCall]
    ) -> AsyncGenerator[conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict]:
        """A round whose calls were written without the model (HA's exact reading, see
        `exact`): they run, wait or are refused as the model's would."""
        yield {"role": "assistant"}
        async for delta in self._run(calls):
            yield delta

    async def _run(
        self, written: list[ToolCall]
    ) -> AsyncGenerator[conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict]:
        """The round's calls to the chat log (which runs them), held or refused."""
        calls: list[ToolCall] = []
        policy = self.policy
        for call in written:
            if (signature := json_dumps([call.name, call.arguments])) in policy.ran or policy.refuse(call):
                continue  # the same call again (a small model's loop, its result is known), or not allowed
            entity_id, action = call.arguments.get("entity_id"), str(call.arguments.get(ACTION))
            if isinstance(entity_id, str):
                if not policy.both_ways and undoes(action, policy.acted.get(entity_id, "")):
                    LOGGER.debug(
                        "Not run, it undoes this turn's %s of %s: %s", policy.acted[entity_id], entity_id, call
                    )
                    continue
                policy.acted.setdefault(entity_id, action)
            policy.ran.add(signature)
            verdict = await policy.gate(call) if policy.gate else None
            if isinstance(verdict, str):
                self.refused.append((call, verdict))
            elif verdict is not None:
                self.held.append((call, verdict))
            else:
                calls.append(call)
        # Refused calls are in the chat log with their reason as result (run by nobody),
        # so that the model and the reply see why nothing happened.
        refused = [llm.ToolInput(tool_name=c.name, tool_args=c.arguments, external=True) for c, _ in self.refused]
        if calls or refused:
            self.calls = [llm.ToolInput(tool_name=c.name, tool_args=c.arguments) for c in calls] + refused
            yield {"tool_calls": self.calls}
        for tool_input, (call, reason) in zip(refused, self.refused, strict=True):
            data: dict[str, Any] = {"name": call.name, "arguments": call.arguments, "executed": False, "error": reason}
            yield {
                "role": "tool_result",
                "tool_call_id": tool_input.id,
                "tool_name": call.name,
                "result": llm.ToolResult(data, error=True),
            }


def engine_failure(key: str, err: EngineError) -> HomeAssistantError:
    """The engine's error as a translated one, for the user."""
    return HomeAssistantError(
        translation_domain=DOMAIN, translation_key=key, translation_placeholders={"error": str(err)}
    )


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_unparsed": raw}
    return value if isinstance(value, dict) else {"_unparsed": raw}
