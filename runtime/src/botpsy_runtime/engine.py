"""The engine interface: what every model runner offers the rest of BotPsy.

Everything above the engines (prompt assembly, the agent, benchmarks) talks to this
protocol only, so the embedded llama.cpp worker and a remote OpenAI-compatible server are
interchangeable.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .errors import PrefillInterruptedError

if TYPE_CHECKING:
    from .chat_template import ChatTemplate


class Preemptible:
    """Runs an engine's background prefills so that a request never waits for one.

    `interrupt()` (called when a request arrives) cancels the running prefill, which then
    raises PrefillInterruptedError to its caller, who may try again later. Cancelling the
    caller itself still cancels as usual. A prefill `quiet` seconds long starts only after
    that long without a request (and raises the same when one came meanwhile).
    """

    def __init__(self) -> None:
        self._task: asyncio.Task[Timings] | None = None
        self._requests = 0

    async def run(self, work: Coroutine[Any, Any, Timings], quiet: float = 0.0) -> Timings:
        """Run the prefill `work` after `quiet` seconds without a request; PrefillInterruptedError if one came."""
        requests = self._requests
        if quiet > 0:
            try:
                await asyncio.sleep(quiet)
            except asyncio.CancelledError:
                work.close()
                raise
        if self._requests != requests:
            work.close()
            raise PrefillInterruptedError("A request came first; nothing was prefilled")
        task = asyncio.ensure_future(work)
        self._task = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            raise PrefillInterruptedError("A request came first; the prefix was not kept") from None
        finally:
            if self._task is task:
                self._task = None

    def interrupt(self) -> None:
        """A request arrived: cancel the running prefill, and any still waiting out its quiet time."""
        self._requests += 1
        if self._task is not None and not self._task.done():
            self._task.cancel()


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What an engine learned about its model when it loaded it."""

    name: str
    architecture: str
    context_length: int
    chat_template: str | None = None
    bos_token: str = ""
    eos_token: str = ""
    file_size: int | None = None
    load_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class GenerateRequest:
    """One generation: a rendered prompt or chat messages, and how to decode.

    `prompt` is raw text (the caller rendered the chat template); `messages` are
    OpenAI-style chat messages for engines that render the template themselves.
    """

    prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    grammar: str | None = None
    # Structured output: the reply is JSON matching this schema (instead of `grammar`).
    json_schema: dict[str, Any] | None = None
    stop: tuple[str, ...] = ()
    max_tokens: int = 256
    temperature: float = 0.2
    top_p: float = 0.95
    top_k: int = 40
    seed: int | None = None
    # Append the text a grammar leaves no choice about without sampling it (off: every
    # token sampled, which the tests and the bench compare with).
    fast_forward: bool = True

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("Give exactly one of prompt or messages")
        if self.grammar is not None and self.json_schema is not None:
            raise ValueError("Give a grammar or a JSON schema, not both")


@dataclass(slots=True)
class Timings:
    """Figures of one generation, as far as the engine reports them.

    `decoded_tokens` are the tokens the model sampled; `forced_tokens` are output tokens a
    grammar left no choice about, appended without sampling (the embedded engine, and a
    server whose prompt BotPsy renders: it sends them back as prompt). The output is both
    together. `grammar_seconds` is the part of the decoding time spent on the grammar
    (embedded engine only). `queued_seconds` is how long it waited for the engine (behind
    other generations, or a warm-up that had to stop) before its own work began.
    """

    prompt_tokens: int = 0
    cached_tokens: int = 0
    decoded_tokens: int = 0
    prompt_seconds: float = 0.0
    decode_seconds: float = 0.0
    forced_tokens: int = 0
    grammar_seconds: float = 0.0
    queued_seconds: float = 0.0

    @property
    def evaluated_tokens(self) -> int:
        """Prompt tokens the engine actually had to evaluate."""
        return self.prompt_tokens - self.cached_tokens

    def as_dict(self) -> dict[str, float | int]:
        """The figures as plain data, seconds rounded (for the log, diagnostics and recent requests)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "decoded_tokens": self.decoded_tokens,
            "prompt_seconds": round(self.prompt_seconds, 4),
            "decode_seconds": round(self.decode_seconds, 4),
            "forced_tokens": self.forced_tokens,
            "grammar_seconds": round(self.grammar_seconds, 4),
            "queued_seconds": round(self.queued_seconds, 4),
        }


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of generated text, streamed as soon as it is known not to be a stop."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A tool call a server parsed itself (chat-completions engines only)."""

    name: str
    arguments: str
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Finished:
    """The end of a generation."""

    reason: str  # "stop", "length" or "cancelled"
    timings: Timings = field(default_factory=Timings)


GenerateEvent = TextDelta | ToolCallDelta | Finished


@dataclass(frozen=True, slots=True)
class EngineHealth:
    """Whether the engine can serve requests, and what it says about itself (for diagnostics)."""

    ok: bool
    detail: str


class Engine(Protocol):
    """A loaded model that generates text."""

    @property
    def model_info(self) -> ModelInfo | None:
        """Set once `async_load` succeeded."""

    @property
    def chat_template(self) -> ChatTemplate | None:
        """The model's template, for engines that take raw prompts; None otherwise."""

    @property
    def supports_grammar(self) -> bool:
        """Whether `GenerateRequest.grammar` is honoured."""

    async def async_load(self) -> ModelInfo:
        """Load the model (or check the server); raise ModelLoadError if unusable."""

    async def async_count_tokens(self, text: str) -> int:
        """Tokens `text` takes in this model's vocabulary."""

    def generate(self, request: GenerateRequest) -> AsyncIterator[GenerateEvent]:
        """Stream events; closing the iterator early cancels the generation."""

    async def async_prefill(self, prompt: str, quiet: float = 0.0) -> Timings:
        """Evaluate `prompt`, a stable prefix (instructions and tools), and keep its state.

        A later request whose prompt starts with it evaluates only the rest. Engines that
        cannot keep a prompt's state do nothing and return zero timings. With `quiet`, it
        starts only after that many seconds without a request (see Preemptible).
        """

    async def async_health(self) -> EngineHealth:
        """Cheap liveness check."""

    async def async_unload(self) -> None:
        """Free the model's memory (stop the worker)."""
