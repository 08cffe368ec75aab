"""Shortlisting keeps prompts and grammars small in big homes, without losing the target."""

from __future__ import annotations

import pytest

from custom_components.botpsy.core.formats import FORMATS
from custom_components.botpsy.core.grammar import compile_grammar
from custom_components.botpsy.core.shortlist import DEFAULT_LIMIT, SMALL_HOME, find_entities, restrict, shortlist
from custom_components.botpsy.core.tools import compile_tools

from .sample_home import generated_home, sample_home


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
