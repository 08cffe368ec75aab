"""Diagnostics: engine, model, options and the last request's figures (API key redacted)."""

from __future__ import annotations

import dataclasses
from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.core import HomeAssistant

from . import BotPsyConfigEntry
from .const import CONF_API_KEY

TO_REDACT = {CONF_API_KEY}


async def async_get_config_entry_diagnostics(hass: HomeAssistant, entry: BotPsyConfigEntry) -> dict[str, Any]:
    """The entry's engine, model, agents and recent figures, its API key redacted."""
    engine = entry.runtime_data.engine
    info = engine.model_info
    health = await engine.async_health()
    timings = getattr(engine, "last_timings", None)
    model = dataclasses.asdict(info) if info else None
    if model and model.get("chat_template"):
        model["chat_template"] = f"<{len(model['chat_template'])} characters>"
    return {
        "entry": {"title": entry.title, "data": async_redact_data(dict(entry.data), TO_REDACT)},
        "agents": {s.title: dict(s.data) for s in entry.subentries.values()},
        "engine": {
            "type": type(engine).__name__,
            "supports_grammar": engine.supports_grammar,
            "health": dataclasses.asdict(health),
            "last_timings": timings.as_dict() if timings else None,
            "requests": entry.runtime_data.stats.requests,
            "recent": list(entry.runtime_data.stats.recent),
            "last_error": entry.runtime_data.stats.last_error,
        },
        "model": model,
    }
