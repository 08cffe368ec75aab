"""Model downloads against a local HTTP server that behaves like the hub."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
import errno
import hashlib
import os
from pathlib import Path
import resource
import shutil
import signal
import subprocess
import sys

import aiohttp
import pytest

from botpsy_runtime import download
from botpsy_runtime.download import DownloadError
from scripts.testing.model_host import ModelHost

PAYLOAD = bytes(range(256)) * 8192  # 2 MiB


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_download_verifies_and_reports_progress(session: aiohttp.ClientSession, tmp_path: Path) -> None:
    async with ModelHost(PAYLOAD) as host:
        url = download.hf_url("org/repo", "model.gguf", endpoint=host.url)
        remote = await download.async_resolve(session, url)
        assert (remote.size, remote.sha256) == (len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest())
        seen: list[tuple[int, int | None]] = []
        dest = await download.async_download(
            session, remote, tmp_path / "models" / "model.gguf", lambda d, t: seen.append((d, t))
        )
        assert dest.read_bytes() == PAYLOAD
        assert seen[-1] == (len(PAYLOAD), len(PAYLOAD))
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
        assert not (tmp_path / "models" / "model.gguf.part").exists()
        assert host.ranges == [None]


async def test_interrupted_download_resumes(session: aiohttp.ClientSession, tmp_path: Path) -> None:
    async with ModelHost(PAYLOAD) as host:
        host.cut_next = 700_000
        url = download.hf_url("org/repo", "model.gguf", endpoint=host.url)
        remote = await download.async_resolve(session, url)
        dest = tmp_path / "model.gguf"
        with pytest.raises(DownloadError, match="resumes when retried"):
            await download.async_download(session, remote, dest)
        part = tmp_path / "model.gguf.part"
        assert not dest.exists()
        have = part.stat().st_size
        assert 0 < have < len(PAYLOAD)
        await download.async_download(session, remote, dest)
        assert dest.read_bytes() == PAYLOAD
        assert host.ranges == [None, f"bytes={have}-"]


async def test_checksum_mismatch_leaves_nothing(session: aiohttp.ClientSession, tmp_path: Path) -> None:
    async with ModelHost(PAYLOAD, sha256="0" * 64) as host:
        remote = await download.async_resolve(session, download.hf_url("o/r", "model.gguf", endpoint=host.url))
        with pytest.raises(DownloadError, match="checksum"):
            await download.async_download(session, remote, tmp_path / "model.gguf")
        assert list(tmp_path.iterdir()) == []


async def test_missing_file_and_unreachable_hub(session: aiohttp.ClientSession) -> None:
    async with ModelHost(PAYLOAD) as host:
        with pytest.raises(DownloadError, match="No such file"):
            await download.async_resolve(session, download.hf_url("o/r", "other.gguf", endpoint=host.url))
    with pytest.raises(DownloadError, match="Cannot reach"):
        await download.async_resolve(session, download.hf_url("o/r", "model.gguf", endpoint="http://127.0.0.1:9"))


async def test_not_enough_disk_space(
    session: aiohttp.ClientSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: real._replace(free=download.DISK_MARGIN + 1000))
    async with ModelHost(PAYLOAD) as host:
        remote = await download.async_resolve(session, download.hf_url("o/r", "model.gguf", endpoint=host.url))
        with pytest.raises(DownloadError, match="Not enough disk space"):
            await download.async_download(session, remote, tmp_path / "model.gguf")
        assert host.ranges == []


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Files of this process cannot grow past `limit` bytes: the kernel refuses the write
    (EFBIG), as a full disk refuses it (ENOSPC), without needing a small disk to mount."""
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old_limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)


async def test_write_refused_midway_keeps_the_part_and_resumes(session: aiohttp.ClientSession, tmp_path: Path) -> None:
    async with ModelHost(PAYLOAD) as host:
        remote = await download.async_resolve(session, download.hf_url("o/r", "model.gguf", endpoint=host.url))
        dest = tmp_path / "model.gguf"
        with file_size_limit(1_500_000), pytest.raises(DownloadError) as refused:
            await download.async_download(session, remote, dest)
        message = str(refused.value)
        assert message.startswith("The disk refused a file this large (File too large)"), message
        assert "1 MB downloaded are kept, and the download resumes when retried" in message
        assert isinstance(refused.value.__cause__, OSError)
        assert refused.value.__cause__.errno == errno.EFBIG
        # Nothing half-written is in the model's place; what was written is kept.
        assert not dest.exists()
        have = (tmp_path / "model.gguf.part").stat().st_size
        assert have == 1_500_000
        # Room again: the download resumes where the disk stopped it, and is verified.
        await download.async_download(session, remote, dest)
        assert dest.read_bytes() == PAYLOAD
        assert host.ranges == [None, f"bytes={have}-"]


def test_hub_mirror_from_environment() -> None:
    """HF_ENDPOINT points downloads at a mirror, as huggingface_hub reads it."""
    probe = "from botpsy_runtime import download; print(download.hf_url('org/repo', 'm.gguf'))"
    for env, expected in (
        ({"HF_ENDPOINT": "http://mirror.lan:8080/"}, "http://mirror.lan:8080/org/repo/resolve/main/m.gguf"),
        ({}, "https://huggingface.co/org/repo/resolve/main/m.gguf"),
    ):
        base = {k: v for k, v in os.environ.items() if k != "HF_ENDPOINT"}
        run = subprocess.run(
            [sys.executable, "-c", probe], check=False, env={**base, **env}, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == expected
