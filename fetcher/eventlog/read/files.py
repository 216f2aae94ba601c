"""Finding event logs on disk and reading them as a stream of JSON events.

Layouts, as Spark's ``EventLogFileReader`` sees them:

* single file: ``<appId>[_<attemptId>][.<codec>][.inprogress]`` -- in progress while the name ends
  with ``.inprogress``;
* rolling folder: ``eventlog_v2_<appId>[_<attemptId>]/`` holding ``events_<n>_<appId>...[.<codec>]``
  files (read in order of ``n``; a ``.compact`` file replaces every file before it) and an
  ``appstatus_<appId>...[.inprogress]`` marker -- in progress while the marker ends with
  ``.inprogress``. Spark refuses a folder without the marker or without an events file
  (``require`` in ``RollingEventLogFilesFileReader``); so does :func:`open_log`, unless told to
  treat a missing marker as "in progress".

The codec is the last ``.``-separated part of a file's name once ``.inprogress`` (and
``.compact``) are stripped, as in ``EventLogFileReader.codecName``.

Lines are read with bounded memory (one decompressed block plus one line). A last line that does
not parse (a log cut off while being written) is skipped and flagged; a bad line anywhere else is
an :class:`EventLogError` naming the file and line.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fetcher.eventlog.read.blocks import CodecError, TruncatedStream
from fetcher.eventlog.read.codecs import KNOWN_CODECS, open_decompressed
from fetcher.eventlog.read.fs import LocalFS, LogFS, StoreEntry

_loads: Callable[[bytes], Any]
try:  # orjson is several times faster than json for event lines (the stdlib is the fallback)
    import orjson

    _loads = orjson.loads
    _JSONError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - exercised when orjson is absent
    _loads = json.loads
    _JSONError = (ValueError,)

IN_PROGRESS = ".inprogress"
COMPACTED = ".compact"
ROLLING_DIR_PREFIX = "eventlog_v2_"
EVENTS_PREFIX = "events_"
APPSTATUS_PREFIX = "appstatus_"
READ_BUFFER = 1 << 20


class EventLogError(ValueError):
    """An event log that cannot be read: missing parts, a bad codec, or a corrupt line."""


def codec_of(name: str) -> str | None:
    """Spark's codec short name for a log file name (None for an uncompressed log)."""
    base = name.removesuffix(IN_PROGRESS)
    base = base.removesuffix(COMPACTED)
    parts = base.split(".")
    if len(parts) < 2:
        return None
    codec = parts[-1]
    if codec not in KNOWN_CODECS:
        raise EventLogError(f"{name}: unknown compression codec {codec!r}")
    return codec


def _event_file_index(name: str) -> int:
    try:
        return int(name[len(EVENTS_PREFIX) :].split("_", 1)[0])
    except ValueError:
        raise EventLogError(f"{name}: not an events_<n>_<appId> file name") from None


@dataclass
class LogSource:
    """One application attempt's event log: its files in reading order and its state."""

    path: str
    files: list[str]
    completed: bool
    rolling: bool
    #: the name-derived application id and attempt (the events have the authoritative values)
    name_id: str
    modification_time_ms: int
    size: int = 0
    notes: list[str] = field(default_factory=list)
    fs: LogFS = field(default_factory=LocalFS, repr=False, compare=False)

    @property
    def name(self) -> str:
        """The log's own name (a file's or a rolling folder's)."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]


def name_id_of(name: str) -> str:
    """The ``<appId>[_<attemptId>]`` part of a log's file or folder name."""
    if name.startswith(ROLLING_DIR_PREFIX):
        return name[len(ROLLING_DIR_PREFIX) :]
    return name.removesuffix(IN_PROGRESS).split(".", 1)[0]


def open_log(
    path: str, *, missing_status_in_progress: bool = False, fs: LogFS | None = None
) -> LogSource:
    """Describe the event log at ``path`` (a single file or a rolling ``eventlog_v2_`` folder)."""
    fs = fs or LocalFS()
    try:
        entry = fs.stat(str(path))
    except (FileNotFoundError, NotADirectoryError):
        raise EventLogError(f"{path}: no such event log") from None
    return source_of(entry, fs, missing_status_in_progress=missing_status_in_progress)


def source_of(
    entry: StoreEntry,
    fs: LogFS,
    *,
    children: list[StoreEntry] | None = None,
    missing_status_in_progress: bool = False,
) -> LogSource:
    """The log an entry of a folder holds (``children``: a rolling folder's, when listed)."""
    if entry.is_dir:
        if children is None:
            children = fs.entries(entry.path)
        return _rolling(entry, children, fs, missing_status_in_progress)
    codec_of(entry.name)  # validate early
    return LogSource(
        path=entry.path,
        files=[entry.path],
        completed=not entry.name.endswith(IN_PROGRESS),
        rolling=False,
        name_id=name_id_of(entry.name),
        modification_time_ms=entry.mtime_ms,
        size=entry.size,
        fs=fs,
    )


def _rolling(
    folder: StoreEntry, children: list[StoreEntry], fs: LogFS, missing_status_in_progress: bool
) -> LogSource:
    p = folder.path
    if not folder.name.startswith(ROLLING_DIR_PREFIX):
        raise EventLogError(
            f"{p}: a folder that is not a rolling event log ({ROLLING_DIR_PREFIX}*)"
        )
    entries = [e for e in children if not e.is_dir and not e.name.startswith(".")]
    events = [e for e in entries if e.name.startswith(EVENTS_PREFIX)]
    status = [e for e in entries if e.name.startswith(APPSTATUS_PREFIX)]
    if not events:
        raise EventLogError(f"{p}: rolling event log folder without an events_ file")
    notes: list[str] = []
    if not status:
        if not missing_status_in_progress:
            raise EventLogError(
                f"{p}: rolling event log folder without its appstatus_ marker "
                "(Spark's reader refuses such a folder)"
            )
        notes.append("no appstatus_ marker: treated as in progress")
        completed = False
    else:
        completed = not status[0].name.endswith(IN_PROGRESS)
    events.sort(key=lambda e: _event_file_index(e.name))
    compact = [i for i, e in enumerate(events) if e.name.endswith(COMPACTED)]
    if compact:
        events = events[compact[-1] :]
    for e in events:
        codec_of(e.name)
    return LogSource(
        path=p,
        files=[e.path for e in events],
        completed=completed,
        rolling=True,
        name_id=name_id_of(folder.name),
        modification_time_ms=events[-1].mtime_ms,
        size=sum(e.size for e in events),
        notes=notes,
        fs=fs,
    )


def is_candidate(entry: StoreEntry) -> bool:
    """Whether a folder entry may be an event log (hidden entries, ``.crc`` files and folders
    other than rolling logs are not), as the SHS scans ``spark.history.fs.logDirectory``."""
    if entry.name.startswith(".") or entry.name.endswith(".crc"):
        return False
    return not entry.is_dir or entry.name.startswith(ROLLING_DIR_PREFIX)


def discover(root: str, fs: LogFS | None = None) -> list[LogSource]:
    """Every event log directly under ``root``; logs that cannot be opened (say, a rolling
    folder without its marker) are left out."""
    fs = fs or LocalFS()
    out = []
    for entry in sorted(fs.entries(str(root)), key=lambda e: e.name):
        if not is_candidate(entry):
            continue
        try:
            out.append(source_of(entry, fs))
        except EventLogError:
            continue
    return out


@dataclass
class ReadStats:
    """What reading a log met besides events."""

    lines: int = 0
    bytes: int = 0
    truncated_last_line: bool = False
    truncated_stream: bool = False
    skipped_lines: list[str] = field(default_factory=list)


def iter_events(source: LogSource, stats: ReadStats | None = None) -> Iterator[dict[str, Any]]:
    """Decoded JSON events of a log, file after file, line by line."""
    stats = stats if stats is not None else ReadStats()
    n_files = len(source.files)
    for fi, path in enumerate(source.files):
        last_file = fi == n_files - 1
        yield from _iter_file(source, path, stats, last_file)


def _iter_file(source: LogSource, path: str, stats: ReadStats, last_file: bool) -> Iterator[Any]:
    name = path.rsplit("/", 1)[-1]
    completed = source.completed
    codec = codec_of(name)
    try:
        raw = source.fs.open(path)
    except OSError as exc:
        raise EventLogError(f"{path}: cannot read: {exc}") from None
    stream = open_decompressed(raw, codec)
    buffered: Any = io.BufferedReader(stream, READ_BUFFER) if codec else raw  # type: ignore[type-var]
    lineno = 0
    pending: bytes | None = None  # the previous line, parsed only once we know whether it is last
    try:
        while True:
            try:
                line = buffered.readline()
            except TruncatedStream:
                stats.truncated_stream = True
                line = b""
            except CodecError as exc:
                raise EventLogError(f"{path}: {exc}") from None
            except OSError as exc:
                raise EventLogError(f"{path}: read failed: {exc}") from None
            if pending is not None:
                is_last = not line
                event = _parse(pending, path, lineno, stats, is_last, last_file or not completed)
                if event is not None:
                    yield event
            if not line:
                break
            lineno += 1
            stats.lines += 1
            stats.bytes += len(line)
            pending = line
    finally:
        buffered.close()


def _parse(
    line: bytes, path: str, lineno: int, stats: ReadStats, is_last: bool, may_truncate: bool
) -> Any:
    text = line.strip()
    if not text:
        return None
    try:
        event = _loads(text)
    except _JSONError:
        if is_last and may_truncate:
            stats.truncated_last_line = True
            stats.skipped_lines.append(f"{path.rsplit('/', 1)[-1]}:{lineno}")
            return None
        raise EventLogError(f"{path}: line {lineno} is not a JSON event: {text[:80]!r}") from None
    if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
        raise EventLogError(f"{path}: line {lineno} is not a Spark listener event")
    return event
