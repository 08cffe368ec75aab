"""Install the embedded engine (llama-cpp-python) when it is first needed.

Not a manifest requirement: Home Assistant would try to build it from source before BotPsy
loads, which fails where there is no compiler (HA OS, the HA container), and the remote
engine needs none of it. Instead, before a worker starts: if llama-cpp-python is missing,
the published wheel for this platform is taken from `<config>/botpsy/engine/` (placed by
hand on an offline hub, or kept from an earlier download, so that an HA update that resets
the installed packages needs no download) or downloaded from the project's release page,
verified against the size and SHA-256 pinned in botpsy_runtime/engine_builds.py, and
installed with Home Assistant's own package helper. Where no build is published (glibc hosts), the package
is installed from PyPI and compiled, as before. A failure is an EngineInstallError with a
translated reason, and a repair issue that says what to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
import functools
import importlib
from pathlib import Path

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.requirements import pip_kwargs
from homeassistant.util import package
from homeassistant.util.hass_dict import HassKey

from botpsy_runtime import download
from botpsy_runtime.engine_builds import (
    ENGINE_BUILDS,
    LOCAL_DIR,
    REQUIREMENT,
    EngineBuild,
    EngineInstallError,
    choose_build,
    detect_platform,
    has_compiler,
    verify,
)

from .const import DOMAIN, LOGGER

ISSUE_ENGINE_INSTALL = "engine_install"
DATA_LOCK: HassKey[asyncio.Lock] = HassKey(f"{DOMAIN}_engine_install")


def _installed() -> bool:
    return package.is_installed(REQUIREMENT)


async def async_engine_installed(hass: HomeAssistant) -> bool:
    """Whether llama-cpp-python is installed, at the pinned version."""
    return await hass.async_add_executor_job(_installed)


async def async_ensure_engine(
    hass: HomeAssistant,
    progress: Callable[[float], None] | None = None,
    builds: Sequence[EngineBuild] | None = None,
) -> None:
    """Make sure llama-cpp-python is installed; EngineInstallError (and a repair issue) if it cannot be.

    `builds`: the published ones (ENGINE_BUILDS) unless given.
    """
    async with hass.data.setdefault(DATA_LOCK, asyncio.Lock()):
        if await async_engine_installed(hass):
            return
        try:
            await _async_install(hass, progress, ENGINE_BUILDS if builds is None else builds)
        except EngineInstallError as err:
            LOGGER.error("The embedded engine cannot be installed (%s): %s", err.reason, err)
            ir.async_create_issue(
                hass,
                DOMAIN,
                ISSUE_ENGINE_INSTALL,
                is_fixable=False,
                severity=ir.IssueSeverity.ERROR,
                translation_key=err.reason,
                translation_placeholders={"detail": str(err), "folder": hass.config.path(LOCAL_DIR)},
            )
            raise
        ir.async_delete_issue(hass, DOMAIN, ISSUE_ENGINE_INSTALL)


async def _async_install(
    hass: HomeAssistant, progress: Callable[[float], None] | None, builds: Sequence[EngineBuild]
) -> None:
    host = await hass.async_add_executor_job(detect_platform)
    build = choose_build(host, builds)
    if build is None:
        if not await hass.async_add_executor_job(has_compiler):
            raise EngineInstallError(
                "engine_unsupported",
                f"No llama.cpp build is published for {host}, and there is no compiler to build one",
            )
        LOGGER.warning("Installing %s from source for %s: this compiles llama.cpp (minutes)", REQUIREMENT, host)
        requirement = REQUIREMENT
    else:
        path = Path(hass.config.path(LOCAL_DIR, build.filename))
        if await hass.async_add_executor_job(path.exists):
            LOGGER.info("Installing the embedded engine from %s", path)
        else:
            await _async_download(hass, build, path, progress)
        await hass.async_add_executor_job(verify, path, build)
        requirement = f"llama-cpp-python @ {path.as_uri()}"
    # No upgrade: what is installed already (numpy, jinja2) stays, and an offline hub
    # needs no index for them.
    install = functools.partial(
        package.install_package, requirement, upgrade=False, **pip_kwargs(hass.config.config_dir)
    )
    if not await hass.async_add_executor_job(install):
        raise EngineInstallError("engine_install", f"Installing {requirement} failed; the log says why")
    importlib.invalidate_caches()
    if not await hass.async_add_executor_job(_installed):
        raise EngineInstallError("engine_install", f"{REQUIREMENT} was installed but cannot be found")
    LOGGER.info("Installed the embedded engine (%s) for %s", REQUIREMENT, host)


async def _async_download(
    hass: HomeAssistant, build: EngineBuild, path: Path, progress: Callable[[float], None] | None
) -> None:
    LOGGER.info("Downloading the embedded engine from %s", build.url)

    def report(done: int, total: int | None) -> None:
        if progress and total:
            progress(done / total)

    remote = download.RemoteFile(build.url, build.size, build.sha256)
    try:
        await download.async_download(async_get_clientsession(hass), remote, path, report)
    except download.DownloadError as err:
        raise EngineInstallError("engine_download", f"{build.url}: {err}") from err
