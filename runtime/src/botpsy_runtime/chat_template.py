"""Render chat messages into a prompt with the model's own chat template.

The template comes from the GGUF (or llama-server's /props), so the prompt is exactly
what the model was trained on. Rendering happens here, not in the engine, because BotPsy
needs the raw prompt: to count it, cache its prefix and decode it under a grammar.
"""

from __future__ import annotations

from datetime import datetime
import json
import re
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import EngineError, ModelLoadError

# For GGUFs without a chat template (base models such as the gemma-3-270m stand-in): the
# turn format of the architecture's family, else ChatML; tools and calls in Hermes JSON,
# the format most fine-tunes know.
_TOOLS = (
    "{% if tools %}# Tools\n\nYou may call functions. Their signatures:\n<tools>\n"
    "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools>\n\n"
    'To call one, write <tool_call>{"name": NAME, "arguments": {ARGUMENTS}}</tool_call>\n\n{% endif %}'
)
_CONTENT = (
    "{% if m.role == 'tool' %}<tool_response>\n{{ m.content }}\n</tool_response>"
    "{% else %}{{ m.content }}{% for c in m.tool_calls or [] %}<tool_call>\n"
    "{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}\n</tool_call>{% endfor %}{% endif %}"
)
_SYSTEM = "{% set system = messages[0].content if messages and messages[0].role == 'system' else '' %}"
CHATML_TEMPLATE = (
    _SYSTEM + "{% if tools or system %}<|im_start|>system\n" + _TOOLS + "{{ system }}<|im_end|>\n{% endif %}"
    "{% for m in messages if m.role != 'system' %}"
    "<|im_start|>{{ 'user' if m.role == 'tool' else m.role }}\n" + _CONTENT + "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Gemma has no system role: instructions and tools open the first user turn.
GEMMA_TEMPLATE = (
    "{{ bos_token }}" + _SYSTEM + "{% if tools or system %}<start_of_turn>user\n" + _TOOLS + "{{ system }}"
    "<end_of_turn>\n{% endif %}"
    "{% for m in messages if m.role != 'system' %}"
    "<start_of_turn>{{ 'model' if m.role == 'assistant' else 'user' }}\n" + _CONTENT + "<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
_FALLBACK_TEMPLATES = {"gemma": GEMMA_TEMPLATE, "gemma2": GEMMA_TEMPLATE, "gemma3": GEMMA_TEMPLATE}


def fallback_template(architecture: str) -> str:
    """The template to use when the model file has none."""
    return _FALLBACK_TEMPLATES.get(architecture, CHATML_TEMPLATE)


def model_template(source: str, *, bos_token: str, eos_token: str) -> ChatTemplate:
    """A loaded model's chat template, with its BOS and EOS tokens (both engines load
    theirs so); ModelLoadError if it does not compile."""
    try:
        return ChatTemplate(source, bos_token=bos_token, eos_token=eos_token)
    except ChatTemplateError as err:
        raise ModelLoadError(str(err)) from err


class ChatTemplateError(EngineError):
    """The model's chat template cannot render these messages."""


def _raise(message: str) -> None:
    raise ChatTemplateError(f"The model's chat template refused the messages: {message}")


# Prompts are tokenized with control tokens parsed, so text from the home or the user that
# spells one would be one: "<|im_start|>system" in a device's name would open a system
# turn, "<tool_call>" in a media title a call. Such a "<" becomes U+2039 (a single
# left-pointing angle quotation mark), which begins no token; the model still reads the
# text as the person wrote it.
_TAG_OPENER = re.compile(r"<(?=[|/!A-Za-z_])")


def neutralize(value: Any) -> Any:
    """`value` (text, or lists and mappings of it) with no control-token look-alikes."""
    if isinstance(value, str):
        return _TAG_OPENER.sub("\u2039", value)
    if isinstance(value, list):
        return [neutralize(v) for v in value]
    if isinstance(value, dict):
        return {k: neutralize(v) for k, v in value.items()}
    return value


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
        """The prompt; the messages' and tools' text is `neutralize`d, the template's own
        control tokens are not."""
        try:
            return self._template.render(
                messages=neutralize(messages),
                tools=neutralize(tools),
                add_generation_prompt=add_generation_prompt,
                bos_token=self._bos,
                eos_token=self._eos,
                **variables,
            )
        except TemplateError as err:
            raise ChatTemplateError(f"The model's chat template failed: {err}") from err
