"""The dashboard: fleet totals, fetch status, severities and waste rankings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from heuristics.base import Severity
from sparkscope.catalogs import SEVERITY_NAMES, severity_name
from sparkscope.models import AnalysisResult, Application, FetchRun, HistoryServer
from sparkscope.queries.search import ROW_COLUMNS, AppRow, app_row


@dataclass(frozen=True)
class Ranked:
    """One line of a top-N list."""

    label: str
    value: float
    count: int
    app: AppRow | None = None


@dataclass(frozen=True)
class FetchStatus:
    """The last fetch run of one server."""

    started_at_ms: int
    finished_at_ms: int | None
    status: str
    apps_loaded: int
    apps_failed: int
    error: str | None


@dataclass
class Dashboard:
    """The landing page's figures."""

    totals: dict[str, int]
    newest: AppRow | None
    fetch_runs: list[tuple[str, FetchStatus | None]]
    severity_day: dict[str, int]
    severity_week: dict[str, int]
    top_findings: list[tuple[str, int]]
    days: int
    top_wasted_apps: list[Ranked]
    top_wasted_users: list[Ranked]
    top_wasted_queues: list[Ranked]


def _severity_counts(
    session: Session, day_start_ms: int, week_start_ms: int
) -> tuple[dict[str, int], dict[str, int]]:
    # One pass over the week's applications gives both the day's and the week's counts.
    rows = session.execute(
        select(
            Application.worst_severity,
            func.count().filter(Application.start_time_ms >= day_start_ms),
            func.count(),
        )
        .where(Application.start_time_ms >= week_start_ms)
        .group_by(Application.worst_severity)
    )
    day = {name: 0 for name in (*SEVERITY_NAMES, "unknown")}
    week = dict(day)
    for level, n_day, n_week in rows:
        day[severity_name(level)] += n_day
        week[severity_name(level)] += n_week
    return day, week


def _top_wasted_by(session: Session, col: Any, since_ms: int, limit: int) -> list[Ranked]:
    rows = session.execute(
        select(col, func.sum(Application.wasted_core_hours), func.count())
        .where(Application.start_time_ms >= since_ms)
        .where(Application.wasted_core_hours.is_not(None))
        .group_by(col)
        .order_by(func.sum(Application.wasted_core_hours).desc())
        .limit(limit)
    )
    return [Ranked(label or "(none)", float(total or 0), n) for label, total, n in rows]


def dashboard(session: Session, now_ms: int, days: int = 7, top: int = 10) -> Dashboard:
    """Totals, newest application, fetch status, severities and waste rankings."""
    sums = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(Application.num_executors), 0),
            func.coalesce(func.sum(Application.num_jobs), 0),
            func.coalesce(func.sum(Application.num_stages), 0),
            func.coalesce(func.sum(Application.num_tasks), 0),
        )
    ).one()
    totals = dict(
        zip(("applications", "executors", "jobs", "stages", "tasks"), map(int, sums), strict=True)
    )
    newest_row = session.execute(
        select(*ROW_COLUMNS)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.start_time_ms.is_not(None))
        .order_by(Application.start_time_ms.desc())
        .limit(1)
    ).first()
    servers = session.scalars(select(HistoryServer).order_by(HistoryServer.name)).all()
    fetch_runs: list[tuple[str, FetchStatus | None]] = []
    for s in servers:
        run = session.execute(
            select(
                FetchRun.started_at_ms,
                FetchRun.finished_at_ms,
                FetchRun.status,
                FetchRun.apps_loaded,
                FetchRun.apps_failed,
                FetchRun.error,
            )
            .where(FetchRun.server_id == s.id)
            .order_by(FetchRun.started_at_ms.desc())
            .limit(1)
        ).first()
        # Plain values: the dashboard may be cached and read after this session is closed.
        fetch_runs.append((s.name, FetchStatus(*run) if run else None))
    day_ms, week_ms = 86_400_000, 7 * 86_400_000
    period_start = now_ms - days * day_ms
    week_start = now_ms - week_ms
    severity_day, severity_week = _severity_counts(session, now_ms - day_ms, week_start)
    top_findings = [
        (h, n)
        for h, n in session.execute(
            select(AnalysisResult.heuristic, func.count())
            .join(Application, Application.id == AnalysisResult.application_id)
            .where(Application.start_time_ms >= week_start)
            .where(AnalysisResult.severity > int(Severity.NONE))
            .group_by(AnalysisResult.heuristic)
            .order_by(func.count().desc())
            .limit(top)
        )
    ]
    wasted_rows = session.execute(
        select(*ROW_COLUMNS, Application.wasted_core_hours)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.start_time_ms >= period_start)
        .where(Application.wasted_core_hours.is_not(None))
        .order_by(Application.wasted_core_hours.desc())
        .limit(top)
    ).all()
    return Dashboard(
        totals=totals,
        newest=app_row(newest_row) if newest_row else None,
        fetch_runs=fetch_runs,
        severity_day=severity_day,
        severity_week=severity_week,
        top_findings=top_findings,
        days=days,
        top_wasted_apps=[
            Ranked(r.name, float(r.wasted_core_hours), 1, app_row(r)) for r in wasted_rows
        ],
        top_wasted_users=_top_wasted_by(session, Application.spark_user, period_start, top),
        top_wasted_queues=_top_wasted_by(session, Application.queue, period_start, top),
    )
