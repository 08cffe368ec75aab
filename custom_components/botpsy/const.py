"""Constants of the BotPsy integration."""

from __future__ import annotations

import logging
from typing import Final

from homeassistant.const import CONF_LLM_HASS_API

DOMAIN: Final = "botpsy"
LOGGER = logging.getLogger(__package__)

# Config entry data: which engine runs the model.
CONF_ENGINE: Final = "engine"
ENGINE_EMBEDDED: Final = "embedded"
ENGINE_REMOTE: Final = "remote"

CONF_MODEL_PATH: Final = "model_path"
CONF_HF_REPO: Final = "hf_repo"
CONF_HF_FILE: Final = "hf_file"
CONF_N_CTX: Final = "n_ctx"
CONF_N_THREADS: Final = "n_threads"
CONF_N_BATCH: Final = "n_batch"
CONF_URL: Final = "url"
CONF_API_KEY: Final = "api_key"
CONF_MODEL: Final = "model"

DEFAULT_HF_REPO: Final = "botpsy/BotPsy-0.8B-GGUF"
DEFAULT_HF_FILE: Final = "BotPsy-0.8B-Q4_K_M.gguf"
# Downloaded models live under <config>/botpsy/models.
MODELS_DIR: Final = "botpsy/models"
DEFAULT_N_CTX: Final = 8192
DEFAULT_N_BATCH: Final = 256

# Conversation subentry options.
CONF_PROMPT: Final = "prompt"
CONF_TEMPERATURE: Final = "temperature"
CONF_MAX_TOKENS: Final = "max_tokens"
CONF_MAX_HISTORY: Final = "max_history"
CONF_MAX_TOOL_ROUNDS: Final = "max_tool_rounds"
CONF_CONFIRM_RISKY: Final = "confirm_risky"
CONF_PREFER_LOCAL_INTENTS: Final = "prefer_local_intents"
DEFAULT_CONVERSATION_NAME: Final = "BotPsy"
DEFAULT_TEMPERATURE: Final = 0.2
DEFAULT_MAX_TOKENS: Final = 256
DEFAULT_MAX_HISTORY: Final = 10
DEFAULT_MAX_TOOL_ROUNDS: Final = 3
DEFAULT_CONFIRM_RISKY: Final = True
DEFAULT_PREFER_LOCAL_INTENTS: Final = True
DEFAULT_CONVERSATION_OPTIONS: Final = {
    CONF_LLM_HASS_API: [DOMAIN],
    CONF_MAX_TOOL_ROUNDS: DEFAULT_MAX_TOOL_ROUNDS,
    CONF_CONFIRM_RISKY: DEFAULT_CONFIRM_RISKY,
    CONF_PREFER_LOCAL_INTENTS: DEFAULT_PREFER_LOCAL_INTENTS,
    CONF_TEMPERATURE: DEFAULT_TEMPERATURE,
    CONF_MAX_TOKENS: DEFAULT_MAX_TOKENS,
    CONF_MAX_HISTORY: DEFAULT_MAX_HISTORY,
}

DEFAULT_AI_TASK_NAME: Final = "BotPsy AI Task"
DEFAULT_AI_TASK_OPTIONS: Final = {
    CONF_TEMPERATURE: DEFAULT_TEMPERATURE,
    CONF_MAX_TOKENS: DEFAULT_MAX_TOKENS,
}

# The agents every new model entry starts with.
DEFAULT_SUBENTRIES: Final = (
    {"subentry_type": "conversation", "data": DEFAULT_CONVERSATION_OPTIONS, "title": DEFAULT_CONVERSATION_NAME},
    {"subentry_type": "ai_task_data", "data": DEFAULT_AI_TASK_OPTIONS, "title": DEFAULT_AI_TASK_NAME},
)

# Repair issue raised when the model worker keeps crashing.
ISSUE_WORKER_CRASHING: Final = "worker_crashing"

# The languages BotPsy reads and answers in, each measured with its own suite (README:
# how well): outside English, HA's intent matching reads requests, HA's responses and
# BotPsy's translations answer, and a held call takes a yes or a no in the language.
SUPPORTED_LANGUAGES: Final = ["en", "de", "fr", "es"]
