"""The conversation agent answering through real llama.cpp (embedded) and llama-server."""

from __future__ import annotations

import os
from pathlib import Path
import signal
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session, intent
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from botpsy_runtime.embedded import EmbeddedEngine

from .conftest import embedded_data, make_entry

AGENT = "conversation.botpsy"


async def converse(
    hass: HomeAssistant, text: str, conversation_id: str | None = None
) -> conversation.ConversationResult:
    return await conversation.async_converse(hass, text, conversation_id, Context(), agent_id=AGENT)


def assistant_replies(hass: HomeAssistant, conversation_id: str) -> list[str]:
    with (
        chat_session.async_get_chat_session(hass, conversation_id) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        return [c.content or "" for c in chat_log.content if isinstance(c, conversation.AssistantContent)]


async def test_agent_entity_named_from_subentry(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    state = hass.states.get(AGENT)
    assert state is not None
    assert state.attributes["friendly_name"] == "BotPsy"
    entity = hass.data["entity_components"]["conversation"].get_entity(AGENT)
    assert entity.supports_streaming


async def test_embedded_agent_replies_and_keeps_context(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    engine = embedded_entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine)
    result = await converse(hass, "Who are you?")
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    speech = result.response.speech["plain"]["speech"]
    timings = engine.last_timings
    assert timings is not None and timings.decoded_tokens > 0
    assert assistant_replies(hass, result.conversation_id)[-1] == speech
    first_prompt = timings.prompt_tokens

    # The second turn carries the first in its prompt; the shared prefix is reused.
    again = await converse(hass, "What else can you do?", result.conversation_id)
    assert again.conversation_id == result.conversation_id
    second = engine.last_timings
    assert second is not None
    assert second.prompt_tokens > first_prompt
    assert second.cached_tokens > 0
    assert len(assistant_replies(hass, result.conversation_id)) >= 2
    # The engine's sensors follow its requests.
    assert hass.states.get("sensor.tiny_requests_served").state == "2"  # type: ignore[union-attr]
    assert float(hass.states.get("sensor.tiny_prompt_tokens_reused").state) > 0  # type: ignore[union-attr]
    assert float(hass.states.get("sensor.tiny_decode_speed").state) > 0  # type: ignore[union-attr]
    assert hass.states.get("sensor.tiny_last_error").state == "unknown"  # type: ignore[union-attr]


async def test_remote_agent_replies(hass: HomeAssistant, remote_data: dict[str, Any]) -> None:
    entry = make_entry(remote_data)
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    result = await converse(hass, "What can you do?")
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    timings = entry.runtime_data.engine.last_timings  # type: ignore[attr-defined]
    assert timings is not None and timings.decoded_tokens > 0 and timings.prompt_tokens > 0
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_worker_killed_gives_an_error_reply_then_recovers(
    hass: HomeAssistant, embedded_entry: MockConfigEntry
) -> None:
    engine = embedded_entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine)
    assert engine.pid is not None
    os.kill(engine.pid, signal.SIGKILL)
    await hass.async_block_till_done()
    result = await converse(hass, "What can you do?")
    # The dead worker is noticed and a new one started for this request.
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert engine.pid is not None


async def test_engine_error_is_a_clear_reply_and_a_sensor(hass: HomeAssistant, embedded_entry: MockConfigEntry) -> None:
    engine = embedded_entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine)
    await engine.async_unload()
    result = await converse(hass, "What can you do?")
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "The model failed to answer: The model is not loaded" in result.response.speech["plain"]["speech"]
    assert hass.states.get("sensor.tiny_last_error").state == "The model is not loaded"  # type: ignore[union-attr]


async def test_an_unavailable_engine_is_logged_once_and_its_return_once(
    hass: HomeAssistant, embedded_entry: MockConfigEntry, caplog: pytest.LogCaptureFixture
) -> None:
    engine = embedded_entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine)
    await engine.async_unload()
    for _ in range(3):
        await converse(hass, "What can you do?")
    assert len([r for r in caplog.records if "engine failed a request" in r.message and r.levelname == "ERROR"]) == 1
    await engine.async_load()
    await converse(hass, "What can you do?")
    assert len([r for r in caplog.records if "serves requests again" in r.message]) == 1


async def test_model_without_chat_template_uses_a_fallback(
    hass: HomeAssistant, tiny_model: Path, tmp_path: Path
) -> None:
    """Base models (like the gemma-3-270m stand-in) ship no template: ChatML is used."""
    path = tmp_path / "no-template.gguf"
    path.write_bytes(tiny_model.read_bytes().replace(b"tokenizer.chat_template", b"tokenizer.chat_templatX"))
    entry = make_entry(embedded_data(path))
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.runtime_data.engine.model_info is not None
    assert entry.runtime_data.engine.model_info.chat_template is None
    result = await converse(hass, "What can you do?")
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert await hass.config_entries.async_unload(entry.entry_id)
