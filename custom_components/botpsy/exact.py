"""Requests that HA's own sentences read exactly, as BotPsy's calls, without the model.

HA's intent matching (hassil over home-assistant-intents, strict: the home's exposed
names, aliases, areas and floors as they are) reads "turn off the lights in the kitchen"
as HassTurnOff of the kitchen's lights; HA's handler decides which devices that is and
what each gets (`targets`, its own code stopped before it acts). Those become calls of
BotPsy's own tools, one a device, and run as the model's calls run: validated, held for
the asker's yes where one is needed, reported by what changed. This is the Assist
pipeline's "prefer handling commands locally" for LLM agents, inside the agent, so that
automations and AI tasks get it too. A reading BotPsy cannot call exactly (a handler
of its own, a device without that action, a value the action does not take) is left to
the model whole: nothing of it runs.
"""

from __future__ import annotations

from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from .core.formats import ToolCall
from .core.tools import ACTION
from .core.validate import CallRejectedError, validate_call
from .language import QUESTION_INTENTS, Recognized
from .targets import UnresolvedError, async_intent_targets
from .toolbox import Toolbox


async def async_exact_calls(
    hass: HomeAssistant, toolbox: Toolbox, recognized: Recognized | None, llm_context: llm.LLMContext | None
) -> list[ToolCall] | None:
    """BotPsy's calls for what HA's sentences read in the request; None if they read no
    action, or one BotPsy's own tools cannot make exactly as HA would."""
    if recognized is None or recognized.intent is None or recognized.intent in QUESTION_INTENTS:
        return None
    if llm_context is None or not toolbox.compiled:
        return None
    try:
        targets = await async_intent_targets(hass, recognized.intent, recognized.values, llm_context)
    except UnresolvedError:
        return None
    tools = {t.key: t for t in toolbox.compiled}
    calls: list[ToolCall] = []
    for target in targets:
        call = ToolCall(target.domain, {ACTION: target.service, "entity_id": target.entity_id, **target.data})
        try:
            calls.append(ToolCall(call.name, validate_call(call, tools).arguments))
        except CallRejectedError:
            return None
    return calls or None
