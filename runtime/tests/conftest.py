"""The runtime's tests run real llama.cpp on tiny models and talk to real servers on loopback."""

from __future__ import annotations

import pytest

# The repository's test tooling (tiny GGUF models, llama-server): the runtime is developed
# and tested inside the integration's repository (pyproject.toml puts its root on the path).
pytest_plugins = ["scripts.testing.model_fixtures"]


@pytest.fixture(autouse=True)
def _loopback_sockets(socket_enabled: None) -> None:
    """pytest-socket (which Home Assistant's test plugin switches on) blocks sockets; these tests need loopback ones."""
