"""Suites in both formats (and the newer intents layout) are found and read."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.evaluation.dataset import DatasetError, load_suite

SHARED = Path(__file__).resolve().parents[3] / "shared" / "eval"


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared development suites are not on this machine")
def test_shared_suites() -> None:
    assist = load_suite(SHARED / "assist-mini")
    assert (assist.format, len(assist.homes), len(assist.cases)) == ("assist", 10, 50)
    lock = next(c for c in assist.cases if c.sentence == "Unlock smart lock")
    assert lock.setup == {"lock.smart_lock": {"state": "locked"}}
    assert lock.expect_changes == {"lock.smart_lock": {"state": "unlocked"}}
    garage = next(h for h in assist.homes if h.name == "home1-us-cover-garage")
    assert garage.cases[0].ignore_changes == {"cover.garage_door_opener": ("current_position",)}
    intents = load_suite(SHARED / "intents-en")
    assert (intents.format, len(intents.homes)) == ("intents", 1)
    assert len(intents.cases) == 208
    position = next(c for c in intents.cases if c.sentence == "open the curtains to 50%")
    assert position.intent is not None and position.intent.name == "HassSetPosition"
    assert position.intent.slots["position"] == 50
    here = next(c for c in intents.cases if c.sentence == "open the curtains in here to 50%")
    assert here.context_area == "Living Room"
    assert len(load_suite(SHARED / "assist-mini" / "home1-us-lock").cases) == 4
    assert lock.target is None
    actions = load_suite(SHARED / "device-actions")
    assert (actions.format, len(actions.homes), len(actions.cases)) == ("assist", 37, 3962)
    assert len({c.group for c in actions.cases}) == 1163
    thermostat = next(c for c in actions.cases if c.sentence == "Set the living room thermostat to 72 degrees")
    assert (thermostat.target, thermostat.group) == ("climate.thermostat", "home1-ca/hvac/0")
    firsts = actions.first_phrasings(1)
    assert len(firsts.cases) == 1163 and thermostat in firsts.cases


# The project's own suites (eval/): each loads, with every turn of its conversations.
OWN = Path(__file__).resolve().parents[2] / "eval"


@pytest.mark.parametrize(
    "suite",
    [
        "follow-ups/dev",
        "follow-ups/validation",
        "generated/dev",
        "generated/validation",
        "home-contents",
        "mill-house",
        "two-floors",
        "languages/de",
        "languages/fr",
        "languages/es",
        "validation",
    ],
)
def test_own_suites_load(suite: str) -> None:
    """A suite file that does not load is a dev set that silently measures less (two
    blocks appended with YAML anchors of the same name once made one home unreadable)."""
    loaded = load_suite(OWN / suite)
    assert loaded.homes and loaded.cases
    assert {c.home for c in loaded.cases} == {h.name for h in loaded.homes}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_assist_home_with_only_no_change_cases(tmp_path: Path) -> None:
    write(tmp_path / "home" / "_fixtures.yaml", "entities:\n  - {name: Porch, id: light.porch, state: 'off'}\n")
    write(tmp_path / "home" / "chat.yaml", "category: chat\ntests:\n  - sentences: [Tell me a joke, Hello]\n")
    write(tmp_path / "home" / "ask.yaml", "tests:\n  - {sentences: [is the porch on], expect_facts: 'off'}\n")
    suite = load_suite(tmp_path)
    assert suite.format == "assist"
    assert [(c.category, c.sentence, dict(c.expect_changes), c.expect_facts) for c in suite.cases] == [
        ("ask", "is the porch on", {}, "off"),
        ("chat", "Tell me a joke", {}, ""),
        ("chat", "Hello", {}, ""),
    ]


def test_newer_intents_layout(tmp_path: Path) -> None:
    write(
        tmp_path / "HassTurnOn" / "light_name.yaml",
        "entities:\n  - {name: Desk Lamp, domain: light}\n"
        "tests:\n  - sentences: [turn on the desk lamp]\n    slots: {name: Desk Lamp}\n",
    )
    suite = load_suite(tmp_path)
    assert suite.format == "intents"
    (home,) = suite.homes
    assert home.name == "HassTurnOn/light_name"
    assert home.fixture["entities"] == [{"name": "Desk Lamp", "domain": "light"}]
    (case,) = home.cases
    assert case.intent is not None
    assert (case.intent.name, dict(case.intent.slots)) == ("HassTurnOn", {"name": "Desk Lamp"})


def test_not_a_suite(tmp_path: Path) -> None:
    write(tmp_path / "notes.yaml", "hello: world\n")
    with pytest.raises(DatasetError, match="neither"):
        load_suite(tmp_path)
    write(tmp_path / "bad" / "_fixtures.yaml", "entities: [\n")
    with pytest.raises(DatasetError):
        load_suite(tmp_path / "bad")
