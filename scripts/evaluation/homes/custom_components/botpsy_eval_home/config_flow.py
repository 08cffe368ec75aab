"""Config flow stub: HA imports one to set up any config entry; homes come from the loader."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import ConfigFlow, ConfigFlowResult

from .const import DOMAIN


class EvalHomeConfigFlow(ConfigFlow, domain=DOMAIN):
    """Nothing to configure by hand: the home loader creates the entries."""

    VERSION = 1

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Refuse: test homes are loaded by scripts/evaluation/home_loader.py."""
        return self.async_abort(reason="not_supported")
