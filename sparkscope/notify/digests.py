"""Digests from stored data: the figures of one scope over one period (read-only), and the
digest messages ``sparkscope notify`` writes to the outbox once a period has ended.

A digest covers the applications that *ended* in ``[start, end)`` and match its scope: their
counts by worst severity, the worst of them by the core-hours their findings cost (with the fix of
the costliest finding and the settings it suggests), the runs judged regressions (with their
causes), the failed applications (with the line of the error that names the cause), and the
allocated core-hours against the period before. Mutes do not apply to digests.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.config.notifications.model import DigestSpec, NotificationSettings, Scope
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application, Job
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RunPrediction
from sparkscope.notify import store
from sparkscope.notify.events import Digest, DigestApp, DigestFailure, DigestRegression, Link
from sparkscope.notify.occurrences import failed, failure_line, findings
from sparkscope.notify.periods import Period, due_period, previous_period, scope_text
from sparkscope.notify.rules import digest_row, scope_matches
from sparkscope.present.links import absolute, app_path, search_path

#: How many of the worst applications, regressions and failures a digest lists.
WORST = 5
LISTED = 20
_CHUNK = 500


@dataclass(frozen=True)
class DigestContext:
    """What building a digest needs of the configuration."""

    base_url: str
    core_hour_price: float | None = None
    currency: str = "USD"


@dataclass(frozen=True)
class _App:
    pk: int
    app_id: str
    attempt_id: str
    name: str
    user: str | None
    server: str
    severity: int | None
    core_hours: float | None

    def url(self, base_url: str) -> str:
        return absolute(base_url, app_path(self.app_id, self.server, self.attempt_id))


def _ms(t: dt.datetime) -> int:
    return round(t.timestamp() * 1000)


def scoped_apps(session: Session, scope: Scope, period: Period) -> list[_App]:
    """The applications that ended in the period and match the scope, oldest end first."""
    query = (
        select(
            Application.id,
            Application.app_id,
            Application.attempt_id,
            Application.name,
            Application.spark_user,
            Application.queue,
            HistoryServer.name,
            Application.worst_severity,
            Application.allocated_core_hours,
        )
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.end_time_ms >= _ms(period.start))
        .where(Application.end_time_ms < _ms(period.end))
        .order_by(Application.end_time_ms, Application.id)
    )
    if scope.user is not None:
        query = query.where(Application.spark_user.in_(sorted(scope.user)))
    if scope.queue is not None:
        query = query.where(Application.queue.in_(sorted(scope.queue)))
    if scope.server is not None:
        query = query.where(HistoryServer.name.in_(sorted(scope.server)))
    return [
        _App(pk, app_id, attempt or "", name, user, server, severity, core_hours)
        for pk, app_id, attempt, name, user, queue, server, severity, core_hours in session.execute(
            query
        )
        if scope_matches(scope, user, queue, name, server)
    ]


def _chunks(pks: Sequence[int]) -> list[list[int]]:
    return [list(pks[i : i + _CHUNK]) for i in range(0, len(pks), _CHUNK)]


def _impacts(session: Session, pks: Sequence[int]) -> dict[int, tuple[float, float]]:
    """Per application: the core-hours and wall milliseconds its findings cost."""
    out: dict[int, tuple[float, float]] = {}
    for chunk in _chunks(pks):
        for pk, core_hours, wall_s in session.execute(
            select(
                AnalysisResult.application_id,
                func.sum(AnalysisResult.impact_core_hours),
                func.sum(AnalysisResult.impact_wall_seconds),
            )
            .where(AnalysisResult.application_id.in_(chunk), AnalysisResult.severity > 0)
            .group_by(AnalysisResult.application_id)
        ):
            out[pk] = (float(core_hours or 0.0), float(wall_s or 0.0) * 1000)
    return out


def _worst(session: Session, apps: Sequence[_App], base_url: str) -> tuple[DigestApp, ...]:
    impacts = _impacts(session, [a.pk for a in apps])
    ranked = sorted(
        (a for a in apps if (a.severity or 0) > 0),
        key=lambda a: (-impacts.get(a.pk, (0.0, 0.0))[0], -(a.severity or 0), a.app_id, a.pk),
    )
    out = []
    for a in ranked[:WORST]:
        core_hours, wall_ms = impacts.get(a.pk, (0.0, 0.0))
        top = next(iter(findings(session, a.pk)), None)
        out.append(
            DigestApp(
                a.app_id,
                a.name,
                a.server,
                a.severity or 0,
                a.user,
                core_hours,
                wall_ms,
                top.advice if top else None,
                a.url(base_url),
                top.settings if top else (),
            )
        )
    return tuple(out)


def _regressions(
    session: Session, apps: Sequence[_App], base_url: str
) -> tuple[tuple[DigestRegression, ...], int]:
    by_pk = {a.pk: a for a in apps}
    found: list[Any] = []
    for chunk in _chunks(list(by_pk)):
        found += session.execute(
            select(
                RunPrediction.application_id,
                RunPrediction.duration_ms,
                RunPrediction.expected_ms,
                RunPrediction.causes,
            ).where(RunPrediction.application_id.in_(chunk), RunPrediction.verdict == "regression")
        ).all()
    found.sort(key=lambda r: (-(r[1] or 0), by_pk[r[0]].app_id))
    listed = tuple(
        DigestRegression(
            by_pk[pk].app_id,
            by_pk[pk].name,
            by_pk[pk].server,
            float(duration or 0),
            expected,
            tuple(str(c) for c in causes or ()),
            by_pk[pk].url(base_url),
        )
        for pk, duration, expected, causes in found[:LISTED]
    )
    return listed, len(found)


def _failures(
    session: Session, apps: Sequence[_App], base_url: str
) -> tuple[tuple[DigestFailure, ...], int]:
    by_pk = {a.pk: a for a in apps}
    candidates: set[int] = set()
    for chunk in _chunks(list(by_pk)):
        candidates.update(
            session.scalars(
                select(Job.application_id)
                .where(Job.application_id.in_(chunk), Job.status == "FAILED")
                .distinct()
            )
        )
    failures = [a for a in apps if a.pk in candidates and failed(session, a.pk)]
    listed = tuple(
        DigestFailure(
            a.app_id,
            a.name,
            a.server,
            failure_line(session, a.pk) or "its last job failed",
            a.user,
            a.url(base_url),
        )
        for a in failures[:LISTED]
    )
    return listed, len(failures)


def _core_hours(apps: Sequence[_App]) -> float | None:
    """Allocated core-hours of the applications (0 for none; None when none of them is known)."""
    known = [a.core_hours for a in apps if a.core_hours is not None]
    return round(sum(known), 6) if known or not apps else None


def _money(core_hours: float | None, ctx: DigestContext) -> float | None:
    if core_hours is None or ctx.core_hour_price is None:
        return None
    return core_hours * ctx.core_hour_price


def _iso_ms(t: dt.datetime) -> str:
    """``2026-11-29T17:59:59.999Z`` (milliseconds only when there are any)."""
    utc = t.astimezone(dt.UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{utc.microsecond // 1000:03d}Z" if utc.microsecond >= 1000 else f"{text}Z"


def _links(scope: Scope, period: Period, base_url: str) -> tuple[Link, ...]:
    def single(values: frozenset[str] | None) -> str | None:
        return next(iter(values)) if values and len(values) == 1 else None

    last = dt.datetime.fromtimestamp((_ms(period.end) - 1) / 1000, dt.UTC)
    search = search_path(
        end_from=_iso_ms(period.start),
        end_to=_iso_ms(last),
        user=single(scope.user),
        queue=single(scope.queue),
        server=single(scope.server),
    )
    return (
        Link("Dashboard", absolute(base_url, "/")),
        Link("These applications", absolute(base_url, search)),
        Link("Notifications", absolute(base_url, "/notifications")),
    )


def build_digest(
    session: Session,
    name: str,
    scope: Scope,
    period: Period,
    previous: Period | None,
    timezone: str,
    ctx: DigestContext,
) -> Digest:
    """The digest of ``scope`` over ``period`` (``previous``: the period its cost is compared
    with), from what is stored; reads only."""
    apps = scoped_apps(session, scope, period)
    counts: dict[int, int] = defaultdict(int)
    for a in apps:
        if a.severity:
            counts[a.severity] += 1
    regressions, n_regressions = _regressions(session, apps, ctx.base_url)
    failures, n_failures = _failures(session, apps, ctx.base_url)
    core_hours = _core_hours(apps)
    before = _core_hours(scoped_apps(session, scope, previous)) if previous else None
    return Digest(
        name=name,
        scope_text=scope_text(scope),
        period_start=period.start,
        period_end=period.end,
        timezone=timezone,
        apps_total=len(apps),
        counts=dict(sorted(counts.items())),
        worst=_worst(session, apps, ctx.base_url),
        regressions=regressions,
        failures=failures,
        regressions_total=n_regressions,
        failures_total=n_failures,
        core_hours=core_hours,
        previous_core_hours=before,
        money=_money(core_hours, ctx),
        previous_money=_money(before, ctx),
        currency=ctx.currency,
        links=_links(scope, period, ctx.base_url),
    )


def spec_digest(session: Session, spec: DigestSpec, period: Period, ctx: DigestContext) -> Digest:
    """A configured digest over one of its periods."""
    previous = previous_period(spec, period)
    return build_digest(session, spec.name, spec.scope, period, previous, spec.timezone.key, ctx)


def enqueue_due(
    factory: sessionmaker[Session],
    settings: NotificationSettings,
    ctx: DigestContext,
    now: dt.datetime,
) -> list[tuple[str, Period]]:
    """Write the digest of every configured digest whose latest period has ended and is not in
    the outbox yet, one transaction per digest (all its channels at once); what was written."""
    written: list[tuple[str, Period]] = []
    for spec in settings.digests:
        with factory() as session, session.begin():
            period = due_period(spec, now, store.last_period_start(session, spec.name))
            if period is None:
                continue
            digest = spec_digest(session, spec, period, ctx)
            rows = [digest_row(spec.name, period.start, c, digest, now) for c in spec.channels]
            store.insert(session, rows)
        written.append((spec.name, period))
    return written
