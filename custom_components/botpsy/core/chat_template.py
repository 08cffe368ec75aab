"""Render chat messages into a prompt with the model's own chat template.

The template comes from the GGUF (or llama-server's /props), so the prompt is exactly
what the model was trained on. Rendering happens here, not in the engine, because BotPsy
needs the raw prompt: to count it, cache its prefix and decode it under a grammar.
"""

from __future__ import annotations

from datetime import datetime
import json
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .engine import EngineError

# For GGUFs without a chat template (base models such as the gemma-3-270m stand-in):
# the turn format of the architecture's family, else ChatML.
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% set role = 'model' if m.role == 'assistant' else 'user' %}"
    "<start_of_turn>{{ role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
_FALLBACK_TEMPLATES = {"gemma": GEMMA_TEMPLATE, "gemma2": GEMMA_TEMPLATE, "gemma3": GEMMA_TEMPLATE}


def fallback_template(architecture: str) -> str:
    """The template to use when the model file has none."""
    return _FALLBACK_TEMPLATES.get(architecture, CHATML_TEMPLATE)


class ChatTemplateError(EngineError):
    """The model's chat template cannot render these messages."""


def _raise(message: str) -> None:
    raise ChatTemplateError(f"The model's chat template refused the messages: {message}")


def _tojson(value: Any, indent: int | None = None, **_: Any) -> str:
    # Hugging Face's tojson: no ASCII escaping, keys kept in order.
    return json.dumps(value, ensure_ascii=False, indent=indent)


class ChatTemplate:
    """A compiled chat template."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        try:
            self._template = env.from_string(source)
        except TemplateError as err:
            raise ChatTemplateError(f"The model's chat template is invalid: {err}") from err
        self.source = source
        self._bos = bos_token
        self._eos = eos_token

    def render(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **variables: Any,
    ) -> str:
        try:
            return self._template.render(
                messages=messages,
                tools=tools,
                add_generation_prompt=add_generation_prompt,
                bos_token=self._bos,
                eos_token=self._eos,
                **variables,
            )
        except TemplateError as err:
            raise ChatTemplateError(f"The model's chat template failed: {err}") from err
