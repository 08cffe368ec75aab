"""The scripted engine: the one fake model of the tests, the bench and the stress runs.

It answers from a list of outputs given in advance, or from a function of the request
(for concurrent conversations, or a model that always says the same), in the chat template
a test gives it; it records what it was asked, as text a character a token.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from pytest_homeassistant_custom_component.common import MockConfigEntry

from botpsy_runtime.chat_template import ChatTemplate
from botpsy_runtime.engine import (
    EngineHealth,
    Finished,
    GenerateEvent,
    GenerateRequest,
    ModelInfo,
    TextDelta,
    Timings,
)
from botpsy_runtime.formats import FORMATS
from scripts.testing.tiny_gguf import QWEN35_CHAT_TEMPLATE

XML = FORMATS["qwen_xml"]


class ScriptedEngine:
    """An engine whose outputs are given in advance; it records what it was asked."""

    supports_grammar = True

    def __init__(
        self, outputs: list[str] | None = None, respond: Callable[[GenerateRequest], str] | None = None
    ) -> None:
        # The next generations' outputs, in order; where `respond` is given, it answers instead.
        self.outputs = outputs if outputs is not None else []
        self.respond = respond
        self.requests: list[GenerateRequest] = []
        # Prefixes asked to be prefilled; a prefill waits for the gate (open unless a test closes it).
        self.prefills: list[str] = []
        # What it holds of them (a test clears it to lose them; `keeps` off: holds none).
        self.kept: set[str] = set()
        self.keeps = True
        self.prefill_gate = asyncio.Event()
        self.prefill_gate.set()
        self.prefill_started = asyncio.Event()
        self.chat_template = ChatTemplate(QWEN35_CHAT_TEMPLATE)
        self.model_info = ModelInfo("scripted", "qwen35", 4096, QWEN35_CHAT_TEMPLATE, eos_token="<|im_end|>")

    def use_template(self, template: str, eos_token: str, context_length: int = 4096) -> None:
        """Speak through another chat template (so the agent picks that template's call format)."""
        self.chat_template = ChatTemplate(template)
        self.model_info = ModelInfo("scripted", "scripted", context_length, template, eos_token=eos_token)

    async def async_load(self) -> ModelInfo:
        return self.model_info

    async def async_count_tokens(self, text: str) -> int:
        return len(text)

    async def generate(self, request: GenerateRequest) -> AsyncIterator[GenerateEvent]:
        self.requests.append(request)
        text = self.respond(request) if self.respond is not None else self.outputs.pop(0)
        for i in range(0, len(text), 7):
            yield TextDelta(text[i : i + 7])
        # A character a token, as async_count_tokens counts.
        prompt = request.prompt or ""
        cached = max((len(p) for p in self.kept if prompt.startswith(p)), default=0)
        yield Finished("stop", Timings(prompt_tokens=len(prompt), cached_tokens=cached, decoded_tokens=len(text)))

    async def async_prefill(self, prompt: str, quiet: float = 0.0) -> Timings:
        self.prefills.append(prompt)
        self.prefill_started.set()
        await self.prefill_gate.wait()
        if self.keeps:
            self.kept.add(prompt)
        return Timings(prompt_tokens=len(prompt))

    async def async_health(self) -> EngineHealth:
        return EngineHealth(True, "scripted")

    async def async_unload(self) -> None:
        return None


def script(entry: MockConfigEntry, *outputs: str) -> ScriptedEngine:
    """Put a scripted engine with these outputs in the entry's place of its model."""
    engine = ScriptedEngine(list(outputs))
    entry.runtime_data.engine = engine
    return engine
