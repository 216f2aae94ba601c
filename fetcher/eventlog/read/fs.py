"""Where event logs live: a local folder, or any ``fsspec`` URL whose driver is installed
(``s3://`` with s3fs, ``gs://`` with gcsfs, ``abfs://`` with adlfs, ``hdfs://`` with pyarrow,
``memory://`` for tests).

Both kinds answer the same three questions: what is in a folder (name, folder or not, size,
modification time), open a file for reading (seekable, so a cut zstd frame can be spotted), and
the path of a child. Paths are plain strings in the file system's own form.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, BinaryIO, Protocol
from urllib.parse import urlsplit


class LogStoreError(OSError):
    """The log folder (or a file in it) cannot be listed or read."""


@dataclass(frozen=True)
class StoreEntry:
    """One entry of a folder."""

    name: str
    path: str
    is_dir: bool
    size: int
    mtime_ms: int


class LogFS(Protocol):
    """A file system holding event logs."""

    def entries(self, folder: str) -> list[StoreEntry]:
        """The entries directly under ``folder``."""
        ...

    def open(self, path: str) -> BinaryIO:
        """A binary, seekable stream of one file."""
        ...

    def stat(self, path: str) -> StoreEntry:
        """One file or folder."""
        ...

    def join(self, folder: str, name: str) -> str:
        """The path of ``name`` inside ``folder``."""
        ...


class LocalFS:
    """The local file system."""

    def entries(self, folder: str) -> list[StoreEntry]:
        """The entries of a local folder (symbolic links followed)."""
        out = []
        with os.scandir(folder) as it:
            for d in it:
                try:
                    st = d.stat()
                except FileNotFoundError:
                    continue  # removed while listing
                out.append(
                    StoreEntry(d.name, d.path, d.is_dir(), st.st_size, int(st.st_mtime * 1000))
                )
        return out

    def open(self, path: str) -> BinaryIO:
        """Open a local file."""
        return open(path, "rb")  # noqa: SIM115 - the caller closes it

    def stat(self, path: str) -> StoreEntry:
        """One local file or folder."""
        st = os.stat(path)
        is_dir = os.path.isdir(path)
        return StoreEntry(os.path.basename(path), path, is_dir, st.st_size, int(st.st_mtime * 1000))

    def join(self, folder: str, name: str) -> str:
        """``os.path.join``."""
        return os.path.join(folder, name)


def _mtime_ms(info: dict[str, Any]) -> int:
    """The modification time of an fsspec ``info`` dict, whatever its driver calls it."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, int | float):
            # seconds (local, memory) or ms (hdfs via pyarrow reports seconds as float too)
            return int(value * 1000) if value < 1e11 else int(value)
        if isinstance(value, str):
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
    return 0


class FsspecFS:
    """A file system reached through fsspec (imported only when such a URL is configured)."""

    def __init__(self, url: str) -> None:
        try:
            import fsspec
        except ImportError:
            raise LogStoreError(
                f"{url}: reading event logs from a URL needs fsspec "
                "(pip install 'sparkscope[eventlogs]') and the driver of its scheme"
            ) from None
        try:
            self.fs, self.root = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError) as exc:
            raise LogStoreError(f"{url}: no usable fsspec driver: {exc}") from None
        self.protocol = urlsplit(url).scheme

    def _entry(self, info: dict[str, Any]) -> StoreEntry:
        path = str(info["name"]).rstrip("/")
        return StoreEntry(
            name=path.rsplit("/", 1)[-1],
            path=path,
            is_dir=info.get("type") == "directory",
            size=int(info.get("size") or 0),
            mtime_ms=_mtime_ms(info),
        )

    def entries(self, folder: str) -> list[StoreEntry]:
        """``fs.ls(folder, detail=True)`` as entries."""
        try:
            infos = self.fs.ls(folder, detail=True)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise LogStoreError(f"cannot list {folder}: {exc}") from None
        return [self._entry(i) for i in infos if str(i["name"]).rstrip("/") != folder.rstrip("/")]

    def open(self, path: str) -> BinaryIO:
        """``fs.open(path, "rb")``."""
        return self.fs.open(path, "rb")  # type: ignore[no-any-return]

    def stat(self, path: str) -> StoreEntry:
        """``fs.info(path)`` as an entry."""
        return self._entry(self.fs.info(path))

    def join(self, folder: str, name: str) -> str:
        """Slash-joined."""
        return f"{folder.rstrip('/')}/{name}"


def is_url(location: str) -> bool:
    """True for a URL with a scheme other than ``file`` (a drive letter is not a scheme)."""
    scheme = urlsplit(location).scheme
    return len(scheme) > 1 and scheme != "file"


def open_store(location: str) -> tuple[LogFS, str]:
    """The file system and root path of a configured event-log location (folder or URL)."""
    if is_url(location):
        fs = FsspecFS(location)
        return fs, fs.root
    parts = urlsplit(location)
    path = parts.path if parts.scheme == "file" else location
    return LocalFS(), os.path.abspath(os.path.expanduser(path))
