"""The scorer: end-state (assist) and tool-call (intents) cases, passing, failing and no-change."""

from __future__ import annotations

from scripts.evaluation.scoring import (
    Call,
    Expectation,
    Failure,
    Outcome,
    diff,
    score_end_state,
    score_intent,
    score_target,
)

BEFORE = {
    "light.kitchen": {"state": "off", "brightness": None, "color_mode": None},
    "lock.front_door": {"state": "locked"},
    "cover.garage": {"state": "closed", "current_position": 0},
}


def after(**changes: dict[str, object]) -> dict[str, dict[str, object]]:
    result = {k: dict(v) for k, v in BEFORE.items()}
    for entity, values in changes.items():
        result[entity.replace("__", ".")].update(values)
    return result


def end_state(after_: dict[str, dict[str, object]], expect: dict[str, dict[str, object]], reply: str = "Done"):
    changes = diff(BEFORE, after_)
    return score_end_state(BEFORE, after_, Expectation(expect), Outcome(changes, reply=reply))


def test_end_state_passes_when_exactly_the_expected_change_happened() -> None:
    expect = {"light.kitchen": {"state": "on", "attributes": {"brightness": 0, "color_mode": "brightness"}}}
    verdict = end_state(after(light__kitchen={"state": "on", "brightness": 0, "color_mode": "brightness"}), expect)
    assert verdict.passed and verdict.failure is None
    assert verdict.expected_changes == {"light.kitchen": {"brightness": 0, "color_mode": "brightness", "state": "on"}}


def test_end_state_compares_numbers_and_strings_as_the_original_scorer() -> None:
    expect = {"cover.garage": {"state": "open", "attributes": {"current_position": "100"}}}
    assert end_state(after(cover__garage={"state": "open", "current_position": 100.0}), expect).passed


def test_end_state_fails_on_an_extra_change_wrong_target_and_apology() -> None:
    expect = {"light.kitchen": {"state": "on"}}
    extra = end_state(after(light__kitchen={"state": "on"}, lock__front_door={"state": "unlocked"}), expect)
    assert (extra.passed, extra.failure) == (False, Failure.EXTRA_ACTION)
    assert "lock.front_door" in extra.detail
    wrong = end_state(after(cover__garage={"state": "open"}), expect)
    assert wrong.failure == Failure.WRONG_TARGET
    value = end_state(after(light__kitchen={"state": "on", "brightness": 10}), expect)
    assert value.failure == Failure.WRONG_VALUE
    sorry = end_state(after(light__kitchen={"state": "on"}), expect, reply="Sorry, I could not do that")
    assert sorry.failure == Failure.APOLOGY


def test_end_state_no_change_case_is_scored() -> None:
    assert end_state(after(), {}).passed
    acted = end_state(after(lock__front_door={"state": "unlocked"}), {})
    assert (acted.passed, acted.failure) == (False, Failure.EXTRA_ACTION)


def test_end_state_no_action_and_format_error() -> None:
    expect = {"lock.front_door": {"state": "unlocked"}}
    assert end_state(after(), expect).failure == Failure.NO_ACTION
    outcome = Outcome({}, reply="", calls=[Call("lock_unlock", {"entity_id": "lock.nope"}, valid=False)])
    verdict = score_end_state(BEFORE, after(), Expectation(expect), outcome)
    assert verdict.failure == Failure.FORMAT_ERROR


def test_end_state_ignores_listed_attributes() -> None:
    expect = {"cover.garage": {"state": "open"}}
    moved = after(cover__garage={"state": "open", "current_position": 37})
    changes = diff(BEFORE, moved, {"cover.garage": ["current_position"]})
    outcome = Outcome(changes)
    assert score_end_state(BEFORE, moved, Expectation(expect, {"cover.garage": ("current_position",)}), outcome).passed
    assert not score_end_state(BEFORE, moved, Expectation(expect), outcome).passed


def test_end_state_expected_response_words() -> None:
    outcome = Outcome({}, reply="The front door is locked.")
    assert score_end_state(BEFORE, after(), Expectation(response=("locked",)), outcome).passed
    assert (
        score_end_state(BEFORE, after(), Expectation(response=("unlocked", "open")), outcome).failure
        == Failure.WRONG_ANSWER
    )


def test_end_state_expected_facts_are_every_one() -> None:
    """A generated question: the reply must hold each fact of HA's answer (numbers as numbers)."""
    expect = Expectation(facts="on 21.5")
    assert score_end_state(BEFORE, after(), expect, Outcome({}, reply="Yes, the lamp is on; it is 21.50 °C.")).passed
    lacking = score_end_state(BEFORE, after(), expect, Outcome({}, reply="The lamp is on."))
    assert (lacking.failure, lacking.detail) == (Failure.WRONG_ANSWER, "the reply lacks ['21.5']")
    assert not score_end_state(BEFORE, after(), expect, Outcome({}, reply="It is 21.5 and the lamp is one.")).passed


SET_POSITION = Outcome({"cover.garage": {"current_position": 50, "state": "open"}}, targets={"cover.garage"})


def test_intent_passes_with_the_same_targets_and_effect() -> None:
    outcome = Outcome({"cover.garage": {"current_position": 50, "state": "open"}}, targets={"cover.garage"}, reply="Ok")
    assert score_intent(SET_POSITION, outcome).passed


def test_intent_fails_on_wrong_value_target_or_nothing() -> None:
    value = Outcome({"cover.garage": {"current_position": 40, "state": "open"}}, targets={"cover.garage"})
    assert score_intent(SET_POSITION, value).failure == Failure.WRONG_VALUE
    target = Outcome({"light.kitchen": {"state": "on"}}, targets={"light.kitchen"})
    assert score_intent(SET_POSITION, target).failure == Failure.WRONG_TARGET
    extra = Outcome(
        {**SET_POSITION.changes, "light.kitchen": {"state": "on"}}, targets={"cover.garage", "light.kitchen"}
    )
    assert score_intent(SET_POSITION, extra).failure == Failure.EXTRA_ACTION
    assert score_intent(SET_POSITION, Outcome({})).failure == Failure.NO_ACTION


def test_intent_on_an_entity_already_in_that_state_is_scored_by_target() -> None:
    expected = Outcome({}, targets={"light.kitchen"})
    assert score_intent(expected, Outcome({}, targets={"light.kitchen"})).passed
    assert score_intent(expected, Outcome({}, targets={"light.hall"})).failure == Failure.WRONG_TARGET


def test_intent_question_needs_the_answer_and_no_change() -> None:
    question = Outcome({}, reply="68.0")
    assert score_intent(question, Outcome({}, reply="It is 68 degrees in the office.")).passed
    assert score_intent(question, Outcome({}, reply="It is 21 degrees.")).failure == Failure.WRONG_ANSWER
    acted = Outcome({"light.kitchen": {"state": "on"}}, targets={"light.kitchen"}, reply="68")
    assert score_intent(question, acted).failure == Failure.EXTRA_ACTION
    state_word = Outcome({}, reply="locked")
    assert score_intent(state_word, Outcome({}, reply="The front door is locked.")).passed
    assert not score_intent(state_word, Outcome({}, reply="The front door is unlocked.")).passed


def test_timeout_is_its_own_cause() -> None:
    outcome = Outcome({}, timed_out=True)
    assert score_end_state(BEFORE, after(), Expectation(), outcome).failure == Failure.TIMEOUT
    assert score_intent(SET_POSITION, outcome).failure == Failure.TIMEOUT


def test_target_passes_on_its_entity_alone_even_when_nothing_changed() -> None:
    assert score_target("light.kitchen", Outcome({}, {"light.kitchen"}, reply="It was already on.")).passed
    assert score_target("light.kitchen", Outcome({"light.kitchen": {"state": "on"}}, reply="Done")).passed
    extra = score_target("light.kitchen", Outcome({}, {"light.kitchen", "lock.front_door"}, reply="Done"))
    assert extra.failure == Failure.EXTRA_ACTION and "lock.front_door" in extra.detail
    assert score_target("light.kitchen", Outcome({}, {"cover.garage"})).failure == Failure.WRONG_TARGET
    assert score_target("light.kitchen", Outcome({}, set(), reply="Which light?")).failure == Failure.NO_ACTION
    sorry = score_target("light.kitchen", Outcome({}, {"light.kitchen"}, reply="Sorry, I could not"))
    assert sorry.failure == Failure.APOLOGY
