"""An event-log source: a folder (or fsspec URL) of Spark event logs fetched like a server.

A run scans the folder (names, sizes, modification times only: nothing is decompressed), keeps
the latest attempt of each application, leaves out logs still in progress (``.inprogress`` file,
or a rolling folder whose ``appstatus_`` marker says so or is missing), and plans every log whose
(size, modification time) differs from the ``eventlog_file`` row its last read left. Each planned
log is replayed in a worker thread and goes through the fetcher's own request plan, parse and
load (``fetcher.job``): the applications read by then are loaded together in one transaction,
which also writes each log's ``eventlog_file`` row and its extras (every task, the stage DAG). A log that cannot be stored
(unreadable, truncated, no end event) is a ``fetch_failure`` keyed by its application and
modification time, given up after ``fetcher.max_app_failures`` like any application.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session, sessionmaker

from fetcher.eventlog.bundle import LogBundle, read_bundle
from fetcher.eventlog.read.files import EventLogError, LogSource, is_candidate, source_of
from fetcher.eventlog.read.fs import LogFS, LogStoreError, StoreEntry, open_store
from fetcher.parse.app import AppBundle
from fetcher.parse.entry import AppEntry
from fetcher.shs.client import ShsStopped, ShsUnreachable
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.db import dialect_insert, now_ms
from sparkscope.models.eventlog import EventLogFile, StageParent, StageTaskTimes
from sparkscope.models.fetch import FetchFailure

if TYPE_CHECKING:
    from fetcher.options import FetchOptions, ServerResult

log = logging.getLogger("sparkscope.fetch")


def split_name_id(name_id: str) -> tuple[str, str | None]:
    """``<appId>[_<attemptId>]`` of a log name -> (app id, attempt id), as far as a name tells
    (YARN ids hold two underscores of their own; the events have the authoritative ids)."""
    own = 2 if name_id.startswith("application_") else 0
    head, sep, tail = name_id.rpartition("_")
    if sep and tail.isdigit() and head.count("_") >= own:
        return head, tail
    return name_id, None


@dataclass(frozen=True)
class PlannedLog:
    """A log the run reads, and the entry the job follows it by until it is read."""

    source: LogSource
    entry: AppEntry


class EventLogSource:
    """A folder of event logs standing where the fetcher expects a History Server client."""

    def __init__(self, server: ServerConfig, fetcher_config: FetcherConfig) -> None:
        self.location = server.event_logs or server.url
        self.fetcher_config = fetcher_config
        self.requests = 0
        self.bytes = 0
        self._lock = threading.Lock()
        self._logs: dict[tuple[str, str], LogSource] = {}
        self._planned_as: dict[str, tuple[str, str]] = {}  # log path -> the key it was planned by
        self._fs: LogFS | None = None
        self._root = ""
        self._stopped: str | None = None

    def stop(self, reason: str) -> None:
        """Read no more logs: every later :meth:`fetch`, in any thread, raises ShsStopped."""
        self._stopped = reason

    # -- scan ----------------------------------------------------------------------------------

    def scan(self) -> list[LogSource]:
        """Every completed log under the location, latest attempt of each application only."""
        try:
            if self._fs is None:
                self._fs, self._root = open_store(self.location)
            entries = self._fs.entries(self._root)
        except (OSError, LogStoreError) as exc:
            raise ShsUnreachable(self.location, f"cannot list the event logs: {exc}") from None
        latest: dict[str, tuple[int, LogSource]] = {}
        for e in sorted(entries, key=lambda x: x.name):
            if not is_candidate(e):
                continue
            src = self._source(e)
            if src is None or not src.completed:
                continue
            app_id, attempt = split_name_id(src.name_id)
            rank = int(attempt) if attempt is not None else -1
            have = latest.get(app_id)
            if have is None or rank > have[0]:
                latest[app_id] = (rank, src)
        return [s for _, s in latest.values()]

    def _source(self, entry: StoreEntry) -> LogSource | None:
        assert self._fs is not None
        try:
            # A rolling folder without its marker is in progress (Spark's reader refuses it).
            return source_of(entry, self._fs, missing_status_in_progress=True)
        except EventLogError as exc:
            log.debug("not an event log, left out: %s", exc)
            return None
        except OSError as exc:
            log.warning("cannot list %s: %s", entry.path, exc)
            return None

    # -- plan ----------------------------------------------------------------------------------

    def plan(
        self,
        factory: sessionmaker[Session],
        server_id: int,
        fetcher_config: FetcherConfig,
        opts: FetchOptions,
        result: ServerResult,
    ) -> list[AppEntry]:
        """The logs to read this run, oldest modification first."""
        logs = self.scan()
        if opts.since_ms is not None:
            logs = [s for s in logs if s.modification_time_ms >= opts.since_ms]
        logs.sort(key=lambda s: (s.modification_time_ms, s.path))
        if opts.limit is not None:
            logs = logs[-opts.limit :]
        with factory() as session:
            marks = {
                m.path: m
                for m in session.scalars(
                    select(EventLogFile).where(EventLogFile.server_id == server_id)
                )
            }
            failures = {
                (f.app_id, f.attempt_id): f
                for f in session.scalars(
                    select(FetchFailure).where(FetchFailure.server_id == server_id)
                )
            }
        if opts.app_ids:
            wanted = set(opts.app_ids)
            logs = [
                s
                for s in logs
                if split_name_id(s.name_id)[0] in wanted
                or (s.path in marks and marks[s.path].app_id in wanted)
            ]
        result.seen = len(logs)
        todo: list[AppEntry] = []
        for src in logs:
            entry = placeholder_entry(src, marks.get(src.path))
            mark = marks.get(src.path)
            unchanged = (
                mark is not None
                and mark.size == src.size
                and mark.mtime_ms == src.modification_time_ms
            )
            f = failures.get(entry.key)
            if unchanged and mark is not None and mark.state == "loaded" and not opts.app_ids:
                result.skipped += 1
                continue
            if (
                f is not None
                and f.failures >= fetcher_config.max_app_failures
                and f.last_updated_ms == src.modification_time_ms
            ):
                result.gave_up.append(entry.app_id)
                result.skipped += 1
                continue
            self._logs[entry.key] = src
            self._planned_as[src.path] = entry.key
            todo.append(entry)
        return todo

    # -- one log -------------------------------------------------------------------------------

    def fetch(
        self,
        _client: object,
        entry: AppEntry,
        fetcher_config: FetcherConfig,
        redaction: re.Pattern[str],
    ) -> AppBundle:
        """Read one planned log into its bundle (the job's worker calls it)."""
        if self._stopped is not None:
            raise ShsStopped(self.location, self._stopped)
        src = self._logs[entry.key]
        bundle = read_bundle(src, fetcher_config, redaction)
        with self._lock:
            self.requests += 1
            self.bytes += bundle.bytes_read
        return bundle

    def loaded(self, session: Session, server_id: int, app_pk: int, bundle: AppBundle) -> None:
        """In the application's load transaction: its extras and the log's watermark row."""
        assert isinstance(bundle, LogBundle)
        store_extras(session, app_pk, bundle)
        planned = self._planned_as.get(bundle.log_path)
        if planned is not None and planned != bundle.entry.key:
            # failures were recorded under the ids the log's name gave; the events' ids win
            session.execute(
                delete(FetchFailure).where(
                    FetchFailure.server_id == server_id,
                    FetchFailure.app_id == planned[0],
                    FetchFailure.attempt_id == planned[1],
                )
            )
        mark_log(
            session,
            server_id,
            bundle.log_path,
            bundle.log_size,
            bundle.log_mtime_ms,
            bundle.entry.key,
            "loaded",
        )

    def failed(self, session: Session, server_id: int, entry: AppEntry) -> None:
        """In the failure's transaction: the log is recorded as read and failed at this size."""
        src = self._logs.get(entry.key)
        if src is not None:
            mark_log(
                session,
                server_id,
                src.path,
                src.size,
                src.modification_time_ms,
                entry.key,
                "failed",
            )


def placeholder_entry(src: LogSource, mark: EventLogFile | None) -> AppEntry:
    """The entry a planned log is known by before it is read: its ids from the last read (when
    the log was read before) or its name, its modification time as ``lastUpdated``."""
    if mark is not None:
        app_id, attempt = mark.app_id, mark.attempt_id or None
    else:
        app_id, attempt = split_name_id(src.name_id)
    return AppEntry(
        app_id=app_id,
        attempt_id=attempt,
        name=src.name,
        user=None,
        start_time_ms=None,
        end_time_ms=src.modification_time_ms,
        duration_ms=None,
        last_updated_ms=src.modification_time_ms,
        completed=True,
        spark_version=None,
        raw={"log": src.path},
    )


def mark_log(
    session: Session,
    server_id: int,
    path: str,
    size: int,
    mtime_ms: int,
    key: tuple[str, str],
    state: str,
) -> None:
    """Upsert one log's ``eventlog_file`` row (inside the caller's transaction)."""
    values = {
        "size": size,
        "mtime_ms": mtime_ms,
        "app_id": key[0][:255],
        "attempt_id": key[1][:64],
        "state": state,
        "read_at_ms": now_ms(),
    }
    stmt = dialect_insert(session, EventLogFile).values(server_id=server_id, path=path, **values)
    session.execute(stmt.on_conflict_do_update(index_elements=["server_id", "path"], set_=values))


def store_extras(session: Session, app_pk: int, bundle: LogBundle) -> None:
    """Replace the application's event-log-only rows (the loader already cleared them when it
    replaced the application; cleared again here for a first load after another source)."""
    for table in (StageTaskTimes, StageParent):
        session.execute(delete(table).where(table.application_id == app_pk))
    if bundle.stage_tasks:
        session.execute(
            insert(StageTaskTimes),
            [
                {
                    "application_id": app_pk,
                    "stage_id": s.stage_id,
                    "attempt_id": s.attempt_id,
                    "num_tasks": s.num_tasks,
                    "num_stored": s.num_stored,
                    "first_launch_ms": s.first_launch_ms,
                    "format": s.format,
                    "data": s.data,
                }
                for s in bundle.stage_tasks
            ],
        )
    edges = [
        {"application_id": app_pk, "stage_id": sid, "parent_id": p}
        for sid, parents in bundle.stage_parents.items()
        for p in sorted(set(parents))
    ]
    if edges:
        session.execute(insert(StageParent), edges)
