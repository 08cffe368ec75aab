"""Faults inside a real Home Assistant: the model file removed while loaded, Home Assistant
stopped mid-answer. Each ends in a clear answer or a clean stop, never a hang."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
import os
from pathlib import Path
import shutil
import signal

from homeassistant.components import conversation
from homeassistant.core import Context, CoreState, HomeAssistant
from homeassistant.helpers import intent
import pytest

from botpsy_runtime.embedded import EmbeddedEngine
from botpsy_runtime.engine import GenerateEvent, GenerateRequest, TextDelta

from .conftest import embedded_data, make_entry

AGENT = "conversation.botpsy"


async def converse(hass: HomeAssistant) -> conversation.ConversationResult:
    return await conversation.async_converse(hass, "What can you do?", None, Context(), agent_id=AGENT)


async def test_model_file_removed_while_loaded(hass: HomeAssistant, tiny_model: Path, tmp_path: Path) -> None:
    """llama.cpp keeps the deleted file mapped: requests are served. A worker that must
    start again cannot, and the user is told why; with the file back, requests are served."""
    model = tmp_path / "model.gguf"
    shutil.copyfile(tiny_model, model)
    entry = make_entry(embedded_data(model))
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    engine = entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine) and engine.pid is not None
    model.unlink()
    assert (await converse(hass)).response.response_type is intent.IntentResponseType.ACTION_DONE
    os.kill(engine.pid, signal.SIGKILL)
    await hass.async_block_till_done()
    result = await converse(hass)
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert result.response.speech["plain"]["speech"] == (
        f"The model failed to answer: llama.cpp could not load the model: Model path does not exist: {model}"
    )
    shutil.copyfile(tiny_model, model)
    assert (await converse(hass)).response.response_type is intent.IntentResponseType.ACTION_DONE
    assert await hass.config_entries.async_unload(entry.entry_id)


async def test_home_assistant_stopped_mid_answer(hass: HomeAssistant, embedded_entry: object) -> None:
    """The request ends, the stop completes, and the worker does not outlive Home Assistant."""
    engine = embedded_entry.runtime_data.engine  # type: ignore[attr-defined]
    assert isinstance(engine, EmbeddedEngine)
    pid = engine.pid
    assert pid is not None
    generate = engine.generate
    stopping: list[asyncio.Task[None]] = []

    async def stop_on_first_text(request: GenerateRequest) -> AsyncIterator[GenerateEvent]:
        async for event in generate(request):
            yield event
            if isinstance(event, TextDelta) and not stopping:
                stopping.append(hass.async_create_background_task(hass.async_stop(), "stop"))

    engine.generate = stop_on_first_text  # type: ignore[method-assign]
    async with asyncio.timeout(60):  # bounds for the test: neither the request nor the stop hangs
        result = await converse(hass)
        assert stopping
        await stopping[0]
    assert hass.state is CoreState.stopped
    speech = result.response.speech["plain"]["speech"]
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert speech == "The model failed to answer: The model was unloaded while it was answering"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_model_file_replaced_while_loaded(
    hass: HomeAssistant, tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    """A file overwritten in place (as `cp other.gguf model.gguf` does) is loaded again,
    template and all, before the next request: never the old model reading new bytes."""
    model = tmp_path / "model.gguf"
    shutil.copyfile(tiny_models["qwen3"], model)
    entry = make_entry(embedded_data(model))
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    engine = entry.runtime_data.engine
    assert isinstance(engine, EmbeddedEngine) and engine.model_info is not None
    pid = engine.pid
    assert engine.model_info.architecture == "qwen3"
    shutil.copyfile(tiny_models["gemma3"], model)
    assert (await converse(hass)).response.response_type is intent.IntentResponseType.ACTION_DONE
    assert engine.pid not in (None, pid)
    assert engine.model_info is not None and engine.model_info.architecture == "gemma3"
    # A replacement that llama.cpp refuses is a clear error; the file fixed, it serves again.
    model.write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    result = await converse(hass)
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert result.response.speech["plain"]["speech"].startswith("The model failed to answer: ")
    shutil.copyfile(tiny_models["qwen3"], model)
    assert (await converse(hass)).response.response_type is intent.IntentResponseType.ACTION_DONE
    assert engine.model_info is not None and engine.model_info.architecture == "qwen3"
    assert await hass.config_entries.async_unload(entry.entry_id)
