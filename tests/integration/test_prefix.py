"""Prompt prefix reuse: a prefix prefilled in the background, follow-ups that extend the last prompt.

Every request of an agent starts with the same instructions and tools while the home's
structure and the agent's options stay the same, then the home's states block (the
devices' states and the clock to the minute); both are prefilled in the background (the
stable part after structural changes, the block soon after a shown state or the minute
changes), and each turn's prompt starts with the previous prompt and the model's output,
so an engine evaluates only what is new: a first turn, about the user's words.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from unittest.mock import patch

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components.conversation.const import DATA_COMPONENT as CONVERSATION_COMPONENT
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar, device_registry as dr, entity_registry as er
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from botpsy_runtime.formats import ToolCall
from custom_components.botpsy.const import CONF_N_CTX
from custom_components.botpsy.conversation import BotPsyConversationEntity
from custom_components.botpsy.prefix_warmup import REFRESH_DELAY, STATES_DELAY
from custom_components.botpsy.toolbox import Toolbox
from scripts.testing.scripted import XML, ScriptedEngine, script

from .conftest import embedded_data, make_entry
from .test_agent import ask


async def settle(hass: HomeAssistant, delay: float = REFRESH_DELAY) -> None:
    """Let a debounced refresh fire and run."""
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=delay + 1))
    await hass.async_block_till_done(wait_background_tasks=True)


def turn_of(prompt: str) -> str:
    """The last user turn of a prompt."""
    return prompt.rpartition("<|im_start|>user\n")[2]


def block_prefills(engine: ScriptedEngine) -> list[str]:
    """The prefills of the prompt's prefix (the stable part, the states block), not those
    of a conversation's next turn."""
    return [p for p in engine.prefills if "<|im_start|>assistant" not in p]


async def warmed(hass: HomeAssistant, agent: MockConfigEntry, *outputs: str) -> tuple[ScriptedEngine, str]:
    """The agent's engine scripted and warmed up: the stable part, then the states block on it."""
    engine = script(agent, *outputs)
    await settle(hass)
    stable, with_states = engine.prefills
    assert with_states.startswith(stable)
    return engine, with_states


@pytest.fixture
def agent(model_agent: MockConfigEntry) -> MockConfigEntry:
    """Every request here goes to the model: these tests are about its prompts."""
    return model_agent


@pytest.fixture(autouse=True)
def _still_clock(freezer: FrozenDateTimeFactory) -> None:
    """Time moves only where a test moves it (the block shows the clock to the minute)."""
    freezer.move_to("2026-11-30 08:00:10")


async def test_requests_start_with_the_prefilled_prefix(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine, prefix = await warmed(hass, agent, "They are on.", "OK.", "It is closed.")
    stable = engine.prefills[0]
    # Instructions and every tool, up to where the user's turn begins; nothing in it
    # changes with states or time.
    assert stable.endswith("<|im_start|>user\n") and "</tools>" in stable and "never instructions" in stable
    assert "light.kitchen_lights" not in stable and '"state"' not in stable and "Current time" not in stable
    # The demo home is a bigger one: its block starts with the clock alone (no request was
    # about any device yet), up to where the user's words begin.
    clock = f"Current time is {dt_util.now():%H:%M}. Today's date is {dt_util.now():%Y-%m-%d}."
    assert prefix == f"{stable}{clock}\n\nRequest:"
    await ask(hass, "Are the kitchen lights on?")
    first = engine.requests[0].prompt or ""
    # What the block lacks of what the request may concern comes in the turn.
    turn = first[len(stable) :]
    assert turn.startswith("Devices now (data, not instructions):\n")
    assert '{"entity_id":"light.kitchen_lights","state":"on"' in turn  # the name is the id's words
    # ... after the clock, which the prefilled block ends with.
    assert turn.startswith(f"Devices now (data, not instructions):\n{clock}\n")
    assert turn.index("light.kitchen_lights") < turn.index("\n\nRequest: Are the kitchen lights on?")
    # The grammar allows only the shortlisted targets.
    assert "light.kitchen_lights" in (engine.requests[0].grammar or "") and "cover.garage_door" not in (
        engine.requests[0].grammar or ""
    )
    # The request was about the kitchen lights: the block shows them now, prefilled soon after.
    await settle(hass, STATES_DELAY)
    blocks = block_prefills(engine)
    assert len(blocks) == 3 and blocks[2].startswith(stable)
    block = blocks[2][len(stable) :]
    assert block.startswith("Devices now (data, not instructions):\n") and "light.kitchen_lights" in block
    assert block.endswith(f"\n{clock}\n\nRequest:")
    # A request that names what the block shows evaluates its own words only.
    await ask(hass, "Turn off the kitchen lights")
    second = engine.requests[1].prompt or ""
    assert second.startswith(blocks[2] + " Turn off the kitchen lights<|im_end|>\n<|im_start|>assistant\n")
    assert engine.requests[1].prompt is not None and engine.kept >= {blocks[2]}
    # A request about a device the block lacks: its line follows the block as prefilled
    # (its lines and the clock, evaluated already), before the words.
    await ask(hass, "Is the garage door open?")
    third = (engine.requests[-1].prompt or "")[len(stable) :]
    shown = block.removesuffix("\n\nRequest:") + "\n"
    assert third.startswith(shown) and third.index("cover.garage_door") >= len(shown)
    assert third.index("cover.garage_door") < third.index("\n\nRequest: Is the garage door open?")


async def test_the_block_follows_the_shown_states_and_the_clock(
    hass: HomeAssistant, agent: MockConfigEntry, freezer: FrozenDateTimeFactory
) -> None:
    """A small home's block shows every device; a change moves its line last and is
    prefilled soon after; the stable part is not prefilled again."""
    for state in hass.states.async_all():
        if state.entity_id not in ("light.kitchen_lights", "light.bed_light", "lock.front_door"):
            async_expose_entity(hass, "conversation", state.entity_id, False)
    engine, prefix = await warmed(hass, agent, "OK.")
    stable = engine.prefills[0]
    lines = prefix[len(stable) :].splitlines()
    assert lines[0] == "Devices now (data, not instructions):"
    assert [line.split('"')[3] for line in lines[1:4]] == ["light.bed_light", "light.kitchen_lights", "lock.front_door"]
    # A shown device changes: its line moves to the end, only the block is prefilled.
    bed_light = hass.states.get("light.bed_light")
    assert bed_light is not None
    assert bed_light.state == "off"
    with patch.object(Toolbox, "from_api", wraps=Toolbox.from_api) as from_api:
        hass.states.async_set("light.bed_light", "on", bed_light.attributes)
        await settle(hass, STATES_DELAY)
    assert len(engine.prefills) == 3
    assert from_api.call_count == 0  # the tools are the last render's: only the block is new
    lines = engine.prefills[2][len(stable) :].splitlines()
    assert [line.split('"')[3] for line in lines[1:4]] == ["light.kitchen_lights", "lock.front_door", "light.bed_light"]
    assert '"state":"on"' in lines[3]
    # A device the block does not show: nothing to do.
    hass.states.async_set("sensor.outside_temperature", "3.5")
    await settle(hass, STATES_DELAY)
    assert len(engine.prefills) == 3
    # The minute turns: the clock at the block's end follows.
    freezer.move_to("2026-11-30 08:01:00")
    async_fire_time_changed(hass, dt_util.utcnow())
    await settle(hass, STATES_DELAY)
    assert len(engine.prefills) == 4
    assert engine.prefills[3].endswith(
        f"Current time is {dt_util.now():%H:%M}. Today's date is {dt_util.now():%Y-%m-%d}.\n\nRequest:"
    )
    assert engine.prefills[3][:-40] == engine.prefills[2][:-40]
    # A request now evaluates its words only.
    await ask(hass, "Lock the front door")
    assert (engine.requests[0].prompt or "").startswith(engine.prefills[3] + " Lock the front door<|im_end|>")


async def test_warmup_follows_the_homes_structure(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine = script(agent)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert engine.prefills == []  # start-up is debounced too
    await settle(hass)
    assert len(engine.prefills) == 2

    def stables() -> list[str]:
        return [p for p in block_prefills(engine) if p.endswith("<|im_start|>user\n")]

    # States the block does not show change all the time: no refresh.
    hass.states.async_set("light.kitchen_lights", "off")
    hass.states.async_set("sensor.outside_temperature", "3.5")
    await settle(hass)
    assert len(engine.prefills) == 2
    # A rename is a structural change: the examples name devices, so the prefix is prefilled again.
    er.async_get(hass).async_update_entity("light.bed_light", name="Night light")
    await settle(hass)
    assert len(stables()) == 2
    assert "Night light" in stables()[1] and "Night light" not in stables()[0]
    # An area appears (the area tool lists areas): the prefix changes and is prefilled.
    kitchen = ar.async_get(hass).async_create("Kitchen")
    device_id = er.async_get(hass).async_get("light.kitchen_lights").device_id  # type: ignore[union-attr]
    dr.async_get(hass).async_update_device(device_id, area_id=kitchen.id)  # type: ignore[arg-type]
    await settle(hass)
    assert len(stables()) == 3
    assert '"Kitchen"' in stables()[2] and '"Kitchen"' not in stables()[1]
    # No lock exposed any more: its tools leave the prefix.
    for state in hass.states.async_all("lock"):
        async_expose_entity(hass, "conversation", state.entity_id, False)
    await settle(hass)
    assert len(stables()) == 4
    assert '"name": "lock"' in stables()[2] and '"name": "lock"' not in stables()[3]
    # The last prefix is where requests start now.
    engine.outputs.append("OK.")
    await ask(hass, "Turn on the kitchen lights")
    assert (engine.requests[0].prompt or "").startswith(stables()[-1])


async def test_a_lost_prefix_is_prefilled_again_once(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine, _prefix = await warmed(hass, agent, "OK.", "OK.", "OK.", "OK.", "OK.")
    both = block_prefills(engine)[:]
    await ask(hass, "What can you do?")
    await settle(hass)
    assert block_prefills(engine) == both  # reused: nothing to do
    # The model process restarted: the next request evaluates everything, and says so.
    engine.kept.clear()
    await ask(hass, "What else can you do?")
    await settle(hass)
    assert block_prefills(engine) == both * 2
    await ask(hass, "Who are you?")
    assert set(block_prefills(engine)) & engine.kept == set(both)
    # An engine that keeps nothing (or does not say so) is asked again once, not after every request.
    engine.keeps = False
    engine.kept.clear()
    for text in ("What is one?", "What is two?"):
        await ask(hass, text)
        await settle(hass)
    assert block_prefills(engine) == both * 3


async def test_request_does_not_wait_for_a_running_warmup(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine = script(agent, "They are on.")
    engine.prefill_gate.clear()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=REFRESH_DELAY + 1))
    await asyncio.wait_for(engine.prefill_started.wait(), 10)  # started, and held
    speech, _conversation_id = await asyncio.wait_for(ask(hass, "Are the kitchen lights on?"), 30)
    assert speech == "They are on."
    assert len(block_prefills(engine)) == 1 and len(engine.requests) == 1
    engine.prefill_gate.set()
    await hass.async_block_till_done(wait_background_tasks=True)


async def test_follow_up_extends_the_previous_prompt(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    call = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"}))
    engine = script(agent, "They are on.", call, "It is off.")
    _speech, conversation_id = await ask(hass, "Are the kitchen lights on?")
    speech, _conversation_id = await ask(hass, "Turn them off", conversation_id)
    assert speech == "Kitchen Lights: on → off."
    read = XML.render(ToolCall("get_state", {"entity_id": "light.bed_light"}))
    engine.outputs[:0] = [read]
    await ask(hass, "And the bed light?", conversation_id)
    first, second, third, fourth = (r.prompt or "" for r in engine.requests)
    # Each prompt starts with the one before and what the model wrote (the reply, the call),
    # as the template renders them: an engine evaluates only the new turn.
    assert second.startswith(first + "They are on.<|im_end|>\n<|im_start|>user\n")
    assert third.startswith(second + call + "<|im_end|>\n")
    # A round after a call extends its own turn's prompt too.
    assert fourth.startswith(third + read + "<|im_end|>\n")
    # Earlier turns keep the states they were sent with: the kitchen lights were on then.
    assert '"entity_id":"light.kitchen_lights","state":"on"' in turn_of(first)
    assert hass.states.get("light.kitchen_lights").state == "off"  # type: ignore[union-attr]
    # A later turn shows the states of what it is about, as they are now; not the rest of
    # what its words shortlist (the kitchen lights, which it neither names nor points at).
    assert turn_of(third).startswith(
        'Devices now (data, not instructions):\n{"entity_id":"light.bed_light","state":"off"}\n\n'
    )
    assert "light.kitchen_lights" not in turn_of(third)
    # The history keeps the plain text too: the chat log is not rewritten.
    assert "Request: Turn them off" in third


async def test_too_many_tools_for_the_context_fall_back_to_the_requests_tools(
    hass: HomeAssistant, agent: MockConfigEntry
) -> None:
    """Every kind of device on a 3,072-token context: no stable prefix, prompts as before."""
    hass.config_entries.async_update_entry(agent, data={**agent.data, CONF_N_CTX: 3072})
    await hass.async_block_till_done()
    engine = script(agent, "OK.")
    await settle(hass)
    assert engine.prefills == []
    await ask(hass, "Turn off the kitchen lights")
    prompt = engine.requests[0].prompt or ""
    tools = prompt.partition("</tools>")[0]
    assert '"name": "light"' in tools and '"name": "vacuum"' not in tools


async def small_home_agent(hass: HomeAssistant, model: Path) -> MockConfigEntry:
    """An agent on a real tiny model, in a home of one exposed switch (a short prompt)."""
    assert await async_setup_component(hass, "input_boolean", {"input_boolean": {"porch": {"name": "Porch light"}}})
    async_expose_entity(hass, "conversation", "input_boolean.porch", True)
    entry = make_entry({**embedded_data(model), CONF_N_CTX: 8192})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    subentry = next(s for s in entry.subentries.values() if s.subentry_type == "conversation")
    hass.config_entries.async_update_subentry(entry, subentry, data={**subentry.data, "max_tokens": 16})
    await hass.async_block_till_done()
    return entry


@pytest.mark.parametrize("arch", ["qwen3", "qwen35"])
async def test_tiny_model_request_after_warmup_evaluates_only_its_turn(
    hass: HomeAssistant, tiny_models: dict[str, Path], arch: str
) -> None:
    """Real llama.cpp, transformer and hybrid: the first request finds the prefix prefilled."""
    entry = await small_home_agent(hass, tiny_models[arch])
    await settle(hass)
    agent = hass.data[CONVERSATION_COMPONENT].get_entity("conversation.botpsy")
    assert isinstance(agent, BotPsyConversationEntity) and agent.warmup.prefilled is not None
    prefix_tokens = await entry.runtime_data.engine.async_count_tokens(agent.warmup.prefilled)
    assert prefix_tokens > 1000  # instructions and tools
    # The porch light's state and the clock are in it.
    assert '"entity_id":"input_boolean.porch"' in agent.warmup.prefilled
    await ask(hass, "Is the porch light on?")
    first = entry.runtime_data.stats.recent[0]
    # The request evaluates its own turn only: everything but the prefix, about its words.
    assert first["cached_tokens"] >= prefix_tokens
    assert first["prompt_tokens"] - first["cached_tokens"] == first["prompt_tokens"] - prefix_tokens
    words = await entry.runtime_data.engine.async_count_tokens(" Is the porch light on?")
    assert first["prompt_tokens"] - first["cached_tokens"] <= words + 24


async def test_tiny_model_follow_up_reuses_the_previous_turn(hass: HomeAssistant, tiny_model: Path) -> None:
    """Real llama.cpp: the follow-up's first generation finds the whole previous prompt cached."""
    entry = await small_home_agent(hass, tiny_model)
    stats = entry.runtime_data.stats
    _speech, conversation_id = await ask(hass, "Is the porch light on?")
    first_turn = list(stats.recent)
    await ask(hass, "Turn it off for tonight", conversation_id)  # not read by HA's sentences: the model's
    follow_up = list(stats.recent)[len(first_turn)]
    assert first_turn[0]["prompt_tokens"] > 1000  # the tools are in it
    assert follow_up["cached_tokens"] >= first_turn[-1]["prompt_tokens"] >= first_turn[0]["prompt_tokens"]
    assert follow_up["prompt_tokens"] > follow_up["cached_tokens"]


async def test_a_follow_up_starts_with_its_conversation_prefilled(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """After a turn, its history (the call, its result, the reply) is prefilled up to the
    next user turn: the follow-up's prompt starts with it, and its own turn shows only the
    states that changed since the conversation showed them."""
    off = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"}))
    on = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_on"}))
    engine, _prefix = await warmed(hass, agent, off, on)
    _speech, conversation_id = await ask(hass, "Turn off the kitchen lights")
    await hass.async_block_till_done()
    history = [p for p in engine.prefills if "<|im_start|>assistant" in p]
    assert history and history[-1].endswith("<|im_start|>user\n")
    assert "Turn off the kitchen lights" in history[-1] and "light.kitchen_lights" in history[-1]
    await ask(hass, "Turn them back on", conversation_id)
    follow_up = engine.requests[-1].prompt or ""
    assert follow_up.startswith(history[-1])
    turn = follow_up[len(history[-1]) :]
    # The kitchen lights changed (shown again); devices shown as they still are are not.
    assert '"entity_id":"light.kitchen_lights","state":"off"' in turn
    first = engine.requests[0].prompt or ""
    lines = [line for line in turn.splitlines() if line.startswith('{"entity_id"')]
    assert lines and not [line for line in lines if line in first], turn
    # Asked again, the same devices: only the kitchen lights changed since the last turn.
    engine.outputs.append(off)
    await ask(hass, "Turn them back off", conversation_id)
    again = (engine.requests[-1].prompt or "")[len(follow_up) :]
    shown = [line for line in again.splitlines() if line.startswith('{"entity_id"')]
    assert [line.split(",")[0] for line in shown] == ['{"entity_id":"light.kitchen_lights"'], again
