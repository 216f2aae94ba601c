"""One application attempt read from its event log, answering the SHS REST paths."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote

from fetcher.eventlog.extras import executor_timeline, stage_dag, task_records
from fetcher.eventlog.formats import shs_date
from fetcher.eventlog.params import (
    DEFAULT_QUANTILES,
    TASK_SUMMARY_QUANTILES,
    NotFound,
    parse_quantiles,
)
from fetcher.eventlog.read.files import LogSource, ReadStats, iter_events, open_log
from fetcher.eventlog.read.fs import LogFS
from fetcher.eventlog.replay.status import StatusReplay
from fetcher.eventlog.rest import overview, stages, tasks
from fetcher.eventlog.rest.summaries import task_summary
from fetcher.eventlog.sql import answers
from fetcher.eventlog.sql.listener import SQLReplay

API_PREFIX = "api/v1/"


class ReplayedApp:
    """The replayed state of one application attempt.

    ``rest(path_with_query)`` answers like ``GET <shs>/api/v1/<path_with_query>``; ``NotFound`` and
    ``BadRequest`` stand for the SHS's 404 and 400.
    """

    def __init__(
        self, source: LogSource, status: StatusReplay, sql: SQLReplay, stats: ReadStats
    ) -> None:
        self.source = source
        self.status = status
        self.sql = sql
        self.stats = stats
        self.redaction = overview.DEFAULT_REDACTION

    # -- identity ------------------------------------------------------------------------------

    @property
    def app_id(self) -> str:
        return self.status.app.app_id or self.source.name_id

    @property
    def attempt_id(self) -> str | None:
        return self.status.app.attempt_id

    @property
    def truncated(self) -> bool:
        """The log ended inside a line or a compressed block (skipped, not an error)."""
        return self.stats.truncated_last_line or self.stats.truncated_stream

    # -- listing ---------------------------------------------------------------------------------

    def attempt_info(self) -> dict[str, Any]:
        """One ``attempts`` entry as FsHistoryProvider's listing has it."""
        a = self.status.app
        start = a.start_time or 0
        completed = a.completed
        end = a.end_time if completed else -1
        updated = self.source.modification_time_ms
        d: dict[str, Any] = {}
        if a.attempt_id is not None:
            d["attemptId"] = a.attempt_id
        d.update(
            {
                "startTime": shs_date(start),
                "endTime": shs_date(end),
                "lastUpdated": shs_date(updated),
                "duration": end - start if completed else 0,
                "sparkUser": a.spark_user,
                "completed": completed,
                "appSparkVersion": a.spark_version,
                "startTimeEpoch": start,
                "endTimeEpoch": end,
                "lastUpdatedEpoch": updated,
            }
        )
        if d["sparkUser"] is None:
            del d["sparkUser"]
        if d["appSparkVersion"] is None:
            del d["appSparkVersion"]
        return d

    def application_info(self) -> dict[str, Any]:
        """``/applications/{id}`` for this attempt alone (see :func:`listing` for several)."""
        return {"id": self.app_id, "name": self.status.app.name, "attempts": [self.attempt_info()]}

    # -- event-log-only extras ----------------------------------------------------------------

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """Every task of the application, compactly (see :func:`eventlog.extras.task_records`)."""
        return task_records(self.status)

    @property
    def stage_parents(self) -> dict[int, list[int]]:
        """Stage id -> parent stage ids (the real DAG, skipped stages included)."""
        return stage_dag(self.status)

    @property
    def executor_timeline(self) -> list[dict[str, Any]]:
        """Executor add/remove times, as the log has them."""
        return executor_timeline(self.status)

    # -- REST --------------------------------------------------------------------------------------

    def rest(self, path_with_query: str) -> Any:
        path, _, query = path_with_query.partition("?")
        path = path.strip("/")
        path = path.removeprefix(API_PREFIX)
        params = parse_qsl(query, keep_blank_values=True)
        parts = [unquote(p) for p in path.split("/")]
        if len(parts) < 2 or parts[0] != "applications" or parts[1] != self.app_id:
            raise NotFound(f"unknown app: {path}")
        rest_parts = parts[2:]
        if self.attempt_id is not None:
            if not rest_parts or rest_parts[0] != self.attempt_id:
                if rest_parts:
                    raise NotFound(f"unknown attempt for app {self.app_id}")
            else:
                rest_parts = rest_parts[1:]
        return self._route(rest_parts, params)

    def get(self, path: str, params: list[tuple[str, str]] | None = None) -> Any:
        """``rest`` with the fetcher's ``(path, params)`` request form."""
        query = "&".join(f"{k}={v}" for k, v in params or [])
        return self.rest(path + ("?" + query if query else ""))

    def _route(self, p: list[str], params: list[tuple[str, str]]) -> Any:
        r = self.status
        one = dict(params)
        multi: dict[str, list[str]] = {}
        for k, v in params:
            multi.setdefault(k, []).append(v)
        if not p:
            return self.application_info()
        head = p[0]
        if head == "environment" and len(p) == 1:
            return overview.environment(r, self.redaction)
        if head == "allexecutors" and len(p) == 1:
            return overview.executors(r, active_only=False)
        if head == "executors" and len(p) == 1:
            return overview.executors(r, active_only=True)
        if head == "jobs":
            if len(p) == 1:
                return overview.jobs(r, multi.get("status", []))
            job = r.jobs.get(_int(p[1]))
            if job is None or len(p) > 2:
                raise NotFound(f"unknown job: {p[1]}")
            return overview.job_json(job)
        if head == "stages":
            return self._stages(p[1:], one, multi)
        if head == "sql":
            details = _bool(one.get("details", "true"))
            plan = _bool(one.get("planDescription", "true"))
            if len(p) == 1:
                return answers.executions(
                    self.sql,
                    _int(one.get("offset", "0")),
                    _int(one.get("length", "20")),
                    details,
                    plan,
                    now=self.status.last_update_time,
                )
            return answers.execution(
                self.sql, _int(p[1]), details, plan, now=self.status.last_update_time
            )
        raise NotFound("/".join(p))

    def _stages(self, p: list[str], one: dict[str, str], multi: dict[str, list[str]]) -> Any:
        r = self.status
        with_summaries = _bool(one.get("withSummaries", "false"))
        quantiles = parse_quantiles(one.get("quantiles", DEFAULT_QUANTILES))
        task_status = multi.get("taskStatus", [])
        if not p:
            return stages.stage_list(
                r,
                multi.get("status", []),
                details=_bool(one.get("details", "false")),
                task_statuses=task_status,
                with_summaries=with_summaries,
                quantiles=quantiles,
            )
        stage_id = _int(p[0])
        if len(p) == 1:
            attempts = [r.stages[k] for k in sorted(r.stages) if k[0] == stage_id]
            if not attempts:
                raise NotFound(f"unknown stage: {stage_id}")
            return [
                stages.stage_json(
                    r,
                    st,
                    details=_bool(one.get("details", "true")),
                    task_statuses=task_status,
                    with_summaries=with_summaries,
                    quantiles=quantiles,
                )
                for st in attempts
            ]
        key = (stage_id, _int(p[1]))
        st = r.stages.get(key)
        if st is None:
            raise NotFound(
                f"unknown attempt for stage {stage_id}.  Found attempts: "
                f"[{','.join(str(k[1]) for k in sorted(r.stages) if k[0] == stage_id)}]"
            )
        if len(p) == 2:
            return stages.stage_json(
                r,
                st,
                details=_bool(one.get("details", "true")),
                task_statuses=task_status,
                with_summaries=with_summaries,
                quantiles=quantiles,
            )
        if p[2] == "taskList" and len(p) == 3:
            return tasks.task_list(
                r,
                key,
                _int(one.get("offset", "0")),
                _int(one.get("length", "20")),
                tasks.parse_sort(one.get("sortBy")),
                multi.get("status", []),
            )
        if p[2] == "taskSummary" and len(p) == 3:
            qs = parse_quantiles(one.get("quantiles", TASK_SUMMARY_QUANTILES))
            summary = task_summary(r, key, qs)
            if summary is None:
                raise NotFound(f"No tasks reported metrics for {key[0]} / {key[1]} yet.")
            return summary
        raise NotFound("/".join(p))


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise NotFound(f"not a number: {text!r}") from None


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"


def read_application(
    path: str, *, missing_status_in_progress: bool = False, fs: LogFS | None = None
) -> ReplayedApp:
    """Read and replay one event log (a file or an ``eventlog_v2_`` folder)."""
    source = open_log(str(path), missing_status_in_progress=missing_status_in_progress, fs=fs)
    return replay_source(source)


def replay_source(source: LogSource) -> ReplayedApp:
    """Replay the events of one log into the state the SHS would serve."""
    status = StatusReplay(last_update_time=source.modification_time_ms)
    sql = SQLReplay()
    stats = ReadStats()
    handle_status = status.handle
    handle_sql = sql.handle
    sql_events = sql.interesting
    for event in iter_events(source, stats):
        handle_status(event)
        if event["Event"] in sql_events:
            handle_sql(event)
    status.finish()
    sql.finish()
    return ReplayedApp(source, status, sql, stats)
