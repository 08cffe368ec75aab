"""Replaying given outputs, in each of the three call formats.

The agent picks the call format from the model's chat template, so the replay engine
carries a template of each: Qwen3.5's XML calls, the instruct stand-in's own (Hermes JSON
calls) and Gemma's function-call tokens. Replayed text is not bound by a grammar, as a
model server without grammar support is not.
"""

from __future__ import annotations

from pathlib import Path

from botpsy_runtime.chat_template import CHATML_TEMPLATE, GEMMA_TEMPLATE
from botpsy_runtime.formats import FORMATS, CallFormat
from botpsy_runtime.gguf_metadata import read_gguf_metadata
from scripts.testing.scripted import ScriptedEngine
from scripts.testing.tiny_gguf import QWEN35_CHAT_TEMPLATE

# What the agent says after a round of calls, when it asks for another round.
AFTERWORD = "Done."


def hermes_template(instruct_model: Path | None) -> str:
    """The instruct stand-in's own chat template (Hermes JSON calls); without the model
    (fast tests), BotPsy's ChatML fallback, which teaches the same calls."""
    if instruct_model is None:
        return CHATML_TEMPLATE
    template = read_gguf_metadata(instruct_model).chat_template
    if not template:
        raise ValueError(f"{instruct_model} has no chat template")
    return template


def templates(hermes: str) -> dict[str, tuple[str, str]]:
    """Call format -> (chat template, end-of-turn token)."""
    return {
        "qwen_xml": (QWEN35_CHAT_TEMPLATE, "<|im_end|>"),
        "hermes_json": (hermes, "<|im_end|>"),
        # Gemma's template with the function-call tokens FunctionGemma's declares.
        "gemma": (GEMMA_TEMPLATE + "{# <start_function_call> #}", "<end_of_turn>"),
    }


class Replay:
    """Replays one output per request through a scripted engine, in the format `use` last chose."""

    def __init__(self, instruct_model: Path | None) -> None:
        self.engine = ScriptedEngine()
        self.engine.keeps = False
        self._templates = templates(hermes_template(instruct_model))

    def use(self, format_name: str, output: str) -> CallFormat:
        """The next request gets `output` (later rounds of it: AFTERWORD), in that format."""
        template, eos = self._templates[format_name]
        self.engine.use_template(template, eos, context_length=8192)
        self.engine.outputs[:] = [output, AFTERWORD, AFTERWORD, AFTERWORD]
        self.engine.requests.clear()
        self.engine.prefills.clear()
        return FORMATS[format_name]
