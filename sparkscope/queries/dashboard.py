"""The dashboard: fleet totals, fetch status, severities and waste rankings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import any_, func, literal_column, select
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.accounting import day_summary as summary
from sparkscope.db import is_postgres
from sparkscope.models.analysis import Analysis, AnalysisResult
from sparkscope.models.application import IMPACT_RANK_SQL, Application
from sparkscope.models.fetch import FetchRun, HistoryServer
from sparkscope.models.summary import DaySummary
from sparkscope.present.answer import finding_conf
from sparkscope.present.display import SEVERITY_NAMES, severity_name
from sparkscope.queries.search import ROW_COLUMNS, AppRow, Badge, app_row


@dataclass(frozen=True)
class Ranked:
    """One line of a top-N list."""

    label: str
    value: float
    count: int
    app: AppRow | None = None


@dataclass(frozen=True)
class WorstApp:
    """One of the period's costliest applications: its top finding and that finding's fix."""

    app: AppRow
    top: Badge | None
    fix: str
    conf: tuple[tuple[str, str], ...] = ()


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
    worst_day: list[WorstApp] = field(default_factory=list)


# The figures of a period come from the per-day summary (sparkscope.accounting.day_summary): its whole days, plus
# or minus the applications of the one day the period starts inside, whichever part of that day is
# smaller. Only that half day at most is read from the applications themselves.
DAY_MS = summary.DAY_MS
_EDGE_KEYS: dict[str, Any] = {
    "severity": Application.worst_severity,
    "user": Application.spark_user,
    "queue": Application.queue,
}


def _window(since_ms: int) -> tuple[int, int, int, int]:
    """(first summary day, edge start, edge end, sign): the applications started at or after
    ``since_ms`` are those of the summary's days from the first on, plus (sign 1) or minus
    (sign -1) those started in [edge start, edge end)."""
    day, offset = divmod(max(since_ms, 0), DAY_MS)
    if offset == 0:
        return day, 0, 0, 0
    if offset > DAY_MS // 2:
        return day + 1, since_ms, (day + 1) * DAY_MS, 1
    return day, day * DAY_MS, since_ms, -1


def _period_sums(session: Session, dimension: str, since_ms: int) -> dict[str, list[float]]:
    """Per key of a dimension, (applications or findings, wasted core-hours, applications with
    known waste) over the applications started at or after ``since_ms``."""
    first, lo, hi, sign = _window(since_ms)
    sums: dict[str, list[float]] = {}
    for key, *values in session.execute(
        select(
            DaySummary.key,
            func.sum(DaySummary.apps),
            func.sum(DaySummary.wasted_core_hours),
            func.sum(DaySummary.wasted_apps),
        )
        .where(DaySummary.dimension == dimension, DaySummary.day >= first)
        .group_by(DaySummary.key)
    ):
        sums[key] = [float(v or 0) for v in values]
    if not sign:
        return sums
    in_edge = (Application.start_time_ms >= lo, Application.start_time_ms < hi)
    if dimension == "heuristic":
        ids = select(Application.id).where(*in_edge)
        # PostgreSQL would join by hashing every finding; an array of the edge's ids makes it
        # look up only theirs.
        of_edge = (
            AnalysisResult.application_id == any_(func.array(ids.scalar_subquery()))
            if is_postgres(session)
            else AnalysisResult.application_id.in_(ids)
        )
        edge = (
            select(AnalysisResult.heuristic, func.count())
            .where(of_edge, AnalysisResult.severity > int(Severity.NONE))
            .group_by(AnalysisResult.heuristic)
        )
    else:
        col = _EDGE_KEYS[dimension]
        edge = (
            select(
                col,
                func.count(),
                func.sum(Application.wasted_core_hours),
                func.count(Application.wasted_core_hours),
            )
            .where(*in_edge)
            .group_by(col)
        )
    for value, *values in session.execute(edge):
        key = "" if value is None else str(value)
        acc = sums.setdefault(key, [0.0, 0.0, 0.0])
        for i, v in enumerate(values):
            acc[i] += sign * float(v or 0)
    return sums


def _severity_counts(session: Session, since_ms: int) -> dict[str, int]:
    counts = {name: 0 for name in (*SEVERITY_NAMES, "unknown")}
    for key, (n, _, _) in _period_sums(session, "severity", since_ms).items():
        counts[severity_name(int(key) if key else None)] += round(n)
    return counts


def _top_findings(session: Session, since_ms: int, limit: int) -> list[tuple[str, int]]:
    counts = [
        (heuristic, round(n))
        for heuristic, (n, _, _) in _period_sums(session, "heuristic", since_ms).items()
        if round(n) > 0
    ]
    return sorted(counts, key=lambda hn: (-hn[1], hn[0]))[:limit]


def _top_wasted_by(session: Session, dimension: str, since_ms: int, limit: int) -> list[Ranked]:
    ranked = [
        Ranked(key or "(none)", total, round(known))
        for key, (_, total, known) in _period_sums(session, dimension, since_ms).items()
        if round(known) > 0
    ]
    return sorted(ranked, key=lambda r: (-r.value, r.label))[:limit]


def worst_apps(session: Session, since_ms: int, limit: int = 10) -> list[WorstApp]:
    """The applications started since ``since_ms`` with a finding, costliest first (the impact
    of their costliest finding, then their worst severity), each with its top finding (the worst,
    the costliest among equals) and that finding's advice and settings, from its stored results
    document (one query: the rank index, then each row and its document by key)."""
    rows = session.execute(
        select(*ROW_COLUMNS, Analysis.results)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .outerjoin(Analysis, Analysis.application_id == Application.id)
        .where(Application.start_time_ms >= since_ms, Application.worst_severity > 0)
        .order_by(
            literal_column(IMPACT_RANK_SQL).desc(),
            Application.worst_severity.desc(),
            Application.start_time_ms.desc(),
            Application.id.desc(),
        )
        .limit(limit)
    ).all()
    out = []
    for r in rows:
        fired = _fired(r.results)
        badges = [Badge(f["name"], int(f["severity"]), str(f.get("title") or "")) for f in fired]
        top = fired[0] if fired else None
        out.append(
            WorstApp(
                app_row(r, badges),
                badges[0] if badges else None,
                str(top.get("advice") or "") if top else "",
                tuple(finding_conf(_Conf(top.get("conf")))) if top else (),
            )
        )
    return out


@dataclass(frozen=True)
class _Conf:
    conf: Any


def _fired(document: str | None) -> list[dict[str, Any]]:
    """The results above NONE of a stored results document, worst first and the costliest first
    among equals (as search's badges); [] when absent or unreadable."""
    try:
        results = orjson.loads(document) if document else []
    except orjson.JSONDecodeError:
        return []
    fired = [
        r
        for r in results
        if isinstance(r, dict)
        and isinstance(r.get("name"), str)
        and isinstance(r.get("severity"), int)
        and r["severity"] > 0
    ]

    def cost(r: dict[str, Any]) -> float:
        impact = r.get("impact")
        hours = impact.get("core_hours") if isinstance(impact, dict) else None
        return float(hours) if isinstance(hours, int | float) else -1.0

    return sorted(fired, key=lambda r: (-r["severity"], -cost(r), r["name"]))


def dashboard(session: Session, now_ms: int, days: int = 7, top: int = 10) -> Dashboard:
    """Totals, newest application, fetch status, severities and waste rankings."""
    sums = session.execute(
        select(
            func.coalesce(func.sum(DaySummary.apps), 0),
            func.coalesce(func.sum(DaySummary.executors), 0),
            func.coalesce(func.sum(DaySummary.jobs), 0),
            func.coalesce(func.sum(DaySummary.stages), 0),
            func.coalesce(func.sum(DaySummary.tasks), 0),
        ).where(DaySummary.dimension == "severity")
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
    period_start = now_ms - days * DAY_MS
    week_start = now_ms - 7 * DAY_MS
    wasted_rows = session.execute(
        select(*ROW_COLUMNS)
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
        severity_day=_severity_counts(session, now_ms - DAY_MS),
        severity_week=_severity_counts(session, week_start),
        top_findings=_top_findings(session, week_start, top),
        days=days,
        top_wasted_apps=[
            Ranked(r.name, float(r.wasted_core_hours), 1, app_row(r)) for r in wasted_rows
        ],
        top_wasted_users=_top_wasted_by(session, "user", period_start, top),
        top_wasted_queues=_top_wasted_by(session, "queue", period_start, top),
        worst_day=worst_apps(session, now_ms - DAY_MS, top),
    )
