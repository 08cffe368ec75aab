"""Fixtures shared by the core and the integration tests: tiny models and a real server."""

from __future__ import annotations

from collections.abc import Iterator
import os
from pathlib import Path
import shutil
import subprocess
import time
from typing import get_args
import urllib.request

import pytest
import pytest_socket

from tests.tiny_gguf import Arch, write_tiny_model


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A plain transformer, a sliding-window and a hybrid model: random weights, real llama.cpp."""
    folder = tmp_path_factory.mktemp("models")
    return {arch: write_tiny_model(folder / f"tiny-{arch}.gguf", arch) for arch in get_args(Arch)}


@pytest.fixture(scope="session")
def tiny_model(tiny_models: dict[str, Path]) -> Path:
    return tiny_models["qwen3"]


def _free_port() -> int:
    # Derived from the pid so parallel runs differ; checked by the server's own bind.
    return 20000 + os.getpid() % 20000


@pytest.fixture(scope="session")
def llama_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-server (llama.cpp's OpenAI-compatible server) on loopback, serving the tiny model."""
    binary = shutil.which("llama-server")
    assert binary, "llama-server not found: run scripts/setup"
    port = _free_port()
    log = (tmp_path_factory.mktemp("llama-server") / "server.log").open("w")
    process = subprocess.Popen(
        [
            binary,
            "-m",
            str(tiny_model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-c",
            "2048",
            "-np",
            "1",
            "-t",
            "2",
            "--no-webui",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    # Session set-up runs while HA's test plugin blocks sockets; tests that talk to the
    # server ask for `socket_enabled` themselves.
    pytest_socket.enable_socket()
    while True:
        assert process.poll() is None, Path(log.name).read_text()
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "llama-server did not become healthy"
        time.sleep(0.2)
    pytest_socket.disable_socket(allow_unix_socket=True)
    yield url
    process.terminate()
    process.wait(10)
    log.close()
