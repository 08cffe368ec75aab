"""BotPsy inside an Assist pipeline (text in, text out), with and without "prefer local"."""

from __future__ import annotations

from typing import Any

from homeassistant.components.assist_pipeline import PipelineEvent, PipelineEventType, PipelineStage
from homeassistant.components.assist_pipeline.pipeline import async_get_pipeline, async_update_pipeline
from homeassistant.components.assist_pipeline.run import PipelineInput, PipelineRun
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from botpsy_runtime.formats import ToolCall
from scripts.testing.scripted import XML, script

from .test_agent import device_states


async def run_text(hass: HomeAssistant, text: str, *, prefer_local: bool) -> dict[str, Any]:
    assert await async_setup_component(hass, "intent", {})
    assert await async_setup_component(hass, "assist_pipeline", {})
    pipeline = async_get_pipeline(hass)
    await async_update_pipeline(
        hass, pipeline, conversation_engine="conversation.botpsy", prefer_local_intents=prefer_local
    )
    pipeline = async_get_pipeline(hass, pipeline.id)
    events: list[PipelineEvent] = []
    with chat_session.async_get_chat_session(hass) as session:
        run = PipelineRun(hass, Context(), pipeline, PipelineStage.INTENT, PipelineStage.INTENT, events.append)
        pipeline_input = PipelineInput(run=run, session=session, intent_input=text)
        await pipeline_input.validate()
        await pipeline_input.execute()
    end = next(e for e in events if e.type is PipelineEventType.INTENT_END)
    assert end.data is not None
    return end.data


def speech(data: dict[str, Any]) -> str:
    return str(data["intent_output"]["response"]["speech"]["plain"]["speech"])


async def test_pipeline_runs_the_agent(hass: HomeAssistant, model_agent: MockConfigEntry) -> None:
    call = XML.render(ToolCall("light", {"entity_id": "light.kitchen_lights", "action": "turn_off"}))
    engine = script(model_agent, call)
    data = await run_text(hass, "Turn off the kitchen lights", prefer_local=False)
    assert speech(data) == "Kitchen Lights: on → off."
    assert data["processed_locally"] is False
    assert len(engine.requests) == 1
    assert hass.states.get("light.kitchen_lights").state == "off"  # type: ignore[union-attr]


async def test_the_agent_does_has_own_sentences_without_the_model(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """Without the pipeline's "prefer handling commands locally", the agent still does
    what HA's sentences read exactly without its model, and reports it itself."""
    engine = script(agent)
    data = await run_text(hass, "Turn off the kitchen lights", prefer_local=False)
    assert speech(data) == "Kitchen Lights: on → off."
    assert data["processed_locally"] is False
    assert engine.requests == []


async def test_prefer_local_handles_plain_commands_without_the_model(
    hass: HomeAssistant, agent: MockConfigEntry
) -> None:
    engine = script(agent)
    data = await run_text(hass, "turn off the kitchen lights", prefer_local=True)
    assert data["processed_locally"] is True
    assert engine.requests == []
    assert hass.states.get("light.kitchen_lights").state == "off"  # type: ignore[union-attr]


async def test_questions_keep_the_conversation_open(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """A voice satellite listens for the answer to every question the agent asks, and
    only then: the confirmation of a risky action, which of several devices is meant, and
    a question of the model's own."""
    # The unlock and the last request are HA's own sentences: no model output for them.
    script(agent, "Which lights do you mean?")
    asked = await run_text(hass, "Unlock the front door", prefer_local=False)
    assert speech(asked).endswith("do you want me to unlock Front Door?")
    assert asked["intent_output"]["continue_conversation"] is True
    which = await run_text(hass, "Turn on the light", prefer_local=False)
    assert speech(which).startswith("Which light do you mean: ")
    assert which["intent_output"]["continue_conversation"] is True
    question = await run_text(hass, "Make the kitchen lights cosy", prefer_local=False)
    assert speech(question) == "Which lights do you mean?"
    assert question["intent_output"]["continue_conversation"] is True
    done = await run_text(hass, "Turn off the kitchen lights", prefer_local=False)
    assert speech(done) == "Kitchen Lights: on → off."
    assert done["intent_output"]["continue_conversation"] is False
    assert hass.states.get("lock.front_door").state == "locked"  # type: ignore[union-attr]


async def test_prefer_local_leaves_the_rest_to_the_agent(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    engine = script(
        agent,
        XML.render(ToolCall("light", {"entity_id": "light.bed_light", "action": "turn_on", "brightness_pct": 80})),
    )
    data = await run_text(hass, "it is too dark by the bed", prefer_local=True)
    assert data["processed_locally"] is False
    assert len(engine.requests) == 1
    assert speech(data).startswith("Bed Light: off → on")


async def test_reply_streams_into_the_pipeline(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """Text arrives in pieces as it is generated, so TTS can start before the end."""
    script(agent, "Which light do you mean, the kitchen or the bedroom one?")
    assert await async_setup_component(hass, "assist_pipeline", {})
    events: list[PipelineEvent] = []
    pipeline = async_get_pipeline(hass)
    await async_update_pipeline(hass, pipeline, conversation_engine="conversation.botpsy")
    with chat_session.async_get_chat_session(hass) as session:
        run = PipelineRun(
            hass, Context(), async_get_pipeline(hass, pipeline.id), PipelineStage.INTENT, PipelineStage.INTENT,
            events.append,
        )  # fmt: skip
        pipeline_input = PipelineInput(run=run, session=session, intent_input="Make the kitchen lights cosy")
        await pipeline_input.validate()
        await pipeline_input.execute()
    pieces = [
        e.data["chat_log_delta"]["content"]
        for e in events
        if e.type is PipelineEventType.INTENT_PROGRESS and e.data and "content" in e.data.get("chat_log_delta", {})
    ]
    assert len(pieces) > 3
    assert "".join(pieces) == "Which light do you mean, the kitchen or the bedroom one?"


async def test_real_model_through_pipeline_process_and_plan(hass: HomeAssistant, agent: MockConfigEntry) -> None:
    """Real llama.cpp on the tiny model: whatever it does is valid, and reported as it happened."""
    before = device_states(hass)
    plan = await hass.services.async_call(
        "botpsy", "plan", {"entity_id": "conversation.botpsy", "text": "Turn off the kitchen lights"},
        blocking=True, return_response=True,
    )  # fmt: skip
    assert plan is not None and all(call["valid"] for call in plan["calls"])  # type: ignore[union-attr]
    assert device_states(hass) == before

    response = await hass.services.async_call(
        "botpsy", "process", {"entity_id": "conversation.botpsy", "text": "Turn off the kitchen lights"},
        blocking=True, return_response=True,
    )  # fmt: skip
    assert response is not None
    after = device_states(hass)
    changed = {e for e in after if after[e] != before.get(e)}
    reported = {c["entity_id"] for c in response["changes"]}  # type: ignore[union-attr]
    assert {e for e in reported if before.get(e) != after.get(e)} == changed

    data = await run_text(hass, "Is the bed light on?", prefer_local=False)
    assert isinstance(speech(data), str)
