"""One event log read into what the loader stores: the same bundle of rows the History Server
path builds (the fetcher's own request plan run over the replayed log), plus what only the log
holds, encoded where it is read (a worker thread, or a Spark executor for ``ingest --spark``).

The extras are kept apart from the SHS-shaped rows: the loader writes the bundle as for any
server, and :func:`fetcher.eventlog.source.store_extras` writes the extras in the same
transaction.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from typing import Any

from fetcher.eventlog.app import ReplayedApp, replay_source
from fetcher.eventlog.client import ReplayedAppClient
from fetcher.eventlog.read.files import EventLogError, LogSource
from fetcher.eventlog.replay import metrics as mx
from fetcher.parse.app import AppBundle
from fetcher.parse.entry import parse_app_entry
from fetcher.shs.client import ShsBadResponse
from fetcher.shs.request_plan import fetch_app
from sparkscope.config.loader import FetcherConfig
from sparkscope.models.eventlog import (
    MAX_TASKS_PER_STAGE,
    STATUS_CODES,
    TASK_TIMES_FORMAT,
    encode_task_times,
)


@dataclass
class LogStageTasks:
    """The encoded tasks of one stage attempt (a ``stage_task_times`` row without its app)."""

    stage_id: int
    attempt_id: int
    num_tasks: int
    num_stored: int
    first_launch_ms: int | None
    data: bytes
    format: str = TASK_TIMES_FORMAT


@dataclass
class LogBundle(AppBundle):
    """An :class:`AppBundle` read from an event log, with the log's own extras."""

    log_path: str = ""
    log_size: int = 0
    log_mtime_ms: int = 0
    bytes_read: int = 0
    stage_tasks: list[LogStageTasks] = field(default_factory=list)
    #: stage id -> parent stage ids, every stage the log names (skipped ones too)
    stage_parents: dict[int, list[int]] = field(default_factory=dict)
    #: (stage id, attempt) -> executor run times (ms) of the tasks that succeeded, ascending:
    #: what the what-if simulation replays instead of rebuilding tasks from quantiles
    task_run_ms: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)


def read_bundle(
    source: LogSource, fetcher_config: FetcherConfig, redaction: re.Pattern[str]
) -> LogBundle:
    """Replay one completed log and build its bundle; ShsBadResponse says why it cannot be
    stored (unreadable, truncated, never finished)."""
    try:
        app = replay_source(source)
    except EventLogError as exc:
        raise ShsBadResponse(source.path, f"unreadable event log: {exc}") from None
    except OSError as exc:
        raise ShsBadResponse(source.path, f"cannot read the event log: {exc}") from None
    if app.truncated:
        where = ", ".join(app.stats.skipped_lines) or "its last compressed block"
        raise ShsBadResponse(
            source.path,
            f"truncated event log: cut at {where} (a completed log must end whole; the History "
            "Server refuses such a log too)",
        )
    entry = parse_app_entry(app.application_info())
    if not entry.completed:
        raise ShsBadResponse(
            source.path, "the log is complete but has no application end event (driver killed?)"
        )
    plain = fetch_app(ReplayedAppClient(app), entry, fetcher_config, redaction)
    bundle = LogBundle(
        **vars(plain),
        log_path=source.path,
        log_size=source.size,
        log_mtime_ms=source.modification_time_ms,
        bytes_read=app.stats.bytes,
    )
    known = {(s["stage_id"], s["attempt_id"]) for s in bundle.stages}
    add_extras(bundle, app, known)
    return bundle


def add_extras(bundle: LogBundle, app: ReplayedApp, known: set[tuple[int, int]]) -> None:
    """Every task of the stored stage attempts (encoded), the DAG and the what-if run times.

    A stage's tasks are gathered column by column (a few int64 arrays, not a tuple per task), so
    a stage of 100,000 tasks costs a few MB here."""
    r = app.status
    strings = r.strings
    for key in sorted(known):
        table = r.tasks.get(key)
        if table is None or table.count == 0:
            continue
        launch, packed, ok = array("q"), [], array("q")
        executors: dict[str, int] = {}
        for t in table.iter_rows():
            launch.append(t[mx.T_LAUNCH])
            packed.append(_row(t, strings, executors))
            if t[mx.T_STATUS] == mx.S_SUCCESS and t[mx.T_FLAGS] & mx.F_HAS_METRICS:
                ok.append(t[mx.T_METRICS + mx.RUN])
        total = len(launch)
        order = sorted(range(total), key=lambda i: (launch[i], packed[i][0]))[:MAX_TASKS_PER_STAGE]
        first = launch[order[0]]
        rows = [_offset(packed[i], launch[i] - first) for i in order]
        bundle.stage_tasks.append(
            LogStageTasks(
                key[0], key[1], total, len(rows), first, encode_task_times(list(executors), rows)
            )
        )
        if ok:
            bundle.task_run_ms[key] = tuple(sorted(ok))
    bundle.stage_parents = {sid: list(p) for sid, p in sorted(app.stage_parents.items())}


def _offset(row: tuple[int, ...], launch_offset: int) -> tuple[int, ...]:
    return (*row[:3], launch_offset, *row[4:])


def _row(t: tuple[int, ...], strings: list[str], executors: dict[str, int]) -> Any:
    m = t[mx.T_METRICS :]
    has = bool(t[mx.T_FLAGS] & mx.F_HAS_METRICS)
    exec_id = strings[t[mx.T_EXEC]]
    status = STATUS_CODES.get(mx.STATUSES[t[mx.T_STATUS]], 3)
    return (
        t[mx.T_ID],
        t[mx.T_INDEX],
        t[mx.T_ATTEMPT],
        0,  # the launch offset, set once the stage's first launch is known
        t[mx.T_DURATION],
        m[mx.RUN] if has else -1,
        m[mx.CPU] // 1_000_000 if has else -1,
        m[mx.GC] if has else -1,
        m[mx.SR_WAIT] if has else -1,
        executors.setdefault(exec_id, len(executors)),
        status,
        1 if t[mx.T_FLAGS] & mx.F_SPECULATIVE else 0,
    )
