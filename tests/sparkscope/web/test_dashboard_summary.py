"""The dashboard read from the per-day summary gives the figures of a scan of every application of
its period, whatever the time of day the period starts at (whole days, plus or minus a part day)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.accounting import day_summary as summary
from sparkscope.db import make_engine
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application
from sparkscope.present.display import severity_name
from sparkscope.queries.dashboard import dashboard
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.web import builders as b

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
# A Monday 00:00 UTC: the periods below start at every kind of time of day from it.
MIDNIGHT = 1_795_910_400_000 // DAY_MS * DAY_MS
HEURISTICS = ("stage_skew", "disk_spill", "executor_gc", "task_failures")
USERS = ("alice", "bob", "carol", None)
QUEUES = ("etl", "adhoc", None)


def _fill(session: Session) -> None:
    rng = random.Random(7)
    srv = b.server(session, "prod")
    for i in range(120):
        start = MIDNIGHT - rng.randint(0, 12 * DAY_MS) if i else None
        app = b.application(
            session,
            srv,
            f"app-{i:03d}",
            user=rng.choice(USERS),  # type: ignore[arg-type]
            queue=rng.choice(QUEUES),
            start_ms=start,
            num_executors=rng.randint(1, 9),
            allocated_core_hours=10.0,
            wasted_core_hours=None if i % 7 == 0 else round(rng.uniform(0, 9), 3),
        )
        if start is None:
            app.start_time_ms = None
        for heuristic in rng.sample(HEURISTICS, rng.randint(0, 3)):
            b.finding(session, app, heuristic, Severity(rng.randint(1, 4)), "found")
        if i % 11:  # some stay unanalysed
            b.mark_analyzed(session, app, "fp")
    summary.rebuild(session)
    session.commit()


@pytest.fixture(scope="module")
def dash(pg_server_url: str, pg_template: str) -> Iterator[Session]:
    url = create_pg_database(pg_server_url, template=pg_template)
    engine = make_engine(url)
    with Session(engine) as s:
        _fill(s)
        yield s
    engine.dispose()
    drop_pg_database(pg_server_url, url)


def _scan_severities(session: Session, since: int) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for level in session.scalars(
        select(Application.worst_severity).where(Application.start_time_ms >= since)
    ):
        counts[severity_name(level)] += 1
    return dict(counts)


def _scan_waste(session: Session, col: object, since: int) -> dict[str, tuple[float, int]]:
    rows = session.execute(
        select(col, func.sum(Application.wasted_core_hours), func.count())  # type: ignore[call-overload]
        .where(Application.start_time_ms >= since, Application.wasted_core_hours.is_not(None))
        .group_by(col)
    )
    return {label or "(none)": (total, n) for label, total, n in rows}


@pytest.mark.parametrize("hour", [0, 1, 5, 11, 12, 13, 18, 23])
@pytest.mark.parametrize("days", [1, 3, 7])
def test_dashboard_equals_a_scan_of_its_period(dash: Session, hour: int, days: int) -> None:
    now = MIDNIGHT + hour * HOUR_MS + 17_000  # periods start 17 s past the hour
    d = dashboard(dash, now, days=days, top=50)
    assert d.totals["applications"] == 120
    assert d.totals["executors"] == dash.scalar(select(func.sum(Application.num_executors)))
    for got, since in ((d.severity_day, now - DAY_MS), (d.severity_week, now - 7 * DAY_MS)):
        assert {k: v for k, v in got.items() if v} == _scan_severities(dash, since)
    week = now - 7 * DAY_MS
    findings = dash.execute(
        select(AnalysisResult.heuristic, func.count())
        .join(Application, Application.id == AnalysisResult.application_id)
        .where(Application.start_time_ms >= week, AnalysisResult.severity > 0)
        .group_by(AnalysisResult.heuristic)
    )
    assert dict(d.top_findings) == dict(findings.all())
    since = now - days * DAY_MS
    for ranked, col in (
        (d.top_wasted_users, Application.spark_user),
        (d.top_wasted_queues, Application.queue),
    ):
        want = _scan_waste(dash, col, since)
        assert {r.label: r.count for r in ranked} == {k: n for k, (_, n) in want.items()}
        for r in ranked:
            assert r.value == pytest.approx(want[r.label][0])
        assert [r.value for r in ranked] == sorted((r.value for r in ranked), reverse=True)
    top_app = dash.scalars(
        select(Application)
        .where(Application.start_time_ms >= since, Application.wasted_core_hours.is_not(None))
        .order_by(Application.wasted_core_hours.desc())
    ).first()
    assert top_app is not None and d.top_wasted_apps[0].app is not None
    assert d.top_wasted_apps[0].app.app_id == top_app.app_id
