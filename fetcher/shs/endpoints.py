"""Every Spark History Server REST path the fetcher uses is built here and nowhere else.

Each function returns ``(path, params)`` relative to ``<server>/api/v1``; params is a list of
pairs because the SHS takes repeated keys (``status=complete&status=failed``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

Params = list[tuple[str, str]]
Request = tuple[str, Params]

#: All 21 points of the 0.05 grid; the SHS caches task summaries per quantile set.
QUANTILES: tuple[float, ...] = tuple(round(i * 0.05, 2) for i in range(21))
QUANTILES_PARAM = ",".join(f"{q:.2f}" for q in QUANTILES)


def shs_time(epoch_ms: int) -> str:
    """Format epoch ms the way the SHS date filters accept (``2026-11-01T10:00:00.000GMT``)."""
    dt = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}GMT"


def version() -> Request:
    """The server's Spark version."""
    return "version", []


def applications(
    min_end_ms: int | None = None, max_end_ms: int | None = None, limit: int | None = None
) -> Request:
    """Completed applications, newest end time first, optionally within an end-time window."""
    params: Params = [("status", "completed")]
    if min_end_ms is not None:
        params.append(("minEndDate", shs_time(min_end_ms)))
    if max_end_ms is not None:
        params.append(("maxEndDate", shs_time(max_end_ms)))
    if limit is not None:
        params.append(("limit", str(limit)))
    return "applications", params


def segment(value: str) -> str:
    """One path segment for an id: every reserved character percent-encoded.

    ``quote`` leaves dots alone, and a segment that is only dots (``.``, ``..``) would be resolved
    away by the client or the server (``applications/../environment``); its dots are encoded too,
    so no id can address another resource.
    """
    text = quote(value, safe="")
    return text.replace(".", "%2E") if text.strip(".") == "" else text


def application(app_id: str) -> Request:
    """One application with all its attempts."""
    return f"applications/{segment(app_id)}", []


def _app(app_id: str, attempt_id: str | None) -> str:
    base = f"applications/{segment(app_id)}"
    return f"{base}/{segment(attempt_id)}" if attempt_id else base


def environment(app_id: str, attempt_id: str | None) -> Request:
    """Spark, Hadoop, system and metrics properties."""
    return f"{_app(app_id, attempt_id)}/environment", []


def all_executors(app_id: str, attempt_id: str | None) -> Request:
    """Every executor including dead ones (``/executors`` lists only live ones)."""
    return f"{_app(app_id, attempt_id)}/allexecutors", []


def jobs(app_id: str, attempt_id: str | None) -> Request:
    """All jobs."""
    return f"{_app(app_id, attempt_id)}/jobs", []


def stages_with_summaries(app_id: str, attempt_id: str | None) -> Request:
    """Stage attempts that ran, with task and executor quantile summaries (Spark >= 3.4).

    SKIPPED (and never-run PENDING) stages are left out: they have no task metrics.
    Older servers ignore the extra parameters and return plain stage totals.
    """
    params: Params = [
        ("status", "complete"),
        ("status", "failed"),
        ("status", "active"),
        ("withSummaries", "true"),
        ("quantiles", QUANTILES_PARAM),
    ]
    return f"{_app(app_id, attempt_id)}/stages", params


def task_summary(app_id: str, attempt_id: str | None, stage_id: int, stage_attempt: int) -> Request:
    """Task-metric quantiles of one stage attempt (fallback for servers before Spark 3.4)."""
    path = f"{_app(app_id, attempt_id)}/stages/{stage_id}/{stage_attempt}/taskSummary"
    return path, [("quantiles", QUANTILES_PARAM)]


def slowest_tasks(
    app_id: str, attempt_id: str | None, stage_id: int, stage_attempt: int, n: int
) -> Request:
    """The ``n`` tasks of a stage attempt with the longest run time."""
    path = f"{_app(app_id, attempt_id)}/stages/{stage_id}/{stage_attempt}/taskList"
    return path, [("offset", "0"), ("length", str(n)), ("sortBy", "-runtime")]


def failed_tasks_with_executors(
    app_id: str, attempt_id: str | None, stage_id: int, stage_attempt: int
) -> Request:
    """One stage attempt with only its failed tasks and its per-executor summary."""
    path = f"{_app(app_id, attempt_id)}/stages/{stage_id}/{stage_attempt}"
    return path, [("details", "true"), ("taskStatus", "FAILED")]


def sql_executions(app_id: str, attempt_id: str | None, offset: int, length: int) -> Request:
    """One page of SQL executions with their plan graphs (nodes, metrics, edges) and plan text."""
    params: Params = [
        ("details", "true"),
        ("planDescription", "true"),
        ("offset", str(offset)),
        ("length", str(length)),
    ]
    return f"{_app(app_id, attempt_id)}/sql", params


def request_key(path: str, params: Params) -> str:
    """A canonical text for a request, used to record and replay responses."""
    if not params:
        return path
    return path + "?" + "&".join(f"{k}={v}" for k, v in sorted(params))
