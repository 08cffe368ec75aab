"""Sentences sampled from HA's own intent templates over a home, with their expected outcome.

`python -m scripts.evaluation.generate --home DIR --out DIR`: for a home (an assist-format
`_fixtures.yaml`), sample sentences at random from the `home-assistant-intents` templates
HA ships (with `hassil`'s parsed expressions, filled with the home's names, areas and
floors), and let HA's built-in agent, whose templates they are, act on each in a real
Home Assistant: what it changes is the expected end state. Sentences it does not act on
(a name of another domain, an ambiguous one) are dropped. Each case is labelled with its
class, the template's intent and slot combination ("HassTurnOff area_domain"), and written
as an assist-format suite for `scripts/eval`. Seeded: the same arguments give the same suite.

A satellite's area ("turn off the lights here") is given as the case's `context_area`.
Questions (`--intents HassGetState HassClimateGetTemperature HassGetWeather`) are asked of
the home as its fixture leaves it: the expected end state is no change, and the reply must
hold the facts of HA's answer (`expect_facts`: the states, or a thermostat's temperature, of
what HA's handler matched), as the intents suites score a question. A list item's wildcard
is filled with things people put on lists (`WILDCARD_VALUES`); templates with other
wildcards (a song, a message) are left out.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
import json
import logging
from pathlib import Path
import random
import shutil
import tempfile
from typing import Any

from hassil import Intents
from hassil.expression import Alternative, Expression, ListReference, Permutation, RuleReference, Sequence, TextChunk
from hassil.intents import RangeSlotList, SlotList, TextSlotList
from hassil.util import normalize_whitespace
from home_assistant_intents import get_intents
import yaml

from .agents import async_builtin_agent
from .dataset import FIXTURES
from .fixtures import HomeFixture, load_home
from .home_loader import async_load_home, eval_hass, snapshot
from .run import answer_facts, home_entities, restrict
from .scoring import diff

# The intents whose outcome is a change of state (not a question, a timer or a list item).
ACTING_INTENTS = (
    "HassTurnOn", "HassTurnOff", "HassLightSet", "HassSetPosition", "HassClimateSetTemperature",
    "HassFanSetSpeed", "HassMediaPause", "HassMediaUnpause", "HassMediaNext", "HassSetVolume",
    "HassVacuumStart", "HassVacuumReturnToBase", "HassMediaPrevious", "HassMediaPlayerMute",
    "HassMediaPlayerUnmute", "HassSetVolumeRelative", "HassListAddItem", "HassShoppingListAddItem",
)  # fmt: skip
# The intents that read: their outcome is an answer, and nothing changed.
QUESTION_INTENTS = ("HassGetState", "HassClimateGetTemperature", "HassGetWeather")
# States a case starts from, so that the intent has something to change.
_START = {
    "HassTurnOn": {
        "light": "off", "switch": "off", "fan": "off", "cover": "closed", "valve": "closed", "lock": "unlocked",
    },
    "HassTurnOff": {"light": "on", "switch": "on", "fan": "on", "cover": "open", "valve": "open", "lock": "locked"},
    "HassLightSet": {"light": "on"},
    "HassMediaPause": {"media_player": "playing"},
    "HassMediaUnpause": {"media_player": "paused"},
    "HassMediaNext": {"media_player": "playing"},
    "HassMediaPrevious": {"media_player": "playing"},
    "HassMediaPlayerMute": {"media_player": "playing"},
    "HassMediaPlayerUnmute": {"media_player": "playing"},
    "HassSetVolumeRelative": {"media_player": "playing"},
    "HassVacuumStart": {"vacuum": "docked"},
    "HassVacuumReturnToBase": {"vacuum": "cleaning"},
}  # fmt: skip


# What a wildcard of a list item is filled with: things people put on lists.
WILDCARD_VALUES = {
    "todo_list_item": ("milk", "dish soap", "olive oil", "call the plumber", "birthday card", "AA batteries"),
    "shopping_list_item": ("eggs", "bananas", "paper towels", "coffee beans", "sparkling water", "rice"),
}


class _Unsampleable(Exception):
    """A template part this sampler does not fill (a wildcard)."""


@dataclass(slots=True)
class _Sampler:
    """What filling a template takes: the seeded choices, the slot lists and the expansion rules."""

    rng: random.Random
    lists: Mapping[str, SlotList]
    rules: Mapping[str, Any]

    def walk(self, expression: Expression) -> str:
        """One random sentence of `expression`: one alternative of each, one value of each list."""
        fill = _FILL.get(type(expression))
        if fill is None:
            raise _Unsampleable(str(expression))
        return fill(self, expression)

    def _alternative(self, expression: Alternative) -> str:
        """One of the alternatives, so that each is as likely."""
        return self.walk(self.rng.choice(expression.items))

    def _permutation(self, expression: Permutation) -> str:
        """All of the items, in a random order, as the template allows any."""
        items = list(expression.items)
        self.rng.shuffle(items)
        return " ".join(self.walk(item) for item in items)

    def _sequence(self, expression: Sequence) -> str:
        """The items in order, their own spacing kept (text chunks carry it)."""
        return "".join(self.walk(item) for item in expression.items)

    def _rule(self, expression: RuleReference) -> str:
        """The expansion rule's body, as if it were written in place."""
        return self.walk(self.rules[expression.rule_name].expression)

    def _list(self, expression: ListReference) -> str:
        """One of the list's values (a name, an area, a number of a range); a wildcard is not sampled."""
        slot_list = self.lists.get(expression.list_name)
        if isinstance(slot_list, TextSlotList) and slot_list.values:
            return self.walk(self.rng.choice(slot_list.values).text_in)
        if isinstance(slot_list, RangeSlotList):
            return str(self.rng.choice(list(slot_list.get_numbers())))
        if expression.list_name in WILDCARD_VALUES:
            return self.rng.choice(WILDCARD_VALUES[expression.list_name])
        raise _Unsampleable(str(expression))


# How each kind of template part is filled.
_FILL: dict[type[Expression], Callable[[_Sampler, Any], str]] = {
    TextChunk: lambda _sampler, chunk: chunk.original_text,
    Alternative: _Sampler._alternative,
    Permutation: _Sampler._permutation,
    Sequence: _Sampler._sequence,
    RuleReference: _Sampler._rule,
    ListReference: _Sampler._list,
}


def sample(
    fixture: HomeFixture, intent_names: tuple[str, ...], per_class: int, seed: int
) -> list[tuple[str, str, bool]]:
    """(class, sentence, needs a satellite's area) sampled from HA's English templates."""
    data = get_intents("en")
    assert data is not None
    intents = Intents.from_dict(data)
    lists: dict[str, SlotList] = {
        **intents.slot_lists,
        "area": TextSlotList.from_strings(sorted({a.name for a in fixture.areas})),
        "floor": TextSlotList.from_strings(sorted({f.name for f in fixture.floors})),
    }
    rng = random.Random(seed)
    found: list[tuple[str, str, bool]] = []
    for intent_name in intent_names:
        for intent_data in intents.intents[intent_name].data:
            combination = (intent_data.metadata or {}).get("slot_combination", "other")
            rules = {**intents.expansion_rules, **(intent_data.expansion_rules or {})}
            # Names of the devices the template is for (its domain), as HA's own lists do.
            wanted = (intent_data.requires_context or {}).get("domain") or (intent_data.slots or {}).get("domain")
            domains = {wanted} if isinstance(wanted, str) else set(wanted or _START.get(intent_name, {}) or ())
            names = sorted(
                {n for e in fixture.entities if not domains or e.domain in domains for n in (e.name, *e.aliases) if n}
            )
            lists["name"] = TextSlotList.from_strings(names)
            unfilled = intent_data.wildcard_list_names - WILDCARD_VALUES.keys()
            sentences = [s for s in intent_data.sentences if not set(s.list_names(rules)) & unfilled]
            if not sentences or ("floor" in combination and not fixture.floors):
                continue
            here = "area" in (intent_data.requires_context or {})
            sampler = _Sampler(rng, lists, rules)
            seen: set[str] = set()
            for _ in range(per_class * 4):
                sentence = rng.choice(sentences)
                try:
                    text = normalize_whitespace(sampler.walk(sentence.expression)).strip()
                except _Unsampleable:
                    break
                if text and text not in seen:
                    seen.add(text)
                    found.append((f"{intent_name} {combination}", text, here))
                if len(seen) >= per_class:
                    break
    return found


async def async_generate(home: Path, out: Path, intent_names: tuple[str, ...], per_class: int, seed: int) -> int:
    fixture = load_home(home / FIXTURES)
    sampled = sample(fixture, intent_names, per_class, seed)
    rng = random.Random(seed)
    tests: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as config:
        async with eval_hass(Path(config)) as hass:
            loaded = await async_load_home(hass, fixture)
            agent = await async_builtin_agent(hass)
            entities = home_entities(hass)
            areas = [a for a in fixture.areas if any(e.area_id == a.area_id for e in fixture.entities)]
            for number, (label, sentence, here) in enumerate(sampled):
                intent_name = label.partition(" ")[0]
                start = _START.get(intent_name, {})
                setup = {e: {"state": start[e.partition(".")[0]]} for e in entities if e.partition(".")[0] in start}
                area = rng.choice(areas) if here and areas else None
                device = loaded.satellite_device(area.area_id) if area else None
                await loaded.async_reset(setup)
                before = restrict(snapshot(hass), entities)
                turn = await agent.async_ask(sentence, f"gen-{number}", device)
                await hass.async_block_till_done()
                changes = diff(before, restrict(snapshot(hass), entities))
                if turn.error:
                    continue
                if intent_name in QUESTION_INTENTS:
                    if not changes:
                        facts = answer_facts(turn.matched_states)
                        tests.append(_question(label, sentence, facts, area.area_id if area else None))
                    continue
                if not changes:
                    continue
                # As the suites write it: the state, and the attributes apart.
                expected = {
                    entity_id: {
                        **({"state": change["state"]} if "state" in change else {}),
                        **(
                            {"attributes": attributes}
                            if (attributes := {k: v for k, v in change.items() if k != "state"})
                            else {}
                        ),
                    }
                    for entity_id, change in changes.items()
                }
                test: dict[str, Any] = {"sentences": [sentence], "setup": setup, "expect_changes": expected}
                if area:
                    test["context_area"] = area.area_id
                tests.append({"class": label, **test})
            await loaded.async_unload()
    target = out / home.name
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(home / FIXTURES, target / FIXTURES)
    by_class: dict[str, list[dict[str, Any]]] = {}
    for test in tests:
        by_class.setdefault(test.pop("class"), []).append(test)
    for label, group in by_class.items():
        name = label.replace(" ", "-")
        document = {"category": label, "tests": group}
        (target / f"{name}.yaml").write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return len(tests)


def _question(label: str, sentence: str, facts: str, area_id: str | None) -> dict[str, Any]:
    """A question's case: nothing may change, and the reply holds HA's answer's facts."""
    test: dict[str, Any] = {"class": label, "sentences": [sentence], "expect_changes": {}}
    if facts:
        test["expect_facts"] = facts
    if area_id:
        test["context_area"] = area_id
    return test


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.evaluation.generate", description=__doc__)
    parser.add_argument("--home", type=Path, nargs="+", required=True, help="home folders (with _fixtures.yaml)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--intents", nargs="+", default=list(ACTING_INTENTS))
    parser.add_argument("--per-class", type=int, default=3, help="sentences per template group")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("homeassistant", "scripts.evaluation.home_loader"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    for home in args.home:
        count = asyncio.run(async_generate(home, args.out, tuple(args.intents), args.per_class, args.seed))
        print(json.dumps({"home": home.name, "cases": count}))


if __name__ == "__main__":
    main()
