"""Core tests talk to real servers on loopback (llama-server, aiohttp test servers)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _loopback_sockets(socket_enabled: None) -> None:
    """HA's test plugin blocks sockets; these tests need loopback ones."""
