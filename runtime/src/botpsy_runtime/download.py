"""Download a GGUF from a Hugging Face repository: resumable, checked, atomic.

The file grows as `<name>.part` beside its destination; an interrupted download resumes
from there with an HTTP Range request. Before the first byte, free disk space is checked
against the size the hub announces; at the end the size and the SHA-256 the hub
publishes for LFS files are verified, and only then is the file renamed into place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
import errno
import hashlib
import os
from pathlib import Path
import re
import shutil
from urllib.parse import quote

import aiohttp

from .errors import EngineError

# HF_ENDPOINT names a mirror of the hub, as huggingface_hub reads it (offline hubs, tests).
HF_ENDPOINT = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
CHUNK = 1 << 20
# Room left on the disk after the download, for the database and logs.
DISK_MARGIN = 200 << 20
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class DownloadError(EngineError):
    """The model could not be downloaded; nothing was left in its place."""


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """A file on the hub, with what the hub says it must be."""

    url: str
    size: int | None
    sha256: str | None


def hf_url(repo: str, filename: str, revision: str = "main", endpoint: str = HF_ENDPOINT) -> str:
    """The download URL of `filename` in the Hugging Face repository `repo`, at `revision`."""
    return f"{endpoint.rstrip('/')}/{quote(repo)}/resolve/{quote(revision)}/{quote(filename)}"


async def async_resolve(session: aiohttp.ClientSession, url: str) -> RemoteFile:
    """Ask the hub for the file's size and checksum (without downloading it)."""
    try:
        async with session.head(url, allow_redirects=False, timeout=aiohttp.ClientTimeout(total=30)) as response:
            if response.status in (401, 403):
                raise DownloadError("The repository is private or gated: download refused")
            if response.status == 404:
                raise DownloadError("No such file in that repository")
            if response.status >= 400:
                raise DownloadError(f"The hub answered HTTP {response.status}")
            headers = response.headers
    except (aiohttp.ClientError, TimeoutError) as err:
        raise DownloadError(f"Cannot reach the download server: {err or type(err).__name__}") from err
    size = headers.get("X-Linked-Size") or headers.get("Content-Length")
    etag = (headers.get("X-Linked-Etag") or headers.get("ETag") or "").strip('"').removeprefix("W/").strip('"')
    return RemoteFile(
        url=url,
        size=int(size) if size and size.isdigit() else None,
        sha256=etag if _SHA256.match(etag) else None,
    )


def _size(count: int) -> str:
    return f"{count >> 20} MB" if count >= 1 << 20 else f"{count >> 10} KB"


def _hash_file(path: Path) -> hashlib._Hash:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(CHUNK):
            digest.update(block)
    return digest


async def async_download(
    session: aiohttp.ClientSession,
    remote: RemoteFile,
    dest: Path,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Download `remote` to `dest`, resuming a previous partial download.

    A disk that fills up (or any other write error) midway is a DownloadError like a lost
    connection: what was written stays in the `.part` file, and the download resumes from
    there when retried.
    """
    part = dest.with_name(dest.name + ".part")
    try:
        return await _async_download(session, remote, dest, part, progress)
    except OSError as err:
        have = await asyncio.to_thread(lambda: part.stat().st_size if part.exists() else 0)
        kept = f"the {_size(have)} downloaded are kept, and the download resumes when retried"
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DownloadError(f"The disk is full: {kept} once there is room") from err
        if err.errno == errno.EFBIG:
            raise DownloadError(f"The disk refused a file this large ({err.strerror}): {kept}") from err
        raise DownloadError(f"Cannot write the model to {dest.parent}: {err.strerror or err}; {kept}") from err


async def _async_download(
    session: aiohttp.ClientSession,
    remote: RemoteFile,
    dest: Path,
    part: Path,
    progress: Callable[[int, int | None], None] | None,
) -> Path:
    await asyncio.to_thread(dest.parent.mkdir, parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    if remote.size is not None:
        if have > remote.size:
            have = 0
        free = (await asyncio.to_thread(shutil.disk_usage, dest.parent)).free
        if remote.size - have + DISK_MARGIN > free:
            raise DownloadError(
                f"Not enough disk space: the model needs {(remote.size - have) >> 20} MB, {free >> 20} MB are free"
            )
    digest = await asyncio.to_thread(_hash_file, part) if have else hashlib.sha256()
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        async with session.get(
            remote.url, headers=headers, timeout=aiohttp.ClientTimeout(total=None, sock_read=60)
        ) as response:
            if response.status == 200 and have:
                have, digest = 0, hashlib.sha256()  # server ignored the range: start over
            elif response.status not in (200, 206):
                raise DownloadError(f"The download server answered HTTP {response.status}")
            stream = await asyncio.to_thread(part.open, "ab" if have else "wb")
            try:
                async for block in response.content.iter_chunked(CHUNK):
                    await asyncio.to_thread(stream.write, block)
                    digest.update(block)
                    have += len(block)
                    if progress:
                        progress(have, remote.size)
            finally:
                await asyncio.to_thread(stream.close)
    except (aiohttp.ClientError, TimeoutError) as err:
        raise DownloadError(f"The download was interrupted at {_size(have)}; it resumes when retried") from err
    if remote.size is not None and have != remote.size:
        await asyncio.to_thread(part.unlink)
        raise DownloadError(f"The download has {have} bytes, the hub announced {remote.size}")
    if remote.sha256 is not None and digest.hexdigest() != remote.sha256:
        await asyncio.to_thread(part.unlink)
        raise DownloadError("The downloaded file's checksum does not match the hub's")
    await asyncio.to_thread(part.replace, dest)
    return dest
