"""What each conversation's requests sent, so that a follow-up extends them token for token.

An engine reuses the state of the prompt it last evaluated (and the tokens it generated)
up to the first token a new prompt changes. A follow-up turn therefore evaluates only
its own turn if its prompt starts with the previous prompt and the model's output:

- an earlier user turn keeps the text it was sent with (its device states and clock as
  they were then), not the current ones;
- templates that render earlier replies without the generation prompt's extras (Qwen's
  empty think block) get them back where the model saw them.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

from homeassistant.components import conversation

from .core.chat_template import ChatTemplate
from .core.engine import EngineError

# Conversations remembered per agent; older ones only lose the reuse of their history.
MAX_CONVERSATIONS = 32
_PROBE_USER = "\x01botpsy-user\x01"
_PROBE_REPLY = "\x01botpsy-reply\x01"


@dataclass(slots=True)
class _Conversation:
    user_texts: dict[tuple[datetime, str], str] = field(default_factory=dict)
    seen: str = ""  # the last prompt and the model's output, as the engine saw them


@dataclass(frozen=True, slots=True)
class GenerationExtra:
    """What a template's generation prompt adds to the header of a reply in the history."""

    header: str = ""
    extra: str = ""


def generation_extra(template: ChatTemplate) -> GenerationExtra:
    """Compare the template's generation prompt with a rendered earlier reply."""
    user = {"role": "user", "content": _PROBE_USER}
    try:
        base = template.render([user], add_generation_prompt=False)
        prompt = template.render([user])
        # A reply followed by another user turn: history, as a follow-up renders it.
        reply = {"role": "assistant", "content": _PROBE_REPLY}
        history = template.render([user, reply, user], add_generation_prompt=False)
    except EngineError:
        return GenerationExtra()
    if not (prompt.startswith(base) and history.startswith(base)) or _PROBE_REPLY not in history:
        return GenerationExtra()
    generation = prompt[len(base) :]
    header = history[len(base) :].split(_PROBE_REPLY)[0]
    if not header or not generation.startswith(header):
        return GenerationExtra()
    return GenerationExtra(header, generation[len(header) :])


def _common_length(a: str, b: str) -> int:
    """Length of the longest common prefix (compared in blocks, then by character)."""
    length = 0
    step = 256
    limit = min(len(a), len(b))
    while step:
        while length + step <= limit and a[length : length + step] == b[length : length + step]:
            length += step
        step //= 4
    return length


class ConversationPrompts:
    """Per conversation: the user turns as sent, and what the engine last saw."""

    def __init__(self, size: int = MAX_CONVERSATIONS) -> None:
        self._size = size
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()

    def _get(self, conversation_id: str) -> _Conversation:
        item = self._conversations.get(conversation_id)
        if item is None:
            item = self._conversations[conversation_id] = _Conversation()
            while len(self._conversations) > self._size:
                self._conversations.popitem(last=False)
        self._conversations.move_to_end(conversation_id)
        return item

    def user_text(self, conversation_id: str, content: conversation.UserContent) -> str | None:
        """The text `content` was sent to the model with, if it was."""
        item = self._conversations.get(conversation_id)
        return item.user_texts.get((content.created, content.content)) if item else None

    def set_user_text(self, conversation_id: str, content: conversation.UserContent, text: str) -> None:
        self._get(conversation_id).user_texts[(content.created, content.content)] = text

    def record(self, conversation_id: str, prompt: str, output: str) -> None:
        """The engine evaluated `prompt` and generated `output`."""
        self._get(conversation_id).seen = prompt + output

    def extend(self, conversation_id: str, prompt: str, extra: GenerationExtra) -> str:
        """`prompt` with the generation prompt's extras back wherever the model saw them.

        Only inserted after a reply's header, where the last prompt had them and this one
        does not; any other difference is left as rendered.
        """
        item = self._conversations.get(conversation_id)
        if item is None or not item.seen or not extra.extra:
            return prompt
        seen = item.seen
        while True:
            common = _common_length(seen, prompt)
            if common == len(seen):
                return prompt
            # The reply's header before the difference (which may be a few characters into
            # the extras: "<think>" and "<tool_call>" share their "<").
            cut = prompt.rfind(extra.header, 0, common) + len(extra.header)
            if (
                cut < len(extra.header)
                or cut < common - len(extra.extra)
                or not seen.startswith(extra.extra, cut)
                or prompt.startswith(extra.extra, cut)
            ):
                return prompt
            prompt = prompt[:cut] + extra.extra + prompt[cut:]
