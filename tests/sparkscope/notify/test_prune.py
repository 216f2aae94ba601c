"""`sparkscope prune --keep-days N` on the recorded corpora (PostgreSQL and SQLite): the old
applications go with every row that names them (findings, predictions, SQL, stages, what-if ...),
their day-summary contribution (the summary equals a recount afterwards) and their keys' forecast
counts, in bounded batches; the newer ones and everything of theirs stay exactly as they were."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, func, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.accounting import day_summary
from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker, now_ms
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application
from sparkscope.models.base import Base
from sparkscope.models.notify import NotifyOutbox
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.models.summary import DaySummary
from sparkscope.notify import outbox
from sparkscope.pipeline import retention

DAY_MS = 86_400_000
KEEP_DAYS = 30


@pytest.fixture
def engine(corpus_url: str) -> Iterator[Engine]:
    engine = make_engine(corpus_url)
    yield engine
    engine.dispose()


def app_tables() -> list[Any]:
    """Every table with an ``application_id`` column: the rows an application owns."""
    return [t for t in Base.metadata.sorted_tables if "application_id" in t.c]


def rows_by_app(session: Session) -> dict[str, Counter[int]]:
    out = {}
    for t in app_tables():
        col = t.c.application_id
        out[t.name] = Counter(
            {pk: n for pk, n in session.execute(select(col, func.count()).group_by(col))}
        )
    return out


def kept_content(session: Session, keep: set[int]) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the kept applications, as stored."""
    out = {}
    for t in app_tables():
        rows = session.execute(select(t).where(t.c.application_id.in_(keep))).all()
        out[t.name] = sorted(tuple(map(repr, r)) for r in rows)
    apps = session.execute(select(Application.__table__).where(Application.id.in_(keep))).all()
    out["application"] = sorted(tuple(map(repr, r)) for r in apps)
    return out


def summary_and_recount(session: Session) -> tuple[dict[Any, Any], dict[Any, Any]]:
    dialect = session.get_bind().dialect.name
    stored = {
        (r.dimension, r.day, r.key): (
            r.apps, r.executors, r.jobs, r.stages, r.tasks, r.wasted_core_hours, r.wasted_apps,
        )
        for r in session.scalars(select(DaySummary))
    }  # fmt: skip
    recount = {
        (dim, int(day), key): tuple(values)
        for dim, day, key, *values in session.execute(text(day_summary.recount_sql(dialect)))
    }
    return stored, recount


def age(factory: sessionmaker[Session]) -> tuple[set[int], set[int]]:
    """Make every other application (and one without an end time) older than the retention,
    and one just inside it; returns (old, kept) primary keys."""
    now = now_ms()
    with factory() as session, session.begin():
        pks = list(session.scalars(select(Application.id).order_by(Application.id)))
        predicted = set(session.scalars(select(RunPrediction.application_id)))
        old = set(pks[::2]) | set(sorted(predicted)[::2])
        kept = set(pks) - old
        session.execute(
            update(Application)
            .where(Application.id.in_(old))
            .values(end_time_ms=now - (KEEP_DAYS + 10) * DAY_MS)
        )
        no_end_old, no_end_new, inside = sorted(old)[0], sorted(kept)[0], sorted(kept)[1]
        session.execute(
            update(Application)
            .where(Application.id == no_end_old)
            .values(end_time_ms=None, fetched_at_ms=now - (KEEP_DAYS + 1) * DAY_MS)
        )
        session.execute(
            update(Application).where(Application.id == no_end_new).values(end_time_ms=None)
        )
        session.execute(
            update(Application)
            .where(Application.id == inside)
            .values(end_time_ms=now - (KEEP_DAYS - 1) * DAY_MS)
        )
        # outbox: the sent/muted rows are old, one pending row too (it must stay)
        ids = list(session.scalars(select(NotifyOutbox.id).order_by(NotifyOutbox.id)))
        session.execute(update(NotifyOutbox).values(created_ms=now - (KEEP_DAYS + 5) * DAY_MS))
        session.execute(
            update(NotifyOutbox).where(NotifyOutbox.id.in_(ids[::2])).values(state=outbox.SENT)
        )
    return old, kept


def test_prune_deletes_old_applications_with_every_row_and_keeps_the_rest(
    engine: Engine, corpus_url: str
) -> None:
    factory = make_sessionmaker(engine)
    old, kept = age(factory)
    with factory() as session:
        before = rows_by_app(session)
        content = kept_content(session, kept)
        findings = session.scalar(
            select(func.count()).where(AnalysisResult.application_id.in_(old))
        )
        runs_gone = Counter(
            {
                (s, k): n
                for s, k, n in session.execute(
                    select(RunPrediction.server_id, RunPrediction.key, func.count())
                    .where(RunPrediction.application_id.in_(old))
                    .group_by(RunPrediction.server_id, RunPrediction.key)
                )
            }
        )
        forecasts = {
            (f.server_id, f.key): f.n_runs for f in session.scalars(select(RecurringForecast))
        }
        states = Counter(session.scalars(select(NotifyOutbox.state)))
        stored, recount = summary_and_recount(session)
        assert stored == recount
    # the corpus gives the test something to delete in the tables that matter
    assert findings and runs_gone and len(old) >= 20 and len(kept) >= 20
    for name in ("analysis_result", "run_prediction", "stage", "executor", "task", "job"):
        assert sum(before[name][pk] for pk in old) > 0, name
    assert states[outbox.SENT] > 0 and sum(states.values()) > states[outbox.SENT]

    env = {"SPARKSCOPE_DATABASE_URL": corpus_url}
    dry = CliRunner().invoke(cli, ["prune", "--keep-days", str(KEEP_DAYS), "--dry-run"], env=env)
    assert dry.exit_code == 0, dry.output
    assert f"{len(old)} application(s) ended more than {KEEP_DAYS} days ago" in dry.output
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Application)) == len(old | kept)

    result = CliRunner().invoke(
        cli, ["prune", "--keep-days", str(KEEP_DAYS), "--batch", "7"], env=env
    )
    assert result.exit_code == 0, result.output
    final = sum(states[s] for s in outbox.FINAL)
    assert (
        f"prune: deleted {len(old)} application(s) that ended more than {KEEP_DAYS} days ago "
        f"and {final} old notification(s)"
    ) in result.output

    with factory() as session:
        left = set(session.scalars(select(Application.id)))
        assert left == kept
        after = rows_by_app(session)
        for name, counts in after.items():
            assert not set(counts) & old, f"{name} keeps rows of deleted applications"
            assert {pk: counts[pk] for pk in kept} == {pk: before[name][pk] for pk in kept}, name
        assert kept_content(session, kept) == content  # untouched, to the last column
        stored, recount = summary_and_recount(session)
        assert stored == recount and stored
        assert sum(v[0] for k, v in stored.items() if k[0] == "severity") == len(kept)
        now_forecasts = {
            (f.server_id, f.key): f.n_runs for f in session.scalars(select(RecurringForecast))
        }
        for key, n in forecasts.items():
            want = n - runs_gone[key]
            assert now_forecasts.get(key) == (want if want > 0 else None), key
        # sent and muted messages older than the retention go; pending and failing ones stay
        assert Counter(session.scalars(select(NotifyOutbox.state))) == Counter(
            {s: n for s, n in states.items() if s not in outbox.FINAL}
        )

    again = CliRunner().invoke(cli, ["prune", "--keep-days", str(KEEP_DAYS)], env=env)
    assert "deleted 0 application(s)" in again.output


class Killed(Exception):
    """Stands for the process dying between two batches."""


def test_each_batch_is_its_own_bounded_transaction(engine: Engine, corpus_url: str) -> None:
    factory = make_sessionmaker(engine)
    old, kept = age(factory)
    progress: list[int] = []

    def die_after_two(done: int) -> None:
        progress.append(done)
        if len(progress) == 2:
            raise Killed

    with pytest.raises(Killed):
        retention.prune(factory, now_ms(), KEEP_DAYS, batch=3, progress=die_after_two)
    assert progress == [3, 6]  # at most 3 applications per transaction
    with factory() as session:
        left = set(session.scalars(select(Application.id)))
        assert len(left) == len(old | kept) - 6 and kept <= left  # whole batches done
        stored, recount = summary_and_recount(session)
        assert stored == recount  # what a killed prune leaves is consistent

    seen: list[int] = []
    done = retention.prune(factory, now_ms(), KEEP_DAYS, batch=4, progress=seen.append)
    assert done.applications == len(old) - 6
    steps = [b - a for a, b in zip([0, *seen], seen, strict=False)]
    assert seen[-1] == len(old) - 6 and max(steps) == 4 and min(steps) >= 1
    # the ended ones, then the one without an end time: one short batch each at most
    assert done.batches == len(seen) and sum(1 for n in steps if n < 4) <= 2
    with factory() as session:
        assert set(session.scalars(select(Application.id))) == kept
