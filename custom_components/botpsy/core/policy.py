"""Which calls act on the physical world in a way that must be confirmed first.

Unlocking, disarming, and opening a garage door, gate or door let people in, and a
triggered alarm calls the neighbours or the police: a misheard request (or a small model
reaching for a device the home lacks) must not do that. Such calls are validated but held until the next turn confirms
them, and run only if the device is still as it was when they were asked for.
"""

from __future__ import annotations

import re

from .home import Entity

# (domain, service) pairs that always need confirmation.
HIGH_IMPACT_SERVICES = frozenset(
    {
        ("lock", "unlock"), ("lock", "open"),
        ("alarm_control_panel", "alarm_disarm"), ("alarm_control_panel", "alarm_trigger"),
    }
)  # fmt: skip
# Covers and valves whose opening lets people in.
_OPENING_SERVICES = frozenset({"open_cover", "set_cover_position", "toggle"})
_ENTRY_DEVICE_CLASSES = frozenset({"garage", "gate", "door"})

_YES = re.compile(
    r"^\s*(yes|yeah|yep|sure|ok|okay|confirm(ed)?|do it|go ahead|please do|absolutely|correct)\b", re.IGNORECASE
)


def needs_confirmation(domain: str, service: str, entity: Entity | None) -> bool:
    if (domain, service) in HIGH_IMPACT_SERVICES:
        return True
    return (
        domain == "cover"
        and service in _OPENING_SERVICES
        and entity is not None
        and entity.device_class in _ENTRY_DEVICE_CLASSES
    )


_NO = re.compile(r"^\s*(no|nope|don't|do not|cancel|stop|never ?mind|leave it)\b", re.IGNORECASE)


def is_confirmation(text: str) -> bool:
    """Whether the user's reply confirms (anything else cancels)."""
    return bool(_YES.match(text))


def is_refusal(text: str) -> bool:
    return bool(_NO.match(text))


# A question asks; it does not ask for an action ("is the light on?" must not switch it).
# "Can you / do you ..." are requests in question form, and act.
_QUESTION = re.compile(
    r"^\s*(what|what's|whats|how|how's|is|are|was|were|does|did|which|who|when|where|why|has|have)\b(?!\s+you\b)",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    """Whether the request is a question: answered from states and read tools, never by an action."""
    return bool(_QUESTION.match(text))


# What people say to an assistant that asks for nothing, and its polite answer.
_SOCIAL = (
    (re.compile(r"^\s*(hello|hi|hey|good (morning|afternoon|evening))\b", re.I), "Hello! What can I do for you?"),
    (re.compile(r"^\s*(thanks|thank you|cheers)\b", re.I), "You're welcome."),
    (re.compile(r"^\s*good ?night\b", re.I), "Good night!"),
    (re.compile(r"^\s*(bye|goodbye|see you)\b", re.I), "Goodbye!"),
)
NOTHING_NAMED = "I did not find a device in that request, so I did nothing."


def reply_to_nothing(text: str) -> str:
    """The answer to a request that names no device and points at none (not a question):
    a small model's own words there are unreliable, so it is said without the model."""
    return next((answer for pattern, answer in _SOCIAL if pattern.match(text)), NOTHING_NAMED)
