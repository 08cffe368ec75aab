"""The action policy: which requests may act at all, and which actions wait for a yes."""

from __future__ import annotations

import pytest

from custom_components.botpsy.core.policy import (
    NOTHING_NAMED,
    as_asked,
    denied_at_end,
    is_confirmation,
    is_correction,
    is_question,
    is_refusal,
    is_social,
    is_undo,
    needs_confirmation,
    reply_to_nothing,
    restoring_service,
    undone_by_name,
)


@pytest.mark.parametrize(
    "text",
    [
        "Is the kitchen light on?",
        "what's the temperature in here",
        "How warm is it?",
        "Are the blinds open",
        "which lights are on",
        "tell me, is the pump running?",
        "Hey, is the garage open?",
        "Can you tell me whether the back door is locked?",
        "do you know if the heating is on",
        "show me the temperature in the kitchen",
        "By the way, how humid is the bathroom?",
        "oh, quick question, is the kettle on?",
        # Asking to be read something: the 0.5B ticked "me" off the shopping list.
        "Read me the shopping list",
        "could you read me tomorrow's appointments",
        "List the garden jobs",
        "Anything on the family calendar today?",
        "any rain tomorrow?",
        # After thanks for the turn before (the 0.5B switched a light off).
        "Thanks. How humid is the bathroom?",
        "Great, is the kettle on now?",
        # Asked to look: nothing is changed.
        "check if the garage door is open",
        "Can you see whether the lights are on upstairs?",
        "find out if the back door is locked",
    ],
)
def test_questions_are_questions(text: str) -> None:
    assert is_question(text)


@pytest.mark.parametrize(
    "text",
    [
        "Turn on the light",
        "Can you turn on the light?",
        "Do you mind closing the blinds?",
        "island lights on",
        "Hey, turn on the light",
        "so, open the blinds",
        "Will you close the garage?",
        "Reading light on",
        "Thanks, now turn off the fan too",
        "Check the lights in the kitchen are off and turn on the porch light",
    ],
)
def test_requests_are_not_questions(text: str) -> None:
    assert not is_question(text)


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("How about turning on the lamp?", "turn on the lamp?"),
        ("What about switching the fan off?", "switch the fan off?"),
        ("how about dimming the lights to 30%", "dim the lights to 30%"),
        ("Would you mind closing the blinds", "close the blinds"),
        ("Why don't you put the heating on?", "put the heating on?"),
        ("Why not turn off the ceiling light", "turn off the ceiling light"),
        ("How about you open the garage", "open the garage"),
        # No request put as a suggestion: as it is.
        ("What about the kitchen?", "What about the kitchen?"),
        ("How about something warmer?", "How about something warmer?"),
        ("Why not the other one?", "Why not the other one?"),
        ("Would you mind if I left it on?", "Would you mind if I left it on?"),
        ("Why is the light on?", "Why is the light on?"),
    ],
)
def test_a_request_put_as_a_suggestion_is_that_request(text: str, asked: str) -> None:
    """Read as a question, "how about turning on the lamp?" never acted."""
    assert as_asked(text) == asked
    assert not is_question(asked) or asked == text


def test_confirmation_answers() -> None:
    assert is_confirmation("Yes please") and is_confirmation("ok")
    assert not is_confirmation("yesterday's news")
    assert is_refusal("no, leave it") and not is_refusal("nobody home")


@pytest.mark.parametrize(
    ("language", "yes", "no", "neither"),
    [
        ("de", ["Ja", "ja, bitte", "Klar!", "Mach das"], ["Nein", "nein danke", "Lieber nicht"], ["Jalousie hoch"]),
        (
            "fr",
            ["Oui", "oui, vas-y", "D'accord", "Bien sûr"],
            ["Non", "non merci", "Laisse tomber"],
            ["Ouvre le volet"],
        ),
        ("es-ES", ["Sí", "¡Sí, hazlo!", "Vale", "Claro que sí"], ["No", "no, gracias", "Mejor no"], ["Sigue"]),
        ("pt-BR", ["Sim", "Pode"], ["Não"], ["Simone"]),
    ],
)
def test_a_yes_and_a_no_in_the_users_language(language: str, yes: list[str], no: list[str], neither: list[str]) -> None:
    """A held call is answered in the language it was asked in; an English yes to a French
    question is no yes (the user is asked in French, and answers in French)."""
    for text in yes:
        assert is_confirmation(text, language) and not is_refusal(text, language), text
    for text in no:
        assert is_refusal(text, language) and not is_confirmation(text, language), text
    for text in neither:
        assert not is_confirmation(text, language) and not is_refusal(text, language), text
    assert not is_confirmation("oui", "en") and not is_confirmation("yes", "fr")
    assert not is_confirmation("ja", "xx")  # a language without its words: never a yes


def test_entry_devices_need_confirmation() -> None:
    assert needs_confirmation("cover", "open_cover", "garage")
    assert needs_confirmation("cover", "toggle", "gate")
    assert needs_confirmation("cover", "set_cover_position", "door")
    assert not needs_confirmation("cover", "close_cover", "garage")
    assert not needs_confirmation("cover", "open_cover", "blind")
    assert needs_confirmation("lock", "unlock", None)
    # Whatever else a lock may do (open its latch, toggle): only locking needs no yes.
    assert needs_confirmation("lock", "open", None)
    assert needs_confirmation("lock", "toggle", None)
    assert not needs_confirmation("lock", "lock", None)
    # Putting back what was unlocked, opened or disarmed makes nothing less safe.
    assert not needs_confirmation("lock", restoring_service("lock", "locked"), None)
    assert not needs_confirmation("cover", restoring_service("cover", "closed"), "garage")
    assert restoring_service("alarm_control_panel", "armed_away") == "alarm_arm_away"
    assert needs_confirmation("lock", restoring_service("lock", "unlocked"), None)
    assert not needs_confirmation("light", "turn_on", None)


def test_an_alarm_is_disarmed_or_triggered_only_after_a_yes() -> None:
    """A small model triggered the alarm when asked for a device the home lacks."""
    assert needs_confirmation("alarm_control_panel", "alarm_disarm", None)
    assert needs_confirmation("alarm_control_panel", "alarm_trigger", None)
    assert not needs_confirmation("alarm_control_panel", "alarm_arm_away", None)


def test_a_request_that_names_nothing_gets_a_polite_or_honest_answer() -> None:
    assert reply_to_nothing("Thank you!") == "You're welcome."
    assert reply_to_nothing("good night") == "Good night!"
    assert reply_to_nothing("Tell me a joke") == NOTHING_NAMED
    assert reply_to_nothing("That's weird") == NOTHING_NAMED  # no acknowledgement


@pytest.mark.parametrize(
    ("text", "social"),
    [
        ("Leave it there", True),
        ("That's fine, thanks", True),
        ("perfect", True),
        ("Okay then", True),
        ("ok stop", False),  # a request of its own
        ("leave it on the kitchen light", False),
        ("great, now turn off the fan", False),
        # ... after a no: nothing more is wanted (the 1.5B switched the lamp off again).
        ("No, that's fine, thanks", True),
        ("no thanks, that's all", True),
        ("Nope, nothing else", True),
        ("never mind", True),
        ("no, the other one", False),
        ("No, turn it off", False),
        ("...", False),
    ],
)
def test_an_acknowledgement_asks_for_nothing(text: str, social: bool) -> None:
    assert is_social(text) is social
    if social:
        assert reply_to_nothing(text) == "OK."


@pytest.mark.parametrize(
    ("text", "undo", "correction"),
    [
        ("undo that", True, False),
        ("Okay, put it back", True, False),
        ("can you change them back?", True, False),
        ("No, not that one, the bedside lamp", False, True),
        ("Sorry, I meant the kitchen ceiling", False, True),
        ("Turn the heating back on", False, False),  # a request of its own
        ("No thanks", False, False),
        ("put the milk back on the list", False, False),
        # After a remark of its own, and said otherwise.
        ("Too bright, put them back", True, False),
        ("That's too dark, go back to how it was", True, False),
        ("go back to previous track", False, False),
        # The device that was wrong, then the one meant.
        ("No, not the fan, the sofa lamp", False, True),
        ("Not the mirror, the towel heater", False, True),
        ("Not the lounge, I wanted the bedroom blinds", False, True),
        ("not the bedroom lights but the hallway", False, False),  # no device after it said as one
        ("Cancel that", True, False),
        ("Actually take that back off", True, False),
        ("Set it back to what it was", True, False),
        ("Reverse that", True, False),
        ("roll that back please", True, False),
        ("Set it back to 21", False, False),  # a value of its own
        ("take it back to the dock", False, False),
        ("cancel that timer for me", False, False),
        ("Wrong one, I wanted the nook lamp", False, True),
        ("No no, the window shade", False, True),
        ("No, thanks", False, False),
        # Said otherwise: what it should have been, a place or list for it, "instead".
        ("No, that one's for the garden jobs", False, True),
        ("Hmm, I meant the bathroom", False, True),
        ("No, that was meant for the entrance", False, True),
        ("Oh, that should go on the shopping list", False, True),
        ("Not those, the path lights", False, True),
        ("Actually, make it the nook blind", False, True),
        ("sorry, change that to the kitchen light", False, True),
        ("That was supposed to be for the shopping list", False, True),
        ("I said the bedroom lamp, not the desk lamp", False, True),
        ("Wrong room, the bedroom", False, True),
        ("That should have been the office lamp", False, True),
        ("Make that the kitchen light instead", False, True),
        ("That's not what I meant, I wanted the blinds", False, True),
        ("Sorry, the sofa lamp", False, True),
        ("Wait, the bedroom one", False, True),
        ("No, leave that one on, I meant the kitchen", False, True),
        ("Oops, 21 I meant", False, True),
        ("Oops, wrong list", False, True),
        ("You switched on the wrong thing, I wanted the kettle", False, True),
        ("you opened the wrong blind", False, True),
        ("I didn't want that", True, False),
        ("Never mind, switch them back", True, False),
        ("Scratch that", True, False),
        ("Ugh, no. Undo!", True, False),
        ("Make it like before", True, False),
        ("Go back to the previous setting", True, False),
        ("Oops, I didn't mean to do that", True, False),
        ("I was talking about the bedroom lamp", False, True),
        ("It was the bedroom lamp I wanted", False, True),
        ("Uh, I meant 21 not 23", False, True),
        ("21, not 23", False, True),
        ("No, 21", False, True),
        ("Not that one!", False, True),
        ("Not the kitchen. The bedroom.", False, True),
        ("Wrong. The bedroom lamp", False, True),
        ("No no no, the bedroom", False, True),
        ("I meant upstairs", False, True),
        ("Not in the kitchen, in the bedroom", False, True),
        ("That's the kitchen, I wanted the bedroom", False, True),
        ("Can you do the bedroom one instead?", False, True),
        ("No, I said 15", False, True),
        ("That was a mistake.", True, False),
        ("I never asked for it", True, False),
        # Not corrections: a remark, an addition, a question, a request of its own.
        ("No, that's fine", False, False),
        ("No, it's on the list already", False, False),
        ("The bedroom one too instead", False, False),
        ("Why did you do that instead?", False, False),
        ("Turn on the fan instead of the light", False, False),
        ("what's wrong with the heater?", False, False),
        ("I wanted the lights on", False, False),
        ("That was meant to be a joke", False, False),
        ("It should be on by now", False, False),
        ("Turn it back up", False, False),
        ("go back to the previous song", False, False),
        ("I meant the kitchen too", False, False),
        ("I mean the light is still on", False, False),
        ("No, 2 of them", False, False),
        ("I meant it", False, False),
        ("Turn on the light, I wanted the lamp too", False, False),
        ("Scratch the oat milk", False, False),
        ("I said 15 minutes ago to close it", False, False),
        ("Make it the living room too", False, False),
        ("Sorry, the light is still on", False, False),
        ("Actually, the kitchen too", False, False),
        ("Sorry, the blinds in the hall are stuck?", False, False),
    ],
)
def test_undo_and_corrections(text: str, undo: bool, correction: bool) -> None:
    assert (is_undo(text), is_correction(text)) == (undo, correction)


@pytest.mark.parametrize(
    "text", ["Do I have anything on tomorrow?", "At what time?", "Will it rain?", "do we need milk?"]
)
def test_questions_about_what_is_coming(text: str) -> None:
    assert is_question(text)


def test_the_device_an_undo_or_a_correction_names() -> None:
    """ "Put the blinds back" names what it puts back, "the floor lamp, not the reading
    light" what it did not mean: the caller checks it against what the last turn changed."""
    assert undone_by_name("Put the blinds back") == "the blinds"
    assert undone_by_name("can you set the heating back to what it was?") == "the heating"
    assert undone_by_name("Turn the lights back on") is None
    assert undone_by_name("put the milk back on the list") is None
    assert denied_at_end("I wanted the floor lamp, not the reading light") == "the reading light"
    assert denied_at_end("Not the reading light") is None
