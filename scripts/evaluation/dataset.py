"""Evaluation suites on disk -> homes and cases, in either of the two formats (detected).

- `assist` (end state, home-assistant-datasets): one folder per home, `_fixtures.yaml`
  plus category files whose tests give `sentences`, `setup` and `expect_changes`.
- `intents` (tool call, HA's intents repo): `_fixtures.yaml` plus files whose tests
  give `sentences` and the expected `intent` (`name`, `slots`, `context.area`), or the
  newer layout `<IntentName>/<case>.yaml`, each file with its own small home
  (`entities:`) and tests with `sentences` and `slots`.

Every sentence is one case. An assist file may also give `conversations:` (follow-ups),
each a list of `turns` (`sentence`, `expect_changes`, `expect_response`) said one after
another in one conversation, the home's state carried from turn to turn; each turn is a
case, and a conversation is a test whose "phrasings" are its turns. Nothing here imports
Home Assistant.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

FIXTURES = "_fixtures.yaml"
SuiteFormat = Literal["assist", "intents"]


class DatasetError(ValueError):
    """A folder that is not a suite in either format, or a malformed file in one."""


@dataclass(frozen=True, slots=True)
class ExpectedIntent:
    """What HA's intent matcher should make of a sentence (intents suites)."""

    name: str
    slots: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Case:
    """One sentence to send, what to set up first and what should come of it."""

    id: str
    home: str
    category: str
    sentence: str
    setup: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Assist suites: entity id -> {state, attributes} expected to differ afterwards
    # (empty: nothing may change).
    expect_changes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    ignore_changes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    expect_response: tuple[str, ...] = ()
    # Facts the reply must hold, every one (a question's answer as HA's handler matched it:
    # states and numbers, as `expect_facts` in the file); empty: none.
    expect_facts: str = ""
    intent: ExpectedIntent | None = None
    # The area of the device that heard the sentence, if the case says so.
    context_area: str | None = None
    # device-actions groups: the one entity the sentence must act on (its action unlabelled).
    target: str | None = None
    # ... and its area, as the group names it (public homes reuse an id in several areas).
    target_area: str | None = None
    # A turn of a conversation (its number): said after the turns before it, in the same
    # conversation and the state they left; the home is reset before turn 0 only.
    turn: int | None = None

    @property
    def follows(self) -> bool:
        """Whether the case continues the conversation of the case before it."""
        return bool(self.turn)

    @property
    def group(self) -> str:
        """The test the sentence belongs to: its phrasings ask for the same thing."""
        return self.id.rsplit("/", 1)[0]


@dataclass(frozen=True, slots=True)
class HomeCases:
    """A home (its fixture mapping, parsed by the home loader) and the cases run in it."""

    name: str
    fixture: Mapping[str, Any]
    cases: tuple[Case, ...]


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    format: SuiteFormat
    homes: tuple[HomeCases, ...]

    @property
    def cases(self) -> list[Case]:
        return [case for home in self.homes for case in home.cases]

    def limited(self, count: int) -> Suite:
        """The first `count` cases only (a quick try)."""
        homes = []
        for home in self.homes:
            if count <= 0:
                break
            homes.append(HomeCases(home.name, home.fixture, home.cases[:count]))
            count -= len(homes[-1].cases)
        return Suite(self.name, self.format, tuple(homes))

    def first_phrasings(self, count: int) -> Suite:
        """Only the first `count` phrasings of every test (a quicker run over every test)."""
        homes = []
        for home in self.homes:
            seen: dict[str, int] = {}
            kept = []
            for case in home.cases:
                seen[case.group] = seen.get(case.group, 0) + 1
                if seen[case.group] <= count or case.turn is not None:  # a conversation is whole
                    kept.append(case)
            homes.append(HomeCases(home.name, home.fixture, tuple(kept)))
        return Suite(self.name, self.format, tuple(homes))


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise DatasetError(f"{path}: {err}") from err


def _tests(path: Path, data: Any, *, optional: bool = False) -> list[Mapping[str, Any]]:
    tests = data.get("tests") if isinstance(data, Mapping) else None
    if tests is None and optional:
        return []
    if not isinstance(tests, list) or not all(isinstance(t, Mapping) for t in tests):
        raise DatasetError(f"{path}: expected a `tests:` list")
    return tests


def _sentences(path: Path, test: Mapping[str, Any]) -> list[str]:
    sentences = test.get("sentences")
    if not isinstance(sentences, list) or not sentences:
        raise DatasetError(f"{path}: a test without `sentences`")
    return [str(s) for s in sentences]


def _changes(value: Any) -> dict[str, dict[str, Any]]:
    """`{entity_id: {state, attributes}}` with empty parts dropped."""
    result: dict[str, dict[str, Any]] = {}
    for entity_id, given in (value or {}).items():
        change = given or {}
        entry: dict[str, Any] = {}
        if "state" in change:
            entry["state"] = change["state"]
        if change.get("attributes"):
            entry["attributes"] = dict(change["attributes"])
        result[str(entity_id)] = entry
    return result


def _assist_home(folder: Path, suite_root: Path) -> HomeCases:
    name = folder.relative_to(suite_root).as_posix() if folder != suite_root else folder.name
    fixture = _read(folder / FIXTURES) or {}
    cases: list[Case] = []
    for path in sorted(folder.glob("*.yaml")):
        if path.name == FIXTURES:
            continue
        data = _read(path)
        category = str(data.get("category") or path.stem) if isinstance(data, Mapping) else path.stem
        conversations = _conversations(path, data)
        for t, test in enumerate(_tests(path, data, optional=bool(conversations))):
            response = test.get("expect_response") or ()
            for s, sentence in enumerate(_sentences(path, test)):
                cases.append(
                    Case(
                        id=f"{name}/{path.stem}/{t}/{s}",
                        home=name,
                        category=category,
                        sentence=sentence,
                        setup=_changes(test.get("setup")),
                        expect_changes=_changes(test.get("expect_changes")),
                        ignore_changes={str(k): tuple(v or ()) for k, v in (test.get("ignore_changes") or {}).items()},
                        expect_response=(response,) if isinstance(response, str) else tuple(map(str, response)),
                        expect_facts=str(test.get("expect_facts") or ""),
                        context_area=test.get("context_area"),
                        # A group naming its entity and no end state asks to act on that entity.
                        target=str(test["entity_id"]) if "entity_id" in test and "expect_changes" not in test else None,
                        target_area=test.get("area"),
                    )
                )
        for c, conversation in enumerate(conversations):
            for n, turn in enumerate(conversation["turns"]):
                response = turn.get("expect_response") or ()
                cases.append(
                    Case(
                        id=f"{name}/{path.stem}/{c}/{n}",
                        home=name,
                        category=str(conversation.get("kind") or category),
                        sentence=str(turn["sentence"]),
                        setup=_changes(conversation.get("setup")) if n == 0 else {},
                        expect_changes=_changes(turn.get("expect_changes")),
                        ignore_changes={str(k): tuple(v or ()) for k, v in (turn.get("ignore_changes") or {}).items()},
                        expect_response=(response,) if isinstance(response, str) else tuple(map(str, response)),
                        context_area=conversation.get("context_area"),
                        turn=n,
                    )
                )
    return HomeCases(name, fixture, tuple(cases))


def _conversations(path: Path, data: Any) -> list[Mapping[str, Any]]:
    """A file's `conversations:`, each with a non-empty list of turns that have a sentence."""
    conversations = data.get("conversations") if isinstance(data, Mapping) else None
    if conversations is None:
        return []
    if not isinstance(conversations, list) or not all(
        isinstance(c, Mapping)
        and isinstance(c.get("turns"), list)
        and c["turns"]
        and all(isinstance(t, Mapping) and t.get("sentence") for t in c["turns"])
        for c in conversations
    ):
        raise DatasetError(f"{path}: every conversation needs `turns`, each with a `sentence`")
    return conversations


def _intent_cases(path: Path, data: Any, home: str, intent_name: str | None) -> Iterator[Case]:
    for t, test in enumerate(_tests(path, data)):
        intent = test.get("intent") or {}
        name = intent.get("name") or intent_name
        if not name:
            raise DatasetError(f"{path}: a test without an intent name")
        slots = intent.get("slots", test.get("slots")) or {}
        context = intent.get("context") or test.get("context") or {}
        for s, sentence in enumerate(_sentences(path, test)):
            yield Case(
                id=f"{home}/{path.stem}/{t}/{s}",
                home=home,
                category=str(name),
                sentence=sentence,
                intent=ExpectedIntent(str(name), dict(slots)),
                context_area=context.get("area"),
            )


def _is_assist_home(folder: Path) -> bool:
    """A home folder: fixtures plus test files whose tests name no intent."""
    if not (folder / FIXTURES).is_file():
        return False
    for path in folder.glob("*.yaml"):
        if path.name != FIXTURES:
            data = _read(path)
            tests = data.get("tests") if isinstance(data, Mapping) else None
            if isinstance(tests, list) and tests and not any(isinstance(t, Mapping) and "intent" in t for t in tests):
                return True
            if isinstance(data, Mapping) and data.get("conversations"):
                return True
    return False


def load_suite(root: Path) -> Suite:
    """The suite in `root`, its format detected from the files."""
    root = root.resolve()
    if not root.is_dir():
        raise DatasetError(f"{root} is not a folder")
    name = root.name
    if _is_assist_home(root):
        return Suite(name, "assist", (_assist_home(root, root),))
    homes = sorted(p.parent for p in root.glob(f"*/{FIXTURES}") if _is_assist_home(p.parent))
    if homes:
        return Suite(name, "assist", tuple(_assist_home(h, root) for h in homes))
    if (root / FIXTURES).is_file():
        fixture = _read(root / FIXTURES) or {}
        cases = [
            case
            for path in sorted(root.glob("*.yaml"))
            if path.name != FIXTURES
            for case in _intent_cases(path, _read(path), name, None)
        ]
        if cases:
            return Suite(name, "intents", (HomeCases(name, fixture, tuple(cases)),))
    # The newer intents layout: <IntentName>/<case>.yaml, each with its own home.
    per_file: list[HomeCases] = []
    for path in sorted(root.glob("*/*.yaml")):
        data = _read(path)
        if isinstance(data, Mapping) and "entities" in data and "tests" in data:
            home = f"{path.parent.name}/{path.stem}"
            fixture = {k: v for k, v in data.items() if k != "tests"}
            per_file.append(HomeCases(home, fixture, tuple(_intent_cases(path, data, home, path.parent.name))))
    if per_file:
        return Suite(name, "intents", tuple(per_file))
    raise DatasetError(f"{root}: neither an assist suite (homes with {FIXTURES}) nor an intents suite")
