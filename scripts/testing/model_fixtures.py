"""Tiny models and a real llama-server, for the runtime's and the integration's tests (a pytest plugin).

Both test suites load it (`pytest_plugins` in their conftest): the tiny models are written
once per session, from random weights, and run on real llama.cpp.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
import os
from pathlib import Path
import shutil
import subprocess
import time
from typing import get_args
import urllib.request

import pytest
import pytest_socket

from scripts.testing.tiny_gguf import Arch, write_tiny_model


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
    with serving_llama_server(tiny_model, _free_port(), tmp_path_factory.mktemp("llama-server")) as url:
        yield url


@contextmanager
def serving_llama_server(model: Path, port: int, folder: Path, slots: int = 1) -> Iterator[str]:
    """llama-server on `model` (one slot unless told, 2,048 tokens) on loopback, healthy; its log in `folder`."""
    binary = shutil.which("llama-server")
    assert binary, "llama-server not found: run scripts/setup"
    log = (folder / "server.log").open("w")
    command = [binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "2048", "-np", str(slots)]
    process = subprocess.Popen([*command, "-t", "2", "--no-webui"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    # Session set-up runs while HA's test plugin blocks sockets; tests that talk to the
    # server ask for `socket_enabled` themselves.
    pytest_socket.enable_socket()
    try:
        while True:
            assert process.poll() is None, (folder / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "llama-server did not become healthy"
            time.sleep(0.2)
    finally:
        pytest_socket.disable_socket(allow_unix_socket=True)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)
        log.close()
