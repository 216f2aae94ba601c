"""What happened to newly loaded applications, read from what the load and the predictions
stored: the alert events the rules are evaluated on (read-only).

Per application: each finding (its title, severity, impact, advice and suggested settings), a
regression verdict (with its causes), a failure (its last job failed; the cause is the line of the
error that names it), its cost against the recent median of its recurring key, and its duration
and its key's next-run forecast for the deadline trigger. Severity of the kinds that carry none of
their own: a failure is CRITICAL, a regression and a deadline SEVERE, a cost spike MODERATE.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.advisor.predict.features import recurring_key
from sparkscope.analysis.results import parse_document
from sparkscope.models.analysis import Analysis
from sparkscope.models.application import Application, Job, Stage, Task
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.notify.events import AlertEvent, Link
from sparkscope.present.columns import root_cause
from sparkscope.present.display import fmt_duration_ms, fmt_hours
from sparkscope.present.links import absolute, app_path, history_path

#: Earlier successful runs of a key whose median core-hours a cost is measured against.
COST_WINDOW = 10
FAILURE_FIX = (
    "Open the failed stages and task errors for the root cause (memory, lost executors, fetch "
    "failures or a bug in the job) and fix it before raising retry limits."
)


@dataclass(frozen=True)
class Context:
    """What building events needs of the configuration."""

    base_url: str
    key_patterns: tuple[str, ...] = ()
    #: earlier runs a key needs before its median cost counts
    min_history: int = 5
    core_hour_price: float | None = None
    currency: str = "USD"


@dataclass(frozen=True)
class NotifiedFinding:
    """A stored finding, as alerts and digests use it."""

    name: str
    severity: int
    title: str
    advice: str | None
    core_hours: float | None
    wall_ms: float | None
    settings: tuple[tuple[str, str], ...]


def findings(session: Session, app_pk: int) -> list[NotifiedFinding]:
    """The application's findings above NONE, costliest first."""
    document = session.scalar(select(Analysis.results).where(Analysis.application_id == app_pk))
    results = (parse_document(document) if document else None) or []
    out = []
    for r in results:
        severity = r.get("severity")
        if not isinstance(severity, int) or severity <= 0:
            continue
        impact = r.get("impact") or {}
        wall_s = impact.get("wall_seconds")
        settings = tuple(
            (str(p[0]), str(p[1])) for p in r.get("conf") or () if isinstance(p, list | tuple)
        )
        out.append(
            NotifiedFinding(
                r["name"],
                severity,
                str(r.get("title") or r["name"]),
                r.get("advice") or None,
                impact.get("core_hours"),
                None if wall_s is None else wall_s * 1000,
                settings,
            )
        )
    out.sort(key=lambda f: (-(f.core_hours or 0), -(f.wall_ms or 0), -f.severity, f.name))
    return out


def failure_line(session: Session, app_pk: int) -> str | None:
    """The root-cause line of a failed application: its last failed stage's reason, else its
    first failed task's error."""
    reason = session.scalar(
        select(Stage.failure_reason)
        .where(Stage.application_id == app_pk, Stage.status == "FAILED")
        .where(Stage.failure_reason.is_not(None))
        .order_by(Stage.completion_time_ms.desc().nulls_last(), Stage.stage_id.desc())
        .limit(1)
    )
    if not reason:
        reason = session.scalar(
            select(Task.error_message)
            .where(Task.application_id == app_pk, Task.error_message.is_not(None))
            .order_by(Task.launch_time_ms, Task.task_id)
            .limit(1)
        )
    return root_cause(reason) or None


def failed(session: Session, app_pk: int) -> bool:
    """An application failed when its last job did (the History Server lists it completed)."""
    status = session.scalar(
        select(Job.status)
        .where(Job.application_id == app_pk)
        .order_by(Job.submission_time_ms.desc().nulls_last(), Job.job_id.desc())
        .limit(1)
    )
    return (status or "").upper() == "FAILED"


def _median_cost(session: Session, app: Application, key: str, need: int) -> float | None:
    """Median allocated core-hours of the key's last successful runs before this one."""
    if app.start_time_ms is None:
        return None
    costs = session.scalars(
        select(Application.allocated_core_hours)
        .join(RunPrediction, RunPrediction.application_id == Application.id)
        .where(RunPrediction.server_id == app.server_id, RunPrediction.key == key)
        .where(RunPrediction.start_time_ms < app.start_time_ms, RunPrediction.succeeded.is_(True))
        .where(Application.allocated_core_hours.is_not(None))
        .order_by(RunPrediction.start_time_ms.desc())
        .limit(COST_WINDOW)
    ).all()
    values = [float(c) for c in costs if c is not None and c > 0]
    return statistics.median(values) if len(values) >= max(1, need) else None


def _money(core_hours: float | None, ctx: Context) -> float | None:
    if core_hours is None or ctx.core_hour_price is None:
        return None
    return core_hours * ctx.core_hour_price


def events_for(session: Session, app_pks: Sequence[int], ctx: Context) -> list[AlertEvent]:
    """Every event of these applications (those that still exist), application by application."""
    rows = session.execute(
        select(Application, HistoryServer.name)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.id.in_(list(app_pks)))
        .order_by(Application.start_time_ms, Application.id)
    ).all()
    out: list[AlertEvent] = []
    for app, server in rows:
        out += _app_events(session, app, server, ctx)
    return out


def _app_events(session: Session, app: Application, server: str, ctx: Context) -> list[AlertEvent]:
    key = recurring_key(app.name, ctx.key_patterns)
    end_ms = app.end_time_ms or app.fetched_at_ms
    links = (
        Link("Application", absolute(ctx.base_url, app_path(app.app_id, server, app.attempt_id))),
        Link("History", absolute(ctx.base_url, history_path(app.name, server))),
    )
    base: dict[str, Any] = {
        "app_id": app.app_id,
        "app_name": app.name,
        "server": server,
        "occurred_at": dt.datetime.fromtimestamp(end_ms / 1000, dt.UTC),
        "user": app.spark_user,
        "queue": app.queue,
        "attempt_id": app.attempt_id or None,
        "recurring_key": key,
        "currency": ctx.currency,
        "links": links,
    }
    run_cost: dict[str, Any] = {
        "cost_core_hours": app.allocated_core_hours,
        "wall_ms": app.duration_ms,
        "cost_money": _money(app.allocated_core_hours, ctx),
    }
    found = findings(session, app.id)
    top = found[0] if found else None
    top_fix: dict[str, Any] = {"fix": top.advice, "settings": top.settings} if top else {}
    out = [
        AlertEvent(
            kind="finding",
            severity=f.severity,
            title=f.title,
            heuristic=f.name,
            cost_core_hours=f.core_hours,
            wall_ms=f.wall_ms,
            cost_money=_money(f.core_hours, ctx),
            cause=f.title,
            fix=f.advice,
            settings=f.settings,
            **base,
        )
        for f in found
    ]
    prediction = session.get(RunPrediction, app.id)
    if prediction is not None and prediction.verdict == "regression":
        expected = prediction.expected_ms
        excess = "" if prediction.excess_pct is None else f" ({prediction.excess_pct:+.0f}%)"
        causes = "; ".join(prediction.causes or []) or None
        out.append(
            AlertEvent(
                kind="regression",
                severity=int(Severity.SEVERE),
                title=f"took {fmt_duration_ms(app.duration_ms)}, expected "
                f"{fmt_duration_ms(expected)}{excess}",
                cause=causes,
                duration_ms=app.duration_ms,
                **run_cost,
                **top_fix,
                **base,
            )
        )
    if failed(session, app.id):
        line = failure_line(session, app.id)
        failure_fix = next(
            (f for f in found if f.name in ("job_failures", "stage_failures", "task_failures")),
            None,
        )
        out.append(
            AlertEvent(
                kind="failure",
                severity=int(Severity.CRITICAL),
                title=f"failed: {line}" if line else "failed: its last job failed",
                cause=line,
                fix=(failure_fix.advice if failure_fix else None) or FAILURE_FIX,
                **run_cost,
                **base,
            )
        )
    median = _median_cost(session, app, key, ctx.min_history)
    if median is not None and app.allocated_core_hours is not None:
        out.append(
            AlertEvent(
                kind="cost_spike",
                severity=int(Severity.MODERATE),
                title=f"cost {fmt_hours(app.allocated_core_hours)} core-hours against a recent "
                f"median of {fmt_hours(median)}",
                baseline_core_hours=median,
                cause=top.title if top else None,
                **run_cost,
                **top_fix,
                **base,
            )
        )
    if app.duration_ms:
        out.append(
            AlertEvent(
                kind="deadline",
                severity=int(Severity.SEVERE),
                title=f"took {fmt_duration_ms(app.duration_ms)}",
                duration_ms=app.duration_ms,
                cause=top.title if top else None,
                **run_cost,
                **top_fix,
                **base,
            )
        )
    forecast = session.get(RecurringForecast, (app.server_id, key))
    if forecast is not None and forecast.expected_ms:
        out.append(
            AlertEvent(
                kind="deadline",
                severity=int(Severity.SEVERE),
                title=f"next run forecast to take {fmt_duration_ms(forecast.expected_ms)}",
                duration_ms=forecast.expected_ms,
                forecast=True,
                cause=top.title if top else None,
                **run_cost,
                **top_fix,
                **base,
            )
        )
    return out
