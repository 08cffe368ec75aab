"""The harness end to end: suites of both formats through HA's built-in agent in a real HA."""

from __future__ import annotations

from pathlib import Path

from homeassistant.const import CONF_LLM_HASS_API
import pytest

from custom_components.botpsy.const import DEFAULT_SUBENTRIES
from scripts.evaluation.__main__ import TOOLS, parse_args
from scripts.evaluation.agents import Turn, _subentry
from scripts.evaluation.dataset import Case, load_suite
from scripts.evaluation.report import CaseResult, conversations
from scripts.evaluation.run import AgentSpec, _ask, async_run_suite
from scripts.evaluation.scoring import Call, same

ASSIST_FIXTURES = """
areas: [{name: Kitchen, id: kitchen}, {name: Office, id: office}]
entities:
  - {name: Kitchen Light, id: light.kitchen_light, area: kitchen, state: "off",
     attributes: {supported_color_modes: [light.ColorMode.ONOFF]}}
  - {name: Desk Lamp, id: light.desk_lamp, area: office, state: "on"}
"""
ASSIST_TESTS = """
category: light
tests:
  - sentences: [Turn on the kitchen light]
    expect_changes: {light.kitchen_light: {state: "on", attributes: {color_mode: onoff}}}
  - sentences: [Make it cosy for reading]
    expect_changes: {light.desk_lamp: {state: "off"}}
  - sentences: ["What time is it?"]
"""
INTENT_FIXTURES = """
language: en
areas: [{name: Office, id: office_id}]
entities:
  - {name: Desk Lamp, id: light.desk_lamp, area: office_id, state: "off"}
  - {name: Thermostat, id: climate.thermostat, area: office_id, state: heat,
     attributes: {current_temperature: 21, temperature: 20}}
"""
INTENT_TESTS = """
language: en
tests:
  - sentences: [turn on the desk lamp]
    intent: {name: HassTurnOn, slots: {name: Desk Lamp}}
  - sentences: [illuminate my workspace]
    intent: {name: HassTurnOn, slots: {name: Desk Lamp}}
  - sentences: [what is the temperature in the office]
    intent: {name: HassClimateGetTemperature, slots: {area: Office}}
"""


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


async def run(folder: Path) -> list[CaseResult]:
    return await async_run_suite(load_suite(folder), AgentSpec(kind="builtin", timeout_s=60), 1, lambda _r: None)


async def test_assist_suite_through_the_builtin_agent(tmp_path: Path) -> None:
    suite = write(tmp_path / "mini", {"home/_fixtures.yaml": ASSIST_FIXTURES, "home/light.yaml": ASSIST_TESTS})
    passing, failing, no_change = await run(suite)
    assert (passing.passed, passing.actual_changes["light.kitchen_light"]["state"]) == (True, "on")
    assert passing.calls and passing.calls[0]["name"] == "HassTurnOn"
    assert (failing.passed, failing.failure) == (False, "no action")
    assert "light.desk_lamp" in failing.detail
    assert (no_change.passed, no_change.actual_changes) == (True, {})


async def test_intents_suite_through_the_builtin_agent(tmp_path: Path) -> None:
    suite = write(tmp_path / "intents", {"_fixtures.yaml": INTENT_FIXTURES, "light_HassTurnOn.yaml": INTENT_TESTS})
    passing, failing, question = await run(suite)
    assert passing.passed and passing.expected_changes["light.desk_lamp"]["state"] == "on"
    assert (failing.passed, failing.failure) == (False, "no action")
    assert question.passed and "21" in question.reply


class AskingAgent:
    """Asks to confirm first; does it on "yes"."""

    name = "asking"

    def __init__(self) -> None:
        self.heard: list[tuple[str, str]] = []

    async def async_ask(self, text: str, conversation_id: str, device_id: str | None) -> Turn:
        self.heard.append((text, conversation_id))
        if text == "yes":
            return Turn("Unlocked the front door.", asks_back=False, calls=[Call("lock_unlock", {}, executed=True)])
        return Turn("Unlock the front door?", asks_back=True, prompt_tokens=100, decoded_tokens=10)


@pytest.mark.parametrize("confirm", [True, False])
async def test_confirm_answers_yes_once(confirm: bool) -> None:
    agent = AskingAgent()
    case = Case(id="c", home="h", category="lock", sentence="unlock the front door")
    turn, _latency = await _ask(agent, AgentSpec(kind="botpsy", confirm=confirm), case, None, "conversation-1")
    assert turn is not None
    if confirm:
        assert [text for text, _ in agent.heard] == ["unlock the front door", "yes"]
        assert agent.heard[0][1] == agent.heard[1][1]  # the same conversation
        assert turn.reply == "Unlock the front door? / Unlocked the front door."
        assert [c.name for c in turn.calls] == ["lock_unlock"] and turn.prompt_tokens == 100
    else:
        assert [text for text, _ in agent.heard] == ["unlock the front door"]
        assert turn.asks_back and not turn.calls


async def test_a_conversation_is_not_confirmed_for() -> None:
    """In a conversation the user's own next turn says yes (or not): the harness does not."""
    agent = AskingAgent()
    case = Case(id="c/0", home="h", category="lock", sentence="unlock the front door", turn=0)
    turn, _latency = await _ask(agent, AgentSpec(kind="botpsy", confirm=True), case, None, "conversation-1")
    assert turn is not None and turn.asks_back and agent.heard == [("unlock the front door", "conversation-1")]


CONVERSATIONS = """
category: follow-ups
conversations:
  - kind: repeat
    turns:
      - sentence: Turn on the kitchen light
        expect_changes: {light.kitchen_light: {state: "on", attributes: {color_mode: onoff}}}
      # The state carries over: the light is on already, so nothing changes.
      - {sentence: Turn on the kitchen light, expect_changes: {}}
      - sentence: Turn off the kitchen light
        expect_changes: {light.kitchen_light: {state: "off", attributes: {color_mode: null}}}
  - kind: repeat
    turns:
      # A new conversation starts from the fixture's state again.
      - {sentence: Turn off the kitchen light, expect_changes: {}}
"""


async def test_conversations_carry_state_from_turn_to_turn(tmp_path: Path) -> None:
    suite = write(tmp_path / "talk", {"home/_fixtures.yaml": ASSIST_FIXTURES, "home/talk.yaml": CONVERSATIONS})
    loaded = load_suite(suite)
    assert [(c.id, c.turn, c.group) for c in loaded.cases][:2] == [
        ("home/talk/0/0", 0, "home/talk/0"),
        ("home/talk/0/1", 1, "home/talk/0"),
    ]
    assert len(loaded.first_phrasings(1).cases) == 4  # a conversation is kept whole
    results = await run(suite)
    assert [(r.id, r.passed, r.category) for r in results] == [
        ("home/talk/0/0", True, "repeat"),
        ("home/talk/0/1", True, "repeat"),
        ("home/talk/0/2", True, "repeat"),
        ("home/talk/1/0", True, "repeat"),
    ]
    assert conversations(results) == {"passed": 2, "total": 2, "score": 100.0}
    assert conversations([r for r in results if r.turn is None]) is None


def test_an_expected_range_holds_the_values_in_it() -> None:
    assert same({"below": 200}, 128) and not same({"below": 200}, 255) and not same(128, {"above": 128})
    assert same({"between": [18, 20]}, "19.5") and not same({"between": [18, 20]}, None)


async def test_newer_intents_layout_through_the_builtin_agent(tmp_path: Path) -> None:
    """<IntentName>/<case>.yaml files, each with its own small home of names and domains."""
    suite = write(
        tmp_path / "intents-new",
        {
            "HassTurnOff/fan.yaml": "entities:\n  - {name: Ceiling Fan, domain: fan, state: 'on'}\n"
            "tests:\n  - sentences: [turn off the ceiling fan]\n    slots: {name: Ceiling Fan}\n",
            "HassTurnOn/switch.yaml": "entities:\n  - {name: Coffee Maker, domain: switch}\n"
            "tests:\n  - sentences: [start the coffee maker please]\n    slots: {name: Coffee Maker}\n",
        },
    )
    fan, switch = await run(suite)
    assert fan.passed and fan.expected_changes == {"fan.ceiling_fan": {"percentage": 0, "state": "off"}}
    assert switch.expected_changes["switch.coffee_maker"]["state"] == "on"


@pytest.mark.parametrize(
    ("tools", "apis"), [("botpsy", ["botpsy"]), ("assist", ["assist"]), ("both", ["botpsy", "assist"])]
)
def test_tools_choose_the_agents_llm_apis(tools: str, apis: list[str]) -> None:
    args = parse_args(["--dataset", "suite", "--tools", tools])
    conversation, ai_task = (_subentry(s, TOOLS[args.tools]) for s in DEFAULT_SUBENTRIES)
    assert conversation["data"][CONF_LLM_HASS_API] == apis and conversation["unique_id"] is None
    assert CONF_LLM_HASS_API not in ai_task["data"]
    assert DEFAULT_SUBENTRIES[0]["data"][CONF_LLM_HASS_API] == ["botpsy"]  # the constant is untouched
    assert _subentry(DEFAULT_SUBENTRIES[0], None)["data"] == DEFAULT_SUBENTRIES[0]["data"]


async def test_a_home_in_another_language_is_conversed_in_it(tmp_path: Path) -> None:
    """The home's `language` is HA's and the conversation's: HA's built-in agent reads French."""
    fixtures = "language: fr\n" + ASSIST_FIXTURES.replace("Kitchen Light", "Lumière de la cuisine")
    tests = """
category: light
tests:
  - sentences: ["Allume la lumière de la cuisine"]
    expect_changes: {light.kitchen_light: {state: "on", attributes: {color_mode: onoff}}}
"""
    suite = write(tmp_path / "fr", {"maison/_fixtures.yaml": fixtures, "maison/light.yaml": tests})
    (result,) = await run(suite)
    assert result.passed, result.detail
