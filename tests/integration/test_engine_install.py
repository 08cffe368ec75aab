"""Installing the embedded engine in real Home Assistant: download, local file, verification,
install with HA's package helper (a real `uv pip install`, into a folder of the test's own),
and every failure as a translated reason and a repair issue.

The test machine has llama-cpp-python already (scripts/setup); here it counts as missing
until the install under test has put a stand-in wheel (same name and version, no code) in
the test's folder. The worker itself then runs on the real one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
import hashlib
import io
from pathlib import Path
from typing import Any
import zipfile

from aiohttp import web
from aiohttp.test_utils import TestServer
from homeassistant import config_entries
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import package
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from botpsy_runtime.engine_builds import (
    LLAMA_CPP_PYTHON_VERSION,
    REQUIREMENT,
    EngineBuild,
    EngineInstallError,
)
from custom_components.botpsy import engine_install
from custom_components.botpsy.const import DOMAIN, ENGINE_EMBEDDED

from .conftest import embedded_data, make_entry

WHEEL = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}-py3-none-any.whl"
DIST_INFO = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.dist-info"


def stand_in_wheel() -> bytes:
    """A wheel named like the engine's, for any platform, that installs only its metadata."""
    files = {
        "llama_cpp_botpsy_test_marker.py": b"",
        f"{DIST_INFO}/METADATA": (
            f"Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: {LLAMA_CPP_PYTHON_VERSION}\n".encode()
        ),
        f"{DIST_INFO}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{DIST_INFO}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{DIST_INFO}/RECORD"]).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


class Release:
    """The release page, served on loopback: what it serves, and what was asked of it."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.served = payload
        self.requests: list[str] = []
        self.url = ""

    def build(self, payload: bytes | None = None) -> EngineBuild:
        data = self.payload if payload is None else payload
        return EngineBuild(WHEEL, len(data), hashlib.sha256(data).hexdigest(), base_url=self.url)


@pytest.fixture(autouse=True)
def config_dir(hass: HomeAssistant, tmp_path: Path) -> None:
    """A configuration folder of the test's own (HA's test one is shared by every test)."""
    hass.config.config_dir = str(tmp_path / "config")


@pytest.fixture
def deps(hass: HomeAssistant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """llama-cpp-python counts as missing until installed into this folder, where HA's
    package helper installs (as on a hub without a virtual environment: `--target`)."""
    folder = tmp_path / "deps"
    monkeypatch.setattr(engine_install, "_installed", lambda: (folder / DIST_INFO).is_dir())
    monkeypatch.setattr(engine_install, "pip_kwargs", lambda config_dir: {"target": str(folder)})
    return folder


@pytest.fixture
async def release(socket_enabled: None) -> AsyncIterator[Release]:
    release = Release(stand_in_wheel())

    async def serve(request: web.Request) -> web.Response:
        release.requests.append(request.match_info["file"])
        if request.match_info["file"] != WHEEL:
            return web.Response(status=404)
        return web.Response(body=release.served)

    async def elsewhere(request: web.Request) -> web.Response:
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/download/{file}", serve)
    app.router.add_get("/download/elsewhere/{file}", elsewhere)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    release.url = str(server.make_url("/download"))
    yield release
    await server.close()


def local_file(hass: HomeAssistant, data: bytes) -> Path:
    path = Path(hass.config.path("botpsy", "engine", WHEEL))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def issue(hass: HomeAssistant) -> ir.IssueEntry | None:
    return ir.async_get(hass).async_get_issue(DOMAIN, engine_install.ISSUE_ENGINE_INSTALL)


async def test_an_installed_engine_needs_nothing(hass: HomeAssistant, monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine has llama-cpp-python: nothing is downloaded or installed."""
    monkeypatch.setattr(package, "install_package", pytest.fail)
    await engine_install.async_ensure_engine(hass, builds=())
    assert issue(hass) is None


async def test_download_verify_install(hass: HomeAssistant, deps: Path, release: Release) -> None:
    progress: list[float] = []
    await engine_install.async_ensure_engine(hass, progress.append, builds=(release.build(),))
    assert release.requests == [WHEEL]
    assert progress[-1] == 1.0
    assert (deps / DIST_INFO / "METADATA").is_file()
    assert (deps / "llama_cpp_botpsy_test_marker.py").is_file()
    # Kept, so that an HA update that resets the installed packages needs no download.
    assert Path(hass.config.path("botpsy", "engine", WHEEL)).read_bytes() == release.payload
    assert issue(hass) is None
    await engine_install.async_ensure_engine(hass, builds=(release.build(),))
    assert release.requests == [WHEEL]


async def test_offline_hub_installs_the_local_file(hass: HomeAssistant, deps: Path) -> None:
    data = stand_in_wheel()
    local_file(hass, data)
    unreachable = EngineBuild(WHEEL, len(data), hashlib.sha256(data).hexdigest(), base_url="http://127.0.0.1:9")
    await engine_install.async_ensure_engine(hass, builds=(unreachable,))
    assert (deps / DIST_INFO).is_dir()


async def test_a_local_file_that_is_not_the_release_is_refused(
    hass: HomeAssistant, deps: Path, release: Release
) -> None:
    path = local_file(hass, release.payload + b"tampered")
    with pytest.raises(EngineInstallError) as err:
        await engine_install.async_ensure_engine(hass, builds=(release.build(),))
    assert err.value.reason == "engine_checksum"
    assert not deps.exists()
    assert path.exists()  # the user's file stays; the issue says what to do with it
    found = issue(hass)
    assert found is not None
    assert found.translation_key == "engine_checksum"
    assert found.translation_placeholders is not None
    assert found.translation_placeholders["folder"] == hass.config.path("botpsy/engine")


@pytest.mark.parametrize(
    ("tampered", "detail"), [(False, "HTTP 404"), (True, "checksum does not match")], ids=["missing", "tampered"]
)
async def test_download_failures(
    hass: HomeAssistant, deps: Path, release: Release, tampered: bool, detail: str
) -> None:
    build = release.build()
    if tampered:
        release.served = b"X" + release.payload[1:]
    else:
        build = EngineBuild(WHEEL, build.size, build.sha256, base_url=release.url + "/elsewhere")
    with pytest.raises(EngineInstallError, match=detail) as err:
        await engine_install.async_ensure_engine(hass, builds=(build,))
    assert err.value.reason == "engine_download"
    assert not Path(hass.config.path("botpsy", "engine", WHEEL)).exists()
    assert not deps.exists()
    found = issue(hass)
    assert found is not None
    assert found.translation_key == "engine_download"
    # Fixed on the next try (the release serves the file again): the issue goes.
    release.served = release.payload
    await engine_install.async_ensure_engine(hass, builds=(release.build(),))
    assert issue(hass) is None


async def test_a_wheel_the_installer_rejects(hass: HomeAssistant, deps: Path, release: Release) -> None:
    """The right hash, but not a wheel (a bad release): uv refuses it, and nothing is installed."""
    release.payload = release.served = b"not a zip file"
    with pytest.raises(EngineInstallError) as err:
        await engine_install.async_ensure_engine(hass, builds=(release.build(),))
    assert err.value.reason == "engine_install"
    assert not (deps / DIST_INFO).exists()


async def test_no_build_and_no_compiler(hass: HomeAssistant, deps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_install, "has_compiler", lambda: False)
    musl_only = EngineBuild("llama_cpp_python-0.3.36-py3-none-musllinux_1_2_riscv64.whl", 1, "0" * 64)
    with pytest.raises(EngineInstallError, match="no compiler") as err:
        await engine_install.async_ensure_engine(hass, builds=(musl_only,))
    assert err.value.reason == "engine_unsupported"
    found = issue(hass)
    assert found is not None
    assert found.translation_key == "engine_unsupported"


async def test_glibc_host_with_a_compiler_builds_from_pypi(
    hass: HomeAssistant, deps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No build for glibc: pip gets the pinned version from PyPI and compiles it (as before)."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def install(requirement: str, **kwargs: Any) -> bool:
        calls.append((requirement, kwargs))
        (deps / DIST_INFO).mkdir(parents=True)
        return True

    monkeypatch.setattr(engine_install, "has_compiler", lambda: True)
    monkeypatch.setattr(package, "install_package", install)
    await engine_install.async_ensure_engine(hass, builds=())
    assert calls == [(REQUIREMENT, {"upgrade": False, "target": str(deps)})]


async def test_config_flow_installs_the_engine_first(
    hass: HomeAssistant, deps: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_install, "ENGINE_BUILDS", (release.build(),))
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"next_step_id": ENGINE_EMBEDDED})
    assert result["type"] is FlowResultType.SHOW_PROGRESS
    assert result["progress_action"] == "install_engine"
    await hass.async_block_till_done(wait_background_tasks=True)
    result = await hass.config_entries.flow.async_configure(result["flow_id"])
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == ENGINE_EMBEDDED
    assert (deps / DIST_INFO).is_dir()


async def test_config_flow_says_why_the_engine_cannot_be_installed(
    hass: HomeAssistant, deps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_install, "has_compiler", lambda: False)
    monkeypatch.setattr(engine_install, "ENGINE_BUILDS", ())
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"next_step_id": ENGINE_EMBEDDED})
    if result["type"] is FlowResultType.SHOW_PROGRESS:  # (a failure this quick may skip it)
        await hass.async_block_till_done(wait_background_tasks=True)
        result = await hass.config_entries.flow.async_configure(result["flow_id"])
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "engine_unsupported"
    assert "no compiler" in result["description_placeholders"]["detail"]
    assert issue(hass) is not None


async def test_entry_waits_for_the_engine_then_starts_the_worker(
    hass: HomeAssistant, deps: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, socket_enabled: None
) -> None:
    """An entry whose engine cannot be installed retries, with a repair issue; once the file
    is in the folder (an offline hub), the next try installs it and starts the worker."""
    data = stand_in_wheel()
    build = EngineBuild(WHEEL, len(data), hashlib.sha256(data).hexdigest(), base_url="http://127.0.0.1:9")
    monkeypatch.setattr(engine_install, "ENGINE_BUILDS", (build,))
    entry: MockConfigEntry = make_entry(embedded_data(tiny_model))
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is config_entries.ConfigEntryState.SETUP_RETRY
    found = issue(hass)
    assert found is not None
    assert found.translation_key == "engine_download"
    local_file(hass, data)
    await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is config_entries.ConfigEntryState.LOADED
    assert (deps / DIST_INFO).is_dir()
    assert issue(hass) is None
    assert await hass.config_entries.async_unload(entry.entry_id)
