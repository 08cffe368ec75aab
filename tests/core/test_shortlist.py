"""Shortlisting keeps prompts and grammars small in big homes, without losing the target."""

from __future__ import annotations

from dataclasses import replace

import pytest

from botpsy_runtime.formats import FORMATS
from custom_components.botpsy.core.grammar import compile_grammar
from custom_components.botpsy.core.home import HomeEntity
from custom_components.botpsy.core.shortlist import (
    DEFAULT_LIMIT,
    DOMAIN_WORDS,
    SMALL_HOME,
    _similar,
    find_entities,
    restrict,
    score,
    shortlist,
    words,
)
from custom_components.botpsy.core.tools import compile_tools
from scripts.testing.sample_home import generated_home, sample_home


@pytest.mark.parametrize(
    ("utterance", "expected"),
    [
        ("turn off the kitchen ceiling light", "light.kitchen_ceiling_light"),
        ("set the bedroom thermostat to heat", "climate.bedroom_thermostat"),
        ("lock the garage door", "lock.garage_door_lock"),
        ("play spotify on the patio speaker", "media_player.patio_speaker"),
        ("switch on the plug in the laundry", "switch.laundry_plug"),
        ("dim the nursery celing light", "light.nursery_ceiling_light"),  # misspelt
    ],
)
def test_target_is_in_a_small_shortlist_of_a_large_home(utterance: str, expected: str) -> None:
    home = generated_home(1000)
    ids = shortlist(home.entities, utterance)
    assert expected in ids
    assert len(ids) <= DEFAULT_LIMIT


def test_aliases_and_recent_entities_count() -> None:
    home = sample_home()
    ids = shortlist(home.entities, "switch on the study lamp", limit=3, small_home=0)
    assert "light.desk" in ids  # alias "study lamp"
    recent = shortlist(home.entities, "turn it off", limit=1, small_home=0, recent=["switch.coffee"])
    assert recent == ("switch.coffee",)


def test_small_homes_are_not_shortlisted() -> None:
    home = generated_home(SMALL_HOME)
    assert len(home.entities) > DEFAULT_LIMIT
    assert len(shortlist(home.entities, "anything")) == len(home.entities)
    bigger = generated_home(SMALL_HOME + 1)
    assert len(shortlist(bigger.entities, "turn off the kitchen lamp")) <= DEFAULT_LIMIT


def test_grammar_stays_small_at_1000_entities() -> None:
    home = generated_home(1000)
    tools = compile_tools(home)
    full = compile_grammar(tools, FORMATS["qwen_xml"])
    short = compile_grammar(restrict(tools, shortlist(home.entities, "turn off the kitchen lamp")), FORMATS["qwen_xml"])
    assert len(short) * 10 < len(full)
    assert "light.kitchen_lamp" in short


def test_find_entities_reaches_everything() -> None:
    home = generated_home(1000)
    found = find_entities(home.entities, "basement speaker")
    assert found[0]["entity_id"] == "media_player.basement_speaker"


def _score_by_definition(entity: HomeEntity, query: tuple[str, ...]) -> float:
    """`score` spelled out, each word of each phrase compared with the query's anew."""

    def overlap(phrase: str) -> float:
        target = words(phrase)
        return sum(any(_similar(q, t) for q in query) for t in target) / len(target) if target else 0.0

    result = 3 * max(overlap(n) for n in (entity.name, *entity.aliases))
    for place in (entity.area, entity.floor):
        if place and overlap(place) == 1.0:
            result += 2
    if any(w in query for w in DOMAIN_WORDS.get(entity.domain, ())):
        result += 1.5
    if entity.device_class and entity.device_class.replace("_", " ") in " ".join(query):
        result += 1
    return result


@pytest.mark.parametrize(
    "utterance",
    [
        "turn off the kitchen ceiling light",
        "dim the nursery celing lamp upstairs",  # misspelt, a floor
        "what is the temperature on the ground floor",  # a device class, a floor
        "open the garage door of the big lamp",
        "play music in the den",
        "",
    ],
)
def test_each_entity_scores_as_its_definition_says(utterance: str) -> None:
    """Scores worked out once per word, phrase, domain and device class of a request are
    those of each entity on its own, for every entity of a big home."""
    entities = list(generated_home(400).entities) + list(sample_home().entities)
    for i, entity in enumerate(entities):
        if i % 7 == 0:
            entities[i] = replace(entity, floor=("Ground floor", "Upstairs")[i % 2])
        if i % 11 == 0:
            entities[i] = replace(entity, aliases=("big lamp", "Ceiling"), device_class="garage_door")
    query = words(utterance)
    assert [score(e, query) for e in entities] == [_score_by_definition(e, query) for e in entities]
    scored = [(_score_by_definition(e, query), e.entity_id) for e in entities]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    expected = tuple(sorted(entity_id for _score, entity_id in ranked[:DEFAULT_LIMIT]))
    assert shortlist(entities, utterance) == expected
