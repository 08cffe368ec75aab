"""The bench's model-path sections measure the model, not HA's own sentences."""

from __future__ import annotations

from pathlib import Path

from custom_components.botpsy.const import CONF_PREFER_LOCAL_INTENTS
from scripts.benchmark.__main__ import home_with_agent
from scripts.benchmark.e2e import EXPECT, REQUEST
from scripts.benchmark.homes import DEMO_HOME
from scripts.evaluation.home_loader import ensure_homes_on_path
from scripts.testing.tiny_gguf import write_tiny_model


async def test_the_bench_request_reaches_the_model_once_local_intents_are_off(tmp_path: Path) -> None:
    """HA's sentences read the bench's request ("Turn off the kitchen light") and answer it
    without a generation; the demo, scaling and remote sections turn that off first."""
    ensure_homes_on_path()
    model = write_tiny_model(tmp_path / "tiny.gguf")
    async with home_with_agent(DEMO_HOME, model, None, 1) as bench:
        local = await bench.async_ask(REQUEST, expect=EXPECT)
        assert local.ok and not local.generations  # done by HA's sentences
        await bench.async_model_path_only()
        entry = bench.hass.config_entries.async_get_entry(bench.entry_id)
        assert entry is not None
        agents = [s for s in entry.subentries.values() if s.subentry_type == "conversation"]
        assert agents and all(s.data[CONF_PREFER_LOCAL_INTENTS] is False for s in agents)
        await bench.async_reset()
        modelled = await bench.async_ask(REQUEST, expect=EXPECT)
        assert modelled.generations  # the (random-weight) model was asked
