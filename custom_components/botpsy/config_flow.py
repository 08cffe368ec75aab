"""Config flow: choose where the model runs, check it works, then add agents as subentries."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
import os
from pathlib import Path
from typing import Any

from homeassistant.config_entries import (
    ConfigEntry,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import llm
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.selector import (
    BooleanSelector,
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    TemplateSelector,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
import probatio

from botpsy_runtime import download
from botpsy_runtime.embedded import default_threads
from botpsy_runtime.engine_builds import LOCAL_DIR, EngineInstallError
from botpsy_runtime.errors import AuthenticationError, EngineError, EngineUnavailableError, ModelLoadError
from botpsy_runtime.gguf_metadata import read_gguf_metadata
from botpsy_runtime.remote import RemoteEngine, RemoteOptions

from .const import (
    CONF_API_KEY,
    CONF_CONFIRM_RISKY,
    CONF_ENGINE,
    CONF_HF_FILE,
    CONF_HF_REPO,
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_MAX_TOOL_ROUNDS,
    CONF_MODEL,
    CONF_MODEL_PATH,
    CONF_N_BATCH,
    CONF_N_CTX,
    CONF_N_THREADS,
    CONF_PREFER_LOCAL_INTENTS,
    CONF_PROMPT,
    CONF_TEMPERATURE,
    CONF_URL,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONFIRM_RISKY,
    DEFAULT_CONVERSATION_NAME,
    DEFAULT_HF_FILE,
    DEFAULT_HF_REPO,
    DEFAULT_MAX_HISTORY,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TOOL_ROUNDS,
    DEFAULT_N_BATCH,
    DEFAULT_N_CTX,
    DEFAULT_PREFER_LOCAL_INTENTS,
    DEFAULT_SUBENTRIES,
    DEFAULT_TEMPERATURE,
    DOMAIN,
    ENGINE_EMBEDDED,
    ENGINE_REMOTE,
    LOGGER,
    MODELS_DIR,
)
from .engine_install import async_engine_installed, async_ensure_engine


def _engine_fields(defaults: Mapping[str, Any]) -> dict[Any, Any]:
    """Threads, context and batch size: good defaults for a 4-core hub."""
    return {
        probatio.Optional(CONF_N_THREADS, default=defaults.get(CONF_N_THREADS, default_threads())): NumberSelector(
            NumberSelectorConfig(min=1, max=64, step=1, mode=NumberSelectorMode.BOX)
        ),
        probatio.Optional(CONF_N_CTX, default=defaults.get(CONF_N_CTX, DEFAULT_N_CTX)): NumberSelector(
            NumberSelectorConfig(min=512, max=131072, step=512, mode=NumberSelectorMode.BOX)
        ),
        probatio.Optional(CONF_N_BATCH, default=defaults.get(CONF_N_BATCH, DEFAULT_N_BATCH)): NumberSelector(
            NumberSelectorConfig(min=32, max=2048, step=32, mode=NumberSelectorMode.BOX)
        ),
    }


def _embedded_schema(defaults: Mapping[str, Any]) -> probatio.Schema:
    return probatio.Schema(
        {
            probatio.Optional(
                CONF_MODEL_PATH, description={"suggested_value": defaults.get(CONF_MODEL_PATH)}
            ): TextSelector(),
            probatio.Optional(CONF_HF_REPO, default=defaults.get(CONF_HF_REPO, DEFAULT_HF_REPO)): TextSelector(),
            probatio.Optional(CONF_HF_FILE, default=defaults.get(CONF_HF_FILE, DEFAULT_HF_FILE)): TextSelector(),
            **_engine_fields(defaults),
        }
    )


def _remote_schema(defaults: Mapping[str, Any]) -> probatio.Schema:
    return probatio.Schema(
        {
            probatio.Required(CONF_URL, default=defaults.get(CONF_URL, "http://localhost:8080")): TextSelector(
                TextSelectorConfig(type=TextSelectorType.URL)
            ),
            probatio.Optional(CONF_API_KEY, description={"suggested_value": defaults.get(CONF_API_KEY)}): TextSelector(
                TextSelectorConfig(type=TextSelectorType.PASSWORD)
            ),
            probatio.Optional(CONF_MODEL, description={"suggested_value": defaults.get(CONF_MODEL)}): TextSelector(),
        }
    )


def _ints(data: Mapping[str, Any]) -> dict[str, Any]:
    """Number selectors give floats; the engine wants integers."""
    return {k: int(v) if k in (CONF_N_THREADS, CONF_N_CTX, CONF_N_BATCH) else v for k, v in data.items()}


def _model_file_error(path: str) -> str | None:
    """An error key if `path` is not a readable GGUF, else None (reads the disk)."""
    if not os.path.isfile(path):
        return "model_not_found"
    try:
        read_gguf_metadata(path)
    except ModelLoadError:
        return "model_invalid"
    return None


async def _check_model_file(path: str) -> str | None:
    return await asyncio.to_thread(_model_file_error, path)


class BotPsyConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add a model: on this hub (a GGUF file, or downloaded) or on a remote server."""

    VERSION = 1

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._download_task: asyncio.Task[Path] | None = None
        self._download_error = ""
        self._engine_ready = False
        self._install_task: asyncio.Task[None] | None = None
        self._install_error: BaseException | None = None

    @classmethod
    @callback
    def async_get_supported_subentry_types(cls, config_entry: ConfigEntry) -> dict[str, type[ConfigSubentryFlow]]:
        """Agents are subentries: conversation agents and AI Tasks, one flow for both."""
        return {"conversation": AgentSubentryFlow, "ai_task_data": AgentSubentryFlow}

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask where the model runs: on this hub (embedded) or on a model server (remote)."""
        return self.async_show_menu(step_id="user", menu_options=[ENGINE_EMBEDDED, ENGINE_REMOTE])

    def _create(self, title: str) -> ConfigFlowResult:
        return self.async_create_entry(
            title=title,
            data=self._data,
            subentries=[{**subentry, "unique_id": None} for subentry in DEFAULT_SUBENTRIES],  # type: ignore[typeddict-item]
        )

    async def async_step_embedded(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for a GGUF on this hub, or one to download from Hugging Face; the engine is installed first."""
        if not (self._engine_ready or await async_engine_installed(self.hass)):
            return await self.async_step_install_engine()
        self._engine_ready = True
        errors: dict[str, str] = {}
        if user_input is not None:
            self._data = {CONF_ENGINE: ENGINE_EMBEDDED, **_ints(user_input)}
            if path := user_input.get(CONF_MODEL_PATH, "").strip():
                self._data[CONF_MODEL_PATH] = path
                if (error := await _check_model_file(path)) is None:
                    self._async_abort_entries_match({CONF_MODEL_PATH: path})
                    return self._create(Path(path).name)
                errors[CONF_MODEL_PATH] = error
            elif user_input.get(CONF_HF_REPO) and user_input.get(CONF_HF_FILE):
                return await self.async_step_download()
            else:
                errors["base"] = "model_missing"
        return self.async_show_form(
            step_id="embedded",
            data_schema=self.add_suggested_values_to_schema(_embedded_schema({}), user_input or {}),
            errors=errors,
        )

    async def async_step_install_engine(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """llama-cpp-python is missing: install it (downloaded for HA OS) before anything else."""
        if self._install_task is None:
            self._install_task = self.hass.async_create_background_task(
                async_ensure_engine(self.hass, self.async_update_progress), "BotPsy engine install"
            )
        if not self._install_task.done():
            return self.async_show_progress(
                step_id="install_engine", progress_action="install_engine", progress_task=self._install_task
            )
        task, self._install_task = self._install_task, None
        if (err := task.exception()) is not None:
            self._install_error = err
            return self.async_show_progress_done(next_step_id="install_engine_failed")
        self._engine_ready = True
        return self.async_show_progress_done(next_step_id="embedded")

    async def async_step_install_engine_failed(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """The engine could not be installed: abort, saying why and where a wheel can be placed by hand."""
        err = self._install_error
        return self.async_abort(
            reason=err.reason if isinstance(err, EngineInstallError) else "engine_install",
            description_placeholders={"detail": str(err) or repr(err), "folder": self.hass.config.path(LOCAL_DIR)},
        )

    async def _async_download(self) -> Path:
        repo, name = self._data[CONF_HF_REPO], self._data[CONF_HF_FILE]
        dest = Path(self.hass.config.path(MODELS_DIR, Path(name).name))
        session = async_get_clientsession(self.hass)
        remote = await download.async_resolve(session, download.hf_url(repo, name, endpoint=download.HF_ENDPOINT))

        def progress(done: int, total: int | None) -> None:
            if total:
                self.async_update_progress(done / total)

        path = await download.async_download(session, remote, dest, progress)
        await asyncio.to_thread(read_gguf_metadata, path)
        return path

    async def async_step_download(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Download the model file, showing its progress, then check that it is a GGUF."""
        if self._download_task is None:
            self._download_task = self.hass.async_create_background_task(
                self._async_download(), f"BotPsy download {self._data[CONF_HF_FILE]}"
            )
        if not self._download_task.done():
            return self.async_show_progress(
                step_id="download",
                progress_action="download",
                progress_task=self._download_task,
                description_placeholders={"file": self._data[CONF_HF_FILE]},
            )
        task, self._download_task = self._download_task, None
        if (err := task.exception()) is not None:
            LOGGER.warning("Model download failed: %s", err)
            self._download_error = str(err) if isinstance(err, EngineError) else repr(err)
            return self.async_show_progress_done(next_step_id="download_failed")
        self._data[CONF_MODEL_PATH] = str(task.result())
        return self.async_show_progress_done(next_step_id="download_done")

    async def async_step_download_done(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """The model is downloaded: add the entry, with its default agents, unless one uses that file already."""
        self._async_abort_entries_match({CONF_MODEL_PATH: self._data[CONF_MODEL_PATH]})
        return self._create(Path(self._data[CONF_MODEL_PATH]).name)

    async def async_step_download_failed(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """The download failed: abort with the error."""
        return self.async_abort(reason="download_failed", description_placeholders={"error": self._download_error})

    async def _async_check_remote(self, data: Mapping[str, Any]) -> tuple[dict[str, str], str]:
        """Errors for the form, and the model the server will serve."""
        engine = RemoteEngine(
            RemoteOptions(data[CONF_URL], data.get(CONF_API_KEY) or None, data.get(CONF_MODEL) or None),
            async_get_clientsession(self.hass),
        )
        try:
            info = await engine.async_load()
        except EngineUnavailableError:
            return {"base": "cannot_connect"}, ""
        except AuthenticationError:
            return {"base": "invalid_auth"}, ""
        except ModelLoadError:
            return {"base": "no_model"}, ""
        except EngineError:
            return {"base": "not_openai_compatible"}, ""
        return {}, info.name

    async def async_step_remote(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for the server (URL, API key, model) and check that it answers and serves the model."""
        errors: dict[str, str] = {}
        if user_input is not None:
            self._data = {CONF_ENGINE: ENGINE_REMOTE, **user_input, CONF_URL: user_input[CONF_URL].strip()}
            errors, model = await self._async_check_remote(self._data)
            if not errors:
                self._async_abort_entries_match(
                    {CONF_URL: self._data[CONF_URL], CONF_MODEL: self._data.get(CONF_MODEL)}
                )
                return self._create(f"{model} ({RemoteOptions(self._data[CONF_URL]).base})")
        return self.async_show_form(
            step_id="remote",
            data_schema=self.add_suggested_values_to_schema(_remote_schema({}), user_input or {}),
            errors=errors,
        )

    async def async_step_reauth(self, entry_data: Mapping[str, Any]) -> ConfigFlowResult:
        """The model server refused the API key."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Ask for a new API key, and keep it once the server accepts it."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            data = {**entry.data, CONF_API_KEY: user_input[CONF_API_KEY]}
            errors, _model = await self._async_check_remote(data)
            if not errors:
                return self.async_update_reload_and_abort(entry, data=data)
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=probatio.Schema(
                {probatio.Required(CONF_API_KEY): TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))}
            ),
            description_placeholders={"url": entry.data[CONF_URL]},
            errors=errors,
        )

    async def async_step_reconfigure(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Change the engine's parameters (model file, threads, context; or the server)."""
        entry = self._get_reconfigure_entry()
        embedded = entry.data[CONF_ENGINE] == ENGINE_EMBEDDED
        errors: dict[str, str] = {}
        if user_input is not None:
            data = {**entry.data, **_ints(user_input)}
            if embedded:
                if (error := await _check_model_file(data[CONF_MODEL_PATH])) is not None:
                    errors[CONF_MODEL_PATH] = error
            else:
                errors, _model = await self._async_check_remote(data)
            if not errors:
                return self.async_update_reload_and_abort(entry, data=data)
        if embedded:
            schema = probatio.Schema(
                {
                    probatio.Required(CONF_MODEL_PATH, default=entry.data[CONF_MODEL_PATH]): TextSelector(),
                    **_engine_fields(entry.data),
                }
            )
        else:
            schema = _remote_schema(entry.data)
        return self.async_show_form(step_id="reconfigure", data_schema=schema, errors=errors)


def _generation_fields(options: Mapping[str, Any]) -> dict[Any, Any]:
    """How an agent decodes: shared by conversation agents and AI Tasks."""
    return {
        probatio.Optional(CONF_TEMPERATURE, default=options.get(CONF_TEMPERATURE, DEFAULT_TEMPERATURE)): NumberSelector(
            NumberSelectorConfig(min=0, max=2, step=0.05)
        ),
        probatio.Optional(CONF_MAX_TOKENS, default=options.get(CONF_MAX_TOKENS, DEFAULT_MAX_TOKENS)): NumberSelector(
            NumberSelectorConfig(min=16, max=4096, step=16, mode=NumberSelectorMode.BOX)
        ),
    }


def _conversation_fields(hass: HomeAssistant, options: Mapping[str, Any]) -> dict[Any, Any]:
    apis = [SelectOptionDict(label=api.name, value=api.id) for api in llm.async_get_apis(hass)]
    return {
        probatio.Optional(CONF_LLM_HASS_API, default=list(options.get(CONF_LLM_HASS_API, [DOMAIN]))): SelectSelector(
            SelectSelectorConfig(options=apis, multiple=True)
        ),
        probatio.Optional(
            CONF_PREFER_LOCAL_INTENTS, default=options.get(CONF_PREFER_LOCAL_INTENTS, DEFAULT_PREFER_LOCAL_INTENTS)
        ): BooleanSelector(),
        probatio.Optional(
            CONF_CONFIRM_RISKY, default=options.get(CONF_CONFIRM_RISKY, DEFAULT_CONFIRM_RISKY)
        ): BooleanSelector(),
        probatio.Optional(
            CONF_MAX_TOOL_ROUNDS, default=options.get(CONF_MAX_TOOL_ROUNDS, DEFAULT_MAX_TOOL_ROUNDS)
        ): NumberSelector(NumberSelectorConfig(min=1, max=10, step=1, mode=NumberSelectorMode.BOX)),
        probatio.Optional(CONF_PROMPT, description={"suggested_value": options.get(CONF_PROMPT)}): TemplateSelector(),
        **_generation_fields(options),
        probatio.Optional(CONF_MAX_HISTORY, default=options.get(CONF_MAX_HISTORY, DEFAULT_MAX_HISTORY)): NumberSelector(
            NumberSelectorConfig(min=0, max=100, step=1, mode=NumberSelectorMode.BOX)
        ),
    }


class AgentSubentryFlow(ConfigSubentryFlow):
    """Add or change an agent of a BotPsy model: a conversation agent or an AI Task."""

    def _schema(self, options: Mapping[str, Any], *, new: bool) -> probatio.Schema:
        conversation = self._subentry_type == "conversation"
        fields: dict[Any, Any] = {}
        if new:
            name = DEFAULT_CONVERSATION_NAME if conversation else DEFAULT_AI_TASK_NAME
            fields[probatio.Required(CONF_NAME, default=name)] = TextSelector()
        fields.update(_conversation_fields(self.hass, options) if conversation else _generation_fields(options))
        return probatio.Schema(fields)

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Ask for a new agent's name and options (a conversation agent's or an AI Task's)."""
        if user_input is not None:
            title = user_input.pop(CONF_NAME)
            return self.async_create_entry(title=title, data=_agent_options(user_input))
        return self.async_show_form(step_id="user", data_schema=self._schema({}, new=True))

    async def async_step_reconfigure(self, user_input: dict[str, Any] | None = None) -> SubentryFlowResult:
        """Change an agent's options (not its name); the entry reloads with them."""
        subentry = self._get_reconfigure_subentry()
        if user_input is not None:
            return self.async_update_and_abort(self._get_entry(), subentry, data=_agent_options(user_input))
        return self.async_show_form(step_id="reconfigure", data_schema=self._schema(subentry.data, new=False))


def _agent_options(user_input: Mapping[str, Any]) -> dict[str, Any]:
    options = dict(user_input)
    for key in (CONF_MAX_TOKENS, CONF_MAX_HISTORY, CONF_MAX_TOOL_ROUNDS):
        if key in options:
            options[key] = int(options[key])
    return options
