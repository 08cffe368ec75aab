"""Prompt prefix reuse: a stable prefix prefilled in the background, follow-ups that extend the last prompt.

Every request of an agent starts with the same instructions and tools while the home's
structure and the agent's options stay the same; that prefix is prefilled in the
background (at start-up and after structural changes, never after state changes), and
each turn's prompt starts with the previous prompt and the model's output, so an engine
evaluates only what is new.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from homeassistant.components.conversation.const import DATA_COMPONENT as CONVERSATION_COMPONENT
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar, device_registry as dr, entity_registry as er
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.botpsy.const import CONF_N_CTX
from custom_components.botpsy.conversation import BotPsyConversationEntity
from custom_components.botpsy.core.formats import ToolCall
from custom_components.botpsy.prefix_warmup import REFRESH_DELAY

from .conftest import embedded_data, make_entry
from .scripted import XML, ScriptedEngine, script
from .test_agent import ask


async def settle(hass: HomeAssistant) -> None:
    """Let a debounced refresh fire and run."""
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=REFRESH_DELAY + 1))
    await hass.async_block_till_done(wait_background_tasks=True)


def turn_of(prompt: str) -> str:
    """The last user turn of a prompt."""
    return prompt.rpartition("<|im_start|>user\n")[2]


async def warmed(hass: HomeAssistant, agent: MockConfigEntry, *outputs: str) -> tuple[ScriptedEngine, str]:
    engine = script(agent, *outputs)
    await settle(hass)
    assert len(engine.prefills) == 1
    return engine, engine.prefills[0]


async def test_requests_start_with_the_prefilled_prefix(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine, prefix = await warmed(hass, agent, "They are on.", "It is closed.")
    await ask(hass, "Are the kitchen lights on?")
    await ask(hass, "Is the garage door open?")
    first, second = (r.prompt or "" for r in engine.requests)
    # Instructions and every tool, up to where the user's turn begins: the same for both.
    assert prefix.endswith("<|im_start|>user\n") and "</tools>" in prefix and "never instructions" in prefix
    assert first.startswith(prefix) and second.startswith(prefix)
    assert first[len(prefix) :].startswith("Current time is ") and second[len(prefix) :].startswith("Current time is ")
    # Nothing in it changes with the request or the time: no entity, no state, no clock.
    assert "light.kitchen_lights" not in prefix and '"state"' not in prefix and "Current time" not in prefix
    # The turn carries the clock and the shortlisted devices' states, then the request.
    turn = turn_of(first)
    assert turn.startswith("Current time is ")
    assert turn.index("Current time") < turn.index("Devices now") < turn.index("Request: Are the kitchen lights on?")
    assert '{"entity_id":"light.kitchen_lights","state":"on"' in turn  # the name is the id's words
    # The grammar still allows only the shortlisted targets.
    assert "light.kitchen_lights" in (first_grammar := engine.requests[0].grammar or "")
    assert "cover.garage_door" not in first_grammar
    assert "cover.garage_door" in (engine.requests[1].grammar or "")


async def test_warmup_follows_the_homes_structure_not_its_states(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine = script(agent)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert engine.prefills == []  # start-up is debounced too
    await settle(hass)
    assert len(engine.prefills) == 1
    # States change all the time: no refresh.
    hass.states.async_set("light.kitchen_lights", "off")
    hass.states.async_set("sensor.outside_temperature", "3.5")
    await settle(hass)
    assert len(engine.prefills) == 1
    # A rename is a structural change: the examples name devices, so the prefix is prefilled again.
    er.async_get(hass).async_update_entity("light.bed_light", name="Night light")
    await settle(hass)
    assert len(engine.prefills) == 2
    assert "Night light" in engine.prefills[1] and "Night light" not in engine.prefills[0]
    del engine.prefills[0]
    # An area appears (the area tool lists areas): the prefix changes and is prefilled.
    kitchen = ar.async_get(hass).async_create("Kitchen")
    device_id = er.async_get(hass).async_get("light.kitchen_lights").device_id  # type: ignore[union-attr]
    dr.async_get(hass).async_update_device(device_id, area_id=kitchen.id)  # type: ignore[arg-type]
    await settle(hass)
    assert len(engine.prefills) == 2
    assert '"Kitchen"' in engine.prefills[1] and '"Kitchen"' not in engine.prefills[0]
    # No lock exposed any more: its tools leave the prefix.
    for state in hass.states.async_all("lock"):
        async_expose_entity(hass, "conversation", state.entity_id, False)
    await settle(hass)
    assert len(engine.prefills) == 3
    assert '"name": "lock"' in engine.prefills[1] and '"name": "lock"' not in engine.prefills[2]
    # The last prefix is where requests start now.
    engine.outputs.append("OK.")
    await ask(hass, "Turn on the kitchen lights")
    assert (engine.requests[0].prompt or "").startswith(engine.prefills[-1])


async def test_a_lost_prefix_is_prefilled_again_once(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine, prefix = await warmed(hass, agent, "OK.", "OK.", "OK.", "OK.", "OK.")
    await ask(hass, "What can you do?")
    await settle(hass)
    assert engine.prefills == [prefix]  # reused: nothing to do
    # The model process restarted: the next request evaluates everything, and says so.
    engine.kept.clear()
    await ask(hass, "What else can you do?")
    await settle(hass)
    assert engine.prefills == [prefix, prefix]
    await ask(hass, "Who are you?")
    assert engine.kept == {prefix}
    # An engine that keeps nothing (or does not say so) is asked again once, not after every request.
    engine.keeps = False
    engine.kept.clear()
    for text in ("What is one?", "What is two?"):
        await ask(hass, text)
        await settle(hass)
    assert engine.prefills == [prefix, prefix, prefix]


async def test_request_does_not_wait_for_a_running_warmup(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine = script(agent, "They are on.")
    engine.prefill_gate.clear()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(seconds=REFRESH_DELAY + 1))
    await asyncio.wait_for(engine.prefill_started.wait(), 10)  # started, and held
    speech, _conversation_id = await asyncio.wait_for(ask(hass, "Are the kitchen lights on?"), 30)
    assert speech == "They are on."
    assert len(engine.prefills) == 1 and len(engine.requests) == 1
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
    assert '"entity_id":"light.kitchen_lights","state":"off"' in turn_of(third)
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
    await ask(hass, "Is the porch light on?")
    first = entry.runtime_data.stats.recent[0]
    # The request evaluates its own turn only: everything but the prefix.
    assert first["cached_tokens"] >= prefix_tokens
    assert first["prompt_tokens"] - first["cached_tokens"] == first["prompt_tokens"] - prefix_tokens


async def test_tiny_model_follow_up_reuses_the_previous_turn(hass: HomeAssistant, tiny_model: Path) -> None:
    """Real llama.cpp: the follow-up's first generation finds the whole previous prompt cached."""
    entry = await small_home_agent(hass, tiny_model)
    stats = entry.runtime_data.stats
    _speech, conversation_id = await ask(hass, "Is the porch light on?")
    first_turn = list(stats.recent)
    await ask(hass, "Turn it off", conversation_id)
    follow_up = list(stats.recent)[len(first_turn)]
    assert first_turn[0]["prompt_tokens"] > 1000  # the tools are in it
    assert follow_up["cached_tokens"] >= first_turn[-1]["prompt_tokens"] >= first_turn[0]["prompt_tokens"]
    assert follow_up["prompt_tokens"] > follow_up["cached_tokens"]
