"""The per-day summary the dashboard reads equals a full recount after every kind of write:
fetch (load + analysis), re-fetch, re-score under other thresholds, delete, truncate, migration."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope import migrate
from sparkscope.accounting import day_summary as summary
from sparkscope.cli.main import cli
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application
from sparkscope.models.summary import DaySummary
from tests.fetcher import recorded, stub_shs
from tests.fetcher.recorded import API, HEALTHY, RECORDING, SKEWED

DAY_MS = 86_400_000
Rows = dict[tuple[str, int, str], tuple[float, ...]]


def recount(session: Session) -> Rows:
    """The summary counted from scratch in Python, from the applications and their findings."""
    acc: dict[tuple[str, int, str], list[float]] = defaultdict(lambda: [0.0] * 7)
    days = {}
    for pk, start, worst, user, queue, wasted, *totals in session.execute(
        select(
            Application.id,
            Application.start_time_ms,
            Application.worst_severity,
            Application.spark_user,
            Application.queue,
            Application.wasted_core_hours,
            Application.num_executors,
            Application.num_jobs,
            Application.num_stages,
            Application.num_tasks,
        )
    ):
        day = days[pk] = start // DAY_MS if start is not None and start >= 0 else -1
        vector = [1, *totals, wasted or 0.0, int(wasted is not None)]
        for key in (
            ("severity", day, "" if worst is None else str(worst)),
            ("user", day, user or ""),
            ("queue", day, queue or ""),
        ):
            acc[key] = [a + v for a, v in zip(acc[key], vector, strict=True)]
    for pk, heuristic in session.execute(
        select(AnalysisResult.application_id, AnalysisResult.heuristic).where(
            AnalysisResult.severity > 0
        )
    ):
        acc[("heuristic", days[pk], heuristic)][0] += 1
    return {key: tuple(v) for key, v in acc.items()}


def stored(session: Session) -> Rows:
    return {
        (r.dimension, r.day, r.key): (
            r.apps,
            r.executors,
            r.jobs,
            r.stages,
            r.tasks,
            r.wasted_core_hours,
            r.wasted_apps,
        )
        for r in session.scalars(select(DaySummary))
    }


def assert_same(got: Rows, want: Rows) -> None:
    assert set(got) == set(want)
    for key, vector in want.items():
        assert got[key] == pytest.approx(vector, rel=1e-9, abs=1e-9), key


def assert_matches_recount(factory: sessionmaker[Session]) -> Rows:
    with factory() as session:
        got = stored(session)
        assert_same(got, recount(session))
    return got


@pytest.fixture
def factory_of() -> Iterator[list[object]]:
    engines: list[object] = []
    yield engines
    for engine in engines:
        engine.dispose()  # type: ignore[attr-defined]


def _factory(url: str, engines: list[object]) -> sessionmaker[Session]:
    engine = make_engine(url)
    engines.append(engine)
    return make_sessionmaker(engine)


def test_summary_follows_fetch_rescore_delete_and_truncate(
    fresh_db_url: str, tmp_path: Path, monkeypatch, factory_of
) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_db_url)
    runner = CliRunner()
    fetched = runner.invoke(cli, ["fetch", "--url", str(RECORDING), "--limit", "8"])
    assert fetched.exit_code == 0, fetched.output
    factory = _factory(fresh_db_url, factory_of)
    after_fetch = assert_matches_recount(factory)
    assert sum(v[0] for k, v in after_fetch.items() if k[0] == "severity") == 8
    assert "" not in {k[2] for k in after_fetch if k[0] == "severity"}  # all analysed at fetch
    assert any(k[0] == "heuristic" for k in after_fetch)

    # Re-score under thresholds that make every task failure and every GC second a finding.
    strict = tmp_path / "strict.yaml"
    strict.write_text(
        "task_failures:\n  failed_task_rate: {low: 0.0, moderate: 0.0, severe: 0.0, critical: 0.0}\n"
    )
    monkeypatch.setenv("SPARKSCOPE_HEURISTICS", str(strict))
    rescored = runner.invoke(cli, ["analyze", "--force"])
    assert rescored.exit_code == 0, rescored.output
    after_rescore = assert_matches_recount(factory)
    assert after_rescore != after_fetch

    with factory() as session, session.begin():
        pks = session.scalars(select(Application.id).order_by(Application.id).limit(3)).all()
        summary.delete_applications(session, pks)
    after_delete = assert_matches_recount(factory)
    assert sum(v[0] for k, v in after_delete.items() if k[0] == "severity") == 5

    # The bulk recount (fleet generator, migration) gives the same rows as the upkeep.
    with factory() as session, session.begin():
        summary.rebuild(session)
    assert_same(assert_matches_recount(factory), after_delete)

    monkeypatch.delenv("SPARKSCOPE_HEURISTICS")
    truncated = runner.invoke(
        cli, ["fetch", "--url", str(RECORDING), "--limit", "1", "--truncate", "--yes"]
    )
    assert truncated.exit_code == 0, truncated.output
    after_truncate = assert_matches_recount(factory)
    assert sum(v[0] for k, v in after_truncate.items() if k[0] == "severity") == 1


def _sql_recount(session: Session) -> Rows:
    """What :func:`summary.rebuild` would write, read without writing it."""
    dialect = session.get_bind().dialect.name
    return {
        (dim, int(day), key): tuple(values)
        for dim, day, key, *values in session.execute(text(summary.recount_sql(dialect)))
    }


def test_the_summary_is_exact_whatever_the_order_of_the_writes(
    fresh_db_url: str, monkeypatch, factory_of
) -> None:
    """Summed wasted core-hours are the same to the last bit as a recount after every write,
    however the writes were ordered: a killed run and its re-run, which load in another order
    than one uninterrupted run, store the same summary."""
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_db_url)
    fetched = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--limit", "12"])
    assert fetched.exit_code == 0, fetched.output
    factory = _factory(fresh_db_url, factory_of)
    with factory() as session:
        assert stored(session) == _sql_recount(session)
        pks = session.scalars(select(Application.id).order_by(Application.id)).all()
        wasted = [w for w in session.scalars(select(Application.wasted_core_hours)) if w]
    assert len({w for w in wasted if w != summary.on_grid(w)}) > 3  # off the grid as stored
    for pk in [*pks[1::2], *pks[::2]]:  # another order than the loads'
        with factory() as session, session.begin():
            summary.delete_applications(session, [pk])
        with factory() as session:
            assert stored(session) == _sql_recount(session)
    with factory() as session:
        assert stored(session) == {}


def test_refetch_moves_an_application_to_its_new_day_and_user(
    fresh_pg_url: str, factory_of
) -> None:
    """A re-fetched application whose start and user changed leaves its old rows."""
    server = ServerConfig(name="prod", url=recorded.BASE, connect_timeout_s=1, read_timeout_s=2)
    fetcher_config = FetcherConfig(
        threads=2, retries=0, backoff_factor_s=0, top_stages=5, tasks_per_stage=20
    )
    factory = _factory(fresh_pg_url, factory_of)
    entries = [copy.deepcopy(a) for a in recorded.listing() if a["id"] in (HEALTHY, SKEWED)]
    with stub_shs.StubShs(assert_all_requests_are_fired=True) as rsps:
        rsps.add_callback(
            stub_shs.GET, f"{API}/applications", callback=recorded.listing_callback(entries)
        )
        for app_id in (HEALTHY, SKEWED, HEALTHY):
            recorded.register_app(rsps, app_id)
        assert run_server(factory, server, fetcher_config, FetchOptions()).loaded == 2
        before = assert_matches_recount(factory)
        attempt = next(e for e in entries if e["id"] == HEALTHY)["attempts"][0]
        old_day = attempt["startTimeEpoch"] // DAY_MS
        attempt["startTimeEpoch"] -= 3 * DAY_MS
        attempt["sparkUser"] = "someone-else"
        attempt["lastUpdatedEpoch"] += 1000
        assert run_server(factory, server, fetcher_config, FetchOptions()).loaded == 1
    after = assert_matches_recount(factory)
    assert ("user", old_day - 3, "someone-else") in after
    assert ("user", old_day - 3, "someone-else") not in before
    assert sum(v[0] for k, v in after.items() if k[0] == "severity") == 2


def test_migration_fills_the_summary_from_stored_applications(
    fresh_pg_url: str, monkeypatch, factory_of
) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_pg_url)
    fetched = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--limit", "5"])
    assert fetched.exit_code == 0, fetched.output
    factory = _factory(fresh_pg_url, factory_of)
    upkeep = assert_matches_recount(factory)
    migrate.downgrade(fresh_pg_url, "0007-1")
    with factory() as session:
        assert session.scalar(text("SELECT to_regclass('day_summary')")) is None
    migrate.upgrade(fresh_pg_url)
    assert_same(assert_matches_recount(factory), upkeep)
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(DaySummary)) == len(upkeep)


def test_a_second_writer_waits_for_the_first_to_commit(fresh_pg_url: str, factory_of) -> None:
    """Two writers of the same application cannot both read its old contribution."""
    import threading
    import time

    factory = _factory(fresh_pg_url, factory_of)
    first = factory()
    first.begin()
    summary.read(first, [1])
    done: list[float] = []

    def second() -> None:
        with factory() as session, session.begin():
            summary.read(session, [1])
            done.append(time.monotonic())

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.5)
    assert done == []  # still waiting for the first writer's lock
    committed = time.monotonic()
    first.commit()
    first.close()
    thread.join(timeout=10)
    assert done and done[0] >= committed


def test_each_applications_contribution_read_in_one_pass_is_its_own(
    fresh_db_url: str, factory_of
) -> None:
    """``read_each`` gives every application what reading it alone gives, which is what its row
    and findings as stored contribute, and nothing for an id not stored."""
    runner = CliRunner()
    env = {"SPARKSCOPE_DATABASE_URL": fresh_db_url}
    fetched = runner.invoke(cli, ["fetch", "--url", str(RECORDING), "--limit", "5"], env=env)
    assert fetched.exit_code == 0, fetched.output
    factory = _factory(fresh_db_url, factory_of)
    with factory() as session, session.begin():
        pks = list(session.scalars(select(Application.id).order_by(Application.id)))
        each = summary.read_each(session, [*pks, None, max(pks) + 1000])
        assert set(each) == set(pks)
        for pk in pks:
            assert each[pk] == summary.read(session, [pk]) and each[pk]
        assert len({tuple(sorted(c)) for c in each.values()}) > 1  # not one shared value
        for app in session.scalars(select(Application)):  # the row and findings as stored
            row = {c: getattr(app, c) for c in summary.APP_FIELDS}
            flagged = session.scalars(
                select(AnalysisResult.heuristic).where(
                    AnalysisResult.application_id == app.id, AnalysisResult.severity > 0
                )
            )
            assert each[app.id] == summary.contribution(row, list(flagged))
