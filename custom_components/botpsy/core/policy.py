"""Which calls act on the physical world in a way that must be confirmed first.

Unlocking, disarming, and opening a garage door, gate or door let people in, and a
triggered alarm calls the neighbours or the police: a misheard request (or a small model
reaching for a device the home lacks) must not do that. Such calls are validated but held until the next turn confirms
them, and run only if the device is still as it was when they were asked for.
"""

from __future__ import annotations

import re

# Domains whose devices let people in or raise an alarm: locks, alarm panels, and covers
# (garage doors, gates, doors).
CONFIRMED_DOMAINS = frozenset({"lock", "alarm_control_panel", "cover"})
# The only services on them that make nothing less safe; any other needs a yes (on covers,
# only those of entry device classes).
_SAFE_SERVICES = {
    "lock": frozenset({"lock"}),
    "alarm_control_panel": frozenset(
        {"alarm_arm_home", "alarm_arm_away", "alarm_arm_night", "alarm_arm_vacation", "alarm_arm_custom_bypass"}
    ),
    "cover": frozenset({"close_cover", "close_cover_tilt", "stop_cover", "stop_cover_tilt"}),
}
_ENTRY_DEVICE_CLASSES = frozenset({"garage", "gate", "door"})


def needs_confirmation(domain: str, service: str, device_class: str | None) -> bool:
    """Whether `service` on a device of `domain` (and `device_class`) waits for a yes."""
    if domain not in CONFIRMED_DOMAINS or service in _SAFE_SERVICES[domain]:
        return False
    return domain != "cover" or device_class in _ENTRY_DEVICE_CLASSES


# A yes and a no to "do you want me to …?", by language (the word that starts the answer):
# the languages BotPsy serves. Anything else is no yes: the held call is not run.
_YES_WORDS = {
    "en": r"yes|yeah|yep|sure|ok|okay|confirm(?:ed)?|do it|go ahead|please do|absolutely|correct",
    "de": r"ja|jawohl|jep|klar|sicher|gerne|mach (?:es|das)|bitte ja|okay|ok|bestätige|genau|richtig",
    "fr": r"oui|ouais|bien sûr|d'accord|ok|okay|vas-y|allez-y|confirme|je confirme|exactement|volontiers",
    "es": r"sí|si|claro|vale|de acuerdo|ok|okay|adelante|hazlo|confirmo|confirmado|por supuesto|correcto",
    "it": r"sì|si|certo|va bene|ok|okay|confermo|fallo|procedi|esatto",
    "pt": r"sim|claro|pode|ok|okay|confirmo|faça isso|faz isso|com certeza|correto",
}
_NO_WORDS = {
    "en": r"no|nope|don't|do not|cancel|stop|never ?mind|leave it",
    "de": r"nein|nee|nö|lieber nicht|nicht|abbrechen|stopp|lass es|lass das|vergiss es",
    "fr": r"non|pas question|annule|annuler|arrête|laisse tomber|laisse|ne fais pas",
    "es": r"no|cancela|cancelar|para|déjalo|olvídalo|mejor no",
    "it": r"no|annulla|lascia stare|lascia perdere|fermati|meglio di no",
    "pt": r"não|nao|cancela|cancelar|deixa|esquece|melhor não",
}


def _answer(words: dict[str, str]) -> dict[str, re.Pattern[str]]:
    return {lang: re.compile(rf"^\W*(?:{w})(?!\w)", re.IGNORECASE) for lang, w in words.items()}


_YES = _answer(_YES_WORDS)
_NO = _answer(_NO_WORDS)
# The languages whose yes and no BotPsy reads (and so whose held calls it can run).
ANSWER_LANGUAGES = frozenset(_YES_WORDS)


def base_language(language: str | None) -> str:
    """ "fr" of "fr-CA", "pt" of "pt-BR"; English where none is given."""
    return (language or "en").split("-")[0].split("_")[0].lower()


def is_confirmation(text: str, language: str | None = "en") -> bool:
    """Whether the user's reply confirms (anything else cancels), in their language."""
    pattern = _YES.get(base_language(language))
    return bool(pattern and pattern.match(text))


def is_refusal(text: str, language: str | None = "en") -> bool:
    """Whether the user's reply says no, in their language (neither yes nor no: another request)."""
    pattern = _NO.get(base_language(language))
    return bool(pattern and pattern.match(text))


# Before an undo: a short remark or two of its own ("Too bright, put them back", "ugh, no.
# Undo!"), and words that lead into it.
_REMARK = (
    r"^(?:[^,.;!?]{1,40}[,.;!?]\s*){0,2}\W*(?:(?:please|ok|okay|actually|oops|hmm|no)\b[\s,]*)*"
    r"(?:can you\s+|could you\s+)?"
)
# "Undo that", "put it back": what the last turn changed goes back as it was.
_UNDO = re.compile(
    # After a short remark of its own ("Too bright, put them back").
    rf"{_REMARK}(?:undo\b|revert\b|restore (?:it|them|that|those|everything)\W*$|cancel (?:it|that)\W*$"
    r"|put (?:it|them|that|everything|those) back\b"
    r"|change (?:it|them|that) back\b|take (?:it|that|those|them) back\b(?! to\b)"
    # "Switch them back", "turn it back", "scratch that" (not "turn it back up").
    r"|(?:switch|turn|set) (?:it|them|that|those|everything) back\W*$|scratch (?:that|it)\W*$"
    r"|(?:set|make|put|turn|change|bring) (?:it|them|that|those|everything) (?:back )?(?:to )?(?:the way|how|as|what)"
    r" (?:it|they) (?:was|were)\b"
    r"|(?:reverse|roll back) (?:it|that|this)\b|roll (?:it|that|this) back\b"
    r"|(?:go )?back to (?:how|the way|what) (?:it|they) (?:was|were)\b|go back\W*$"
    # "Make it like before", "return it to how it was", "go back to the previous setting"
    # (not "go back to the previous song": HassMediaPrevious).
    r"|(?:make|leave|return|reset) (?:it|them|that|those|everything) (?:to )?(?:like before|as (?:it|they) (?:was|were)"
    r"|how (?:it|they) (?:was|were)|what (?:it|they) (?:was|were))\b"
    r"|go back to the (?:previous|last|old) (?:setting|state)s?\W*$"
    # "I didn't want that", "that was a mistake": said of the last action alone.
    r"|i (?:didn't|did not|never) (?:want(?:ed)?|ask(?:ed)? for|mean(?:t)?) (?:that|this|it)\W*$"
    r"|i (?:didn't|did not) mean to(?: do)? (?:that|this|it)\W*$"
    r"|(?:that|this) (?:was|is) (?:a mistake|not right)\W*$)",
    re.IGNORECASE,
)
# "No, not that one, the bedside lamp", "sorry, I meant the kitchen": the last turn acted on
# the wrong thing; it is put back, and the request is the rest.
_CORRECTION = re.compile(
    r"^\W*(?:(?:oh|hmm|uh|um|ah|oops|whoops)\b\W*)?"
    # "No, leave that one on, I meant the kitchen".
    r"(?:(?:no|nope|oops|sorry|wait|actually)\b[\w\s,']{0,40}?"
    r"\b(?:i meant|i mean|i wanted|not that(?: one)?|not the \w+|wrong (?:one|light|lamp|device)|the other)\b"
    # "I meant the kitchen", "I was talking about the bedroom lamp", "I meant 21" (not "I
    # mean the light is still on", "I meant the kitchen too").
    r"|i (?:meant|mean|was talking about|asked for) (?:(?:the|my) "
    r"(?![^?]*\b(?:is|are|was|were|isn't|aren't|still|too|also|as well)\b)[^?]*$|\d)"
    r"|it was (?:the|my) [\w' -]+? (?:that )?i (?:wanted|meant)\b"
    # "No, 21", "21, not 23".
    r"|(?:no|nope)\b[\s,!.]+\d+(?:[.,]\d+)?\s*(?:%|percent|degrees?|°)?[\s.!]*$"
    r"|\d+(?:[.,]\d+)?\s*(?:%|percent|degrees?|°)?,?\s+not\s+\d+(?:[.,]\d+)?\s*(?:%|percent|degrees?|°)?[\s.!]*$"
    # "Wrong one, I wanted the nook lamp", "wrong room, the bedroom"; "no no, the window shade".
    r"|(?:that's |that is |that was |you got )?(?:the )?wrong[\s.!,]+\w+"
    # "You switched on the wrong thing, I wanted the kettle".
    r"|you (?:\w+ ){1,2}(?:the )?wrong \w+"
    # "That's not what I meant", "it should have been the porch light".
    r"|(?:that's |that is |it's |it is )?not what i (?:meant|wanted|asked for)\b|(?:it |that )?should have been\b"
    # "I said the bedroom lamp", "no, I said 15"; "no, that one's for the garden jobs".
    r"|(?:no,?\s*)?i said (?:the|my) \w|(?:no|nope|oops|sorry)\b[\s,!.]+i said \d"
    r"|(?:no|nope|oops|sorry)\b[\s,!.]+(?:that|it|this)(?: one)?(?:'s| is| was)? (?:for|goes|belongs|should)\b"
    # "That was meant for the shopping list".
    r"|(?:(?:no|nope|oops|sorry)\b[\s,!.]+)?(?:that|it|this)(?: one)?(?:'s| is| was) (?:meant|supposed to be) for\b"
    # "Actually, make it the nook blind", "sorry, change that to the kitchen light".
    r"|(?:no|nope|oops|sorry|actually|wait)\b[\s,!.]+(?:make|change|switch) (?:it|that)(?: to)? (?:the|my) \w"
    # "That should go on the shopping list", "it belongs in the garden jobs".
    r"|(?:that|it|this)(?: one)? (?:should (?:go|be)|goes|belongs) (?:on|in|to|with) (?:the|my) \w"
    # "Make that the kitchen light instead", "the bedroom one instead" (not "… too").
    r"|(?![^?]*\b(?:too|also|as well)\b)(?!\W*why\b)[^?]*\binstead[\s.!?]*$"
    r"|(?:no|nope)\b(?:[\s,!.]+no\b)*[\s,!.]+(?:the|my) \w"
    # "Not that one!"; "that's the kitchen, I wanted the bedroom"; "I meant upstairs".
    r"|not (?:that|this) one\W*$"
    r"|(?![^?]*\b(?:too|also|as well)\b)[^?]{1,40}?[,.;]\s*i (?:meant|wanted) (?:the|my) \w"
    r"|i meant (?!(?:it|that|this|to|what|so|no)\b)\w+\W*$"
    # "Not in the kitchen, in the bedroom".
    r"|not in (?:the|my) [\w' -]+?[,.;:\u2013\u2014-]\s*(?:but )?in (?:the|my) \w"
    # "Sorry, the sofa lamp", "wait, the bedroom one" (not "sorry, the light is still on",
    # "actually, the kitchen too").
    r"|(?:oops|whoops|sorry|wait|actually)\b[\s,!.]+(?:the|my) "
    r"(?![^?]*\b(?:is|are|was|were|isn't|aren't|still|too|also|as well)\b)[^?]*$"
    # "Not the mirror, the towel heater"; "not the lounge, I wanted the bedroom blinds";
    # "not those, the path lights"; "not the kitchen. The bedroom."
    r"|not (?:(?:the|that|this|my) [\w' -]+?|those|these|them|it|that|this)"
    r"\s*[,.;:\u2013\u2014-]\s*(?:but |i (?:meant|mean|wanted|want|said) )?(?:the|my) \w)",
    re.IGNORECASE,
)


# "The floor lamp, not the reading light", "I wanted the kettle, not the fan": a correction
# where what it denies is what the last turn acted on (else a request of its own).
_DENIED_AT_END = re.compile(r"^[^?]*?\w[^?]*,\s*not ((?:the|that|this|my) [\w' -]+?)[\s.!]*$", re.IGNORECASE)


def denied_at_end(text: str) -> str | None:
    """The words of the device a request says it did not mean, at its end ("the floor
    lamp, not the reading light": "the reading light"); None where it says none."""
    said = _DENIED_AT_END.match(text)
    return said[1] if said else None


def is_undo(text: str) -> bool:
    """Whether the request asks to undo what was just done."""
    return bool(_UNDO.match(text))


# "Put the blinds back", "set the heating back to what it was": the device said, put back.
_UNDO_NAMED = re.compile(
    rf"{_REMARK}(?:put|set|turn|switch|change|bring) ((?:the|my) [\w' -]{{1,40}}?) back"
    r"(?:\s+(?:to\s+)?(?:the way|how|as|what|where) (?:it|they) (?:was|were)(?: before)?)?(?:\s+please)?\W*$",
    re.IGNORECASE,
)


def undone_by_name(text: str) -> str | None:
    """The words of the device an undo names ("put the blinds back": "the blinds"); None
    where `text` is no undo that names one."""
    said = _UNDO_NAMED.match(text)
    return said[1] if said else None


# "Go back" alone: undo after a change, else HA's previous track (HassMediaPrevious).
_GO_BACK = re.compile(r"^\W*go back\W*$", re.IGNORECASE)


def undoes_only_a_change(text: str) -> bool:
    """Whether `text` asks to undo only where the conversation changed something: said
    first, its words mean something else."""
    return bool(_GO_BACK.match(text))


def is_correction(text: str) -> bool:
    """Whether the request says the last action was on the wrong thing, and names the right one."""
    return bool(_CORRECTION.match(text))


def restoring_service(domain: str, state: str) -> str:
    """The service that brings a device of `domain` to `state` (what putting it back runs)."""
    if domain == "alarm_control_panel" and state.startswith("armed_"):
        return f"alarm_arm_{state.removeprefix('armed_')}"
    return {
        ("lock", "unlocked"): "unlock",
        ("lock", "open"): "open",
        # Locking and closing again make nothing less safe: no yes is asked for them.
        ("lock", "locked"): "lock",
        ("cover", "open"): "open_cover",
        ("cover", "closed"): "close_cover",
        ("valve", "open"): "open_valve",
        ("valve", "closed"): "close_valve",
        ("alarm_control_panel", "disarmed"): "alarm_disarm",
    }.get((domain, state), "turn_on" if state == "on" else "turn_off" if state == "off" else "set")


# A question asks; it does not ask for an action ("is the light on?" must not switch it).
# "Can you / do you ..." are requests in question form, and act.
_QUESTION = re.compile(
    r"^\s*(?:(?:what|what's|whats|how|how's|is|are|was|were|does|did|which|who|when|where|why|has|have)\b(?!\s+you\b)"
    r"|(?:do|will) (?:i|we) (?:have|need)\b|at what\b|will it\b"
    # "Anything on the calendar today?", "any rain tomorrow?".
    r"|any(?:thing|one|body)?\b)",
    re.IGNORECASE,
)


# What a question may start with before it asks ("hey, is ...", "tell me, is the pump
# running?", "can you tell me whether ..."): asking to be told is a question too.
_LEAD = re.compile(
    r"^\s*(?:(?:hey|so|ok|okay|well|please|and|by the way|btw|also|oh|one more thing|quick question"
    # ... or thanks for the turn before: "Thanks. How humid is the bathroom?".
    r"|thanks|thank you|cheers|great|perfect|cool|nice|lovely|good|right|alright|got it)\b[\s,.!]*)+",
    re.IGNORECASE,
)
_ASKING = re.compile(
    r"^\s*(?:(?:can|could|would|will) you (?:please )?(?:tell|show|let|read) me|tell me|show me|let me know|"
    r"do you know|i (?:want|would like|'d like) to know|i wonder|read\b|list (?:the|my|all|every)\b"
    # ... or asking it to look: "check if the garage is open", "see whether the lights are on".
    r"|(?:(?:can|could|would|will) you (?:please )?)?(?:check|see|find out|look)(?: and see)? (?:if|whether)\b)",
    re.IGNORECASE,
)


# A request put as a suggestion: "how about turning on the fan?", "why don't you close the
# blinds?", "would you mind switching off the lamp?" (read as a question, it never acted).
_SUGGESTED = re.compile(
    r"^\s*(?:(?:how|what) about you|why (?:don't|dont|do not) (?:you|we)|why not"
    r"|(?P<ing>how about|what about|(?:would|do) you mind))\s+(?P<verb>[a-z]+)\b",
    re.IGNORECASE,
)
# The -ing forms whose verb ends with an "e" the -ing dropped ("closing": close).
_E_DROPPED = frozenset({"clos", "mak", "rais", "paus", "activat", "deactivat", "mut", "unmut", "increas", "decreas"})
# Words that are no verb a suggestion starts with ("how about something warmer?", "why
# not the other one?", "would you mind if ...").
_NOT_VERBS = frozenset(
    {"something", "nothing", "anything", "everything", "morning", "evening", "ceiling", "king", "ring", "thing"}
    | {"the", "a", "an", "my", "our", "this", "that", "these", "those", "it", "them", "both", "all", "if", "just"}
)


def as_asked(text: str) -> str:
    """A request put as a suggestion, as the request it makes ("how about turning on the
    fan?": "turn on the fan?"); any other text as it is."""
    suggested = _SUGGESTED.match(text)
    verb = suggested["verb"].lower() if suggested else ""
    if suggested is None or verb in _NOT_VERBS:
        return text
    if suggested["ing"]:  # "how about turning", "would you mind closing"
        if not verb.endswith("ing") or len(verb) < 6:  # no verb: "what about the kitchen?"
            return text
        verb = verb[:-3]
        if verb[-1] == verb[-2] and verb[-1] not in "lsz":  # "dimming", "putting", "setting"
            verb = verb[:-1]
        verb += "e" if verb in _E_DROPPED else ""
    return f"{verb}{text[suggested.end() :]}"


def is_question(text: str) -> bool:
    """Whether the request is a question: answered from states and read tools, never by an action."""
    asked = _LEAD.sub("", text)
    return bool(_ASKING.match(asked) or _QUESTION.match(asked))


# What people say to an assistant that asks for nothing, and its polite answer.
_SOCIAL = (
    (re.compile(r"^\s*(hello|hi|hey|good (morning|afternoon|evening))\b", re.I), "Hello! What can I do for you?"),
    (re.compile(r"^\s*(thanks|thank you|cheers)\b", re.I), "You're welcome."),
    (re.compile(r"^\s*good ?night\b", re.I), "Good night!"),
    (re.compile(r"^\s*(bye|goodbye|see you)\b", re.I), "Goodbye!"),
)
NOTHING_NAMED = "I did not find a device in that request, so I did nothing."
# A social phrase and nothing else ("good night!", "thanks, buddy"): it asks for nothing,
# though a device may have a word of it in its name ("Night Light").
_ONLY_SOCIAL = re.compile(
    r"\W*(?:hello|hi|hey|good (?:morning|afternoon|evening|night)|goodnight|thanks|thank you|cheers|bye|goodbye"
    r"|see you)(?:[\s,]+\w+)?\W*",
    re.IGNORECASE,
)


# "Leave it there", "that's fine", "perfect, thanks": said of what was just done, which
# stays as it is (the 0.5B switched the heating off for "leave it there").
# ... and said after a no ("no, that's fine, thanks", "no thanks, that's all"): nothing more
# is wanted (the 1.5B switched off the lamp it had just switched on).
_ACKNOWLEDGED = re.compile(
    r"(?=.*\w)\W*(?:(?:no|nah|nope)(?:[\s,]+(?:thanks|thank you))?(?:[\s,.!]+|$))?"
    r"(?:ok(?:ay)?|great|perfect|lovely|fine|all good|never ?mind|nothing else|no need"
    r"|(?:that's|that is|that'll be) (?:fine|good|great|perfect|enough|it|all)"
    r"|leave it(?: there| like that| as it is| at that| be)?)?"
    r"(?:[\s,]+(?:thanks|thank you|then|for now))?\W*",
    re.IGNORECASE,
)


def is_acknowledgement(text: str) -> bool:
    """Whether the request only acknowledges what was done ("leave it there", "perfect")."""
    return bool(_ACKNOWLEDGED.fullmatch(text))


def is_social(text: str) -> bool:
    """Whether the request is only a greeting, a thank-you, a goodbye or an acknowledgement."""
    return bool(_ONLY_SOCIAL.fullmatch(text)) or is_acknowledgement(text)


def reply_to_nothing(text: str) -> str:
    """The answer to a request that names no device and points at none (not a question):
    a small model's own words there are unreliable, so it is said without the model."""
    if is_acknowledgement(text):
        return "OK."
    return next((answer for pattern, answer in _SOCIAL if pattern.match(text)), NOTHING_NAMED)


# Services that undo each other on one device. A small model answering "I meant the one by
# the sofa" switched that lamp on and off again in one answer: the second call is dropped.
_OPPOSITE_SERVICES = (
    frozenset({"turn_on", "turn_off"}),
    frozenset({"open_cover", "close_cover"}),
    frozenset({"open_valve", "close_valve"}),
    frozenset({"lock", "unlock"}),
    frozenset({"media_play", "media_pause"}),
)
# ... unless the request asks for both ("turn it off and on again", "restart the router").
_BOTH_WAYS = re.compile(
    r"\b(?:off and (?:back )?on|on and (?:back )?off"
    r"|open and (?:back )?(?:close|shut)|(?:close|shut) and (?:back )?open"
    r"|restart|reboot|power[ -]?cycle|reset|flash|blink)",
    re.IGNORECASE,
)


def undoes(service: str, earlier: str) -> bool:
    """Whether `service` undoes `earlier` on the same device (switching back what was just switched)."""
    return frozenset({service, earlier}) in _OPPOSITE_SERVICES


def asks_both_ways(text: str) -> bool:
    """Whether `text` asks to switch a device one way and back again."""
    return bool(_BOTH_WAYS.search(text))
