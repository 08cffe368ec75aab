"""Sentences sampled from HA's intent templates: seeded, filled with the home's own names."""

from __future__ import annotations

from pathlib import Path

from scripts.evaluation.fixtures import load_home
from scripts.evaluation.generate import QUESTION_INTENTS, WILDCARD_VALUES, sample

HOME = Path(__file__).resolve().parents[2] / "eval" / "two-floors" / "_fixtures.yaml"


def test_samples_are_seeded_and_use_the_homes_names() -> None:
    fixture = load_home(HOME)
    first = sample(fixture, ("HassTurnOn", "HassTurnOff"), 2, seed=3)
    assert first == sample(fixture, ("HassTurnOn", "HassTurnOff"), 2, seed=3)
    assert first != sample(fixture, ("HassTurnOn", "HassTurnOff"), 2, seed=4)
    classes = {label for label, _text, _here in first}
    # HA's own template groups: a name, an area and a domain, a floor, every one of a kind.
    assert {"HassTurnOn name_only", "HassTurnOff area_domain", "HassTurnOff floor_domain"} <= classes
    names = {n.lower() for e in fixture.entities for n in (e.name, *e.aliases)}
    areas = {a.name.lower() for a in fixture.areas}
    for label, text, here in first:
        if label.endswith("name_only"):
            assert any(name in text.lower() for name in names), text
        if label.endswith("area_domain") and not here:
            assert any(area in text.lower() for area in areas), text
        assert "{" not in text and "<" not in text, text


def test_questions_are_sampled_from_the_reading_templates() -> None:
    fixture = load_home(HOME)
    classes = {label for label, _text, _here in sample(fixture, QUESTION_INTENTS, 2, seed=3)}
    # A device by its name and state, every one of a kind, an area's temperature.
    assert {"HassGetState name_state", "HassGetState domain_state", "HassClimateGetTemperature area_only"} <= classes


def test_list_items_fill_the_wildcard() -> None:
    fixture = load_home(HOME.parents[1] / "home-contents" / "_fixtures.yaml")
    sampled = sample(fixture, ("HassListAddItem",), 3, seed=1)
    assert sampled
    for _label, text, _here in sampled:
        assert any(item in text for item in WILDCARD_VALUES["todo_list_item"]), text
