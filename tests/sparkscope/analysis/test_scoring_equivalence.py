"""Analysis stores the same findings whichever way it computes them: one process or worker
processes, in memory at fetch or re-scored from the database, from the encoded inputs or from the
tables, on PostgreSQL or SQLite; the encoded inputs themselves, a finding row only above NONE, and
resources that add up on the recorded applications."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import delete, func, select, update

from sparkscope.accounting.resources import compute_resources, core_hours
from sparkscope.analysis import inputs
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.inputs import from_tables, load_inputs
from sparkscope.analysis.scoring import analyze_all
from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import AnalysisInput, HeuristicsConfig
from sparkscope.models.application import Application, Stage, Task
from tests.fetcher.recorded import RECORDING
from tests.sparkscope.analysis.conftest import BUNDLED, N_HEURISTICS, stored_analysis


def test_resources_are_consistent_on_the_recorded_apps(factory) -> None:
    with factory() as session:
        ids = session.scalars(select(Application.id)).all()
        apps = from_tables(session, ids)
        for app in apps.values():
            res = compute_resources(app)
            assert core_hours(app) == (res.allocated_core_hours, res.wasted_core_hours)
            assert 0 <= res.used_core_hours <= res.allocated_core_hours, app.app_id
            assert res.wasted_core_hours == pytest.approx(
                res.allocated_core_hours - res.used_core_hours
            )
            if res.used_gb_hours is not None:
                assert res.used_gb_hours <= res.allocated_gb_hours, app.app_id
        # Where every task of a stage was kept (small stages among the longest), the task run
        # times add up to the SHS's own stage total.
        checked = 0
        for pk, stage_id, attempt, num_tasks, total in session.execute(
            select(
                Stage.application_id,
                Stage.stage_id,
                Stage.attempt_id,
                Stage.num_tasks,
                Stage.executor_run_time_ms,
            )
        ):
            rows = session.scalars(
                select(Task.executor_run_time_ms).where(
                    Task.application_id == pk,
                    Task.stage_id == stage_id,
                    Task.stage_attempt_id == attempt,
                )
            ).all()
            if num_tasks and len(rows) == num_tasks:
                assert sum(r or 0 for r in rows) == total
                checked += 1
        assert checked >= 20


def test_worker_processes_store_the_same_findings_as_one_process(factory) -> None:
    registry = load_heuristics(str(BUNDLED))
    one = analyze_all(factory, registry, force=True, batch_size=4)
    single = stored_analysis(factory)
    two = analyze_all(factory, registry, force=True, batch_size=4, workers=2)
    assert one.analysed == two.analysed == 21
    assert stored_analysis(factory) == single
    assert {fp for fp, *_ in single.values()} == {registry.fingerprint}
    assert all(len(results) == N_HEURISTICS for _, _, results, _ in single.values())


def test_only_findings_above_none_get_a_finding_row(factory) -> None:
    analyze_all(factory, load_heuristics(str(BUNDLED)), force=True)
    stored = stored_analysis(factory)
    assert sum(len(rows) for *_, rows in stored.values()) > 0
    for _fp, worst, results, rows in stored.values():
        found = sorted((r["name"], r["severity"]) for r in results if r["severity"] > 0)
        assert [(h, sev) for h, sev, *_ in rows] == found
        assert worst == max(r["severity"] for r in results)


def test_fetch_scores_in_memory_exactly_as_a_rescore_from_the_database(
    fresh_pg_url: str, monkeypatch
) -> None:
    """The fetcher scores the rows it just parsed; re-scoring from the stored encoded inputs and
    from the tables (encoded inputs dropped) must both agree with it."""
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_pg_url)
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING)])
    assert result.exit_code == 0, result.output
    engine = make_engine(fresh_pg_url)
    factory = make_sessionmaker(engine)
    at_fetch = stored_analysis(factory)
    assert len(at_fetch) == 21
    assert all(len(results) == N_HEURISTICS for _, _, results, _ in at_fetch.values())
    registry = load_heuristics(str(BUNDLED))
    with factory() as s:
        assert s.scalar(select(func.count()).select_from(AnalysisInput)) == 21
        # the fetch run recorded the config its results were computed under, for later reuse
        assert s.scalars(select(HeuristicsConfig.fingerprint)).all() == [registry.fingerprint]
    assert analyze_all(factory, registry, force=True).analysed == 21
    assert stored_analysis(factory) == at_fetch
    with factory() as s, s.begin():
        s.execute(delete(AnalysisInput))
    assert analyze_all(factory, registry, force=True).analysed == 21
    assert stored_analysis(factory) == at_fetch
    with factory() as s:  # the re-score from the tables encoded them again
        assert s.scalar(select(func.count()).select_from(AnalysisInput)) == 21
    engine.dispose()


def test_encoded_inputs_are_the_inputs_built_from_the_tables(factory) -> None:
    with factory() as s, s.begin():
        ids = s.scalars(select(Application.id)).all()
        from_rows = from_tables(s, ids)
        assert sum(len(a.tasks) for a in from_rows.values()) > 0
        assert sum(1 for a in from_rows.values() for st in a.stages if st.distribution) > 50
        for app in from_rows.values():
            assert inputs.decode(inputs.encode(app)) == app, app.app_id
        s.execute(delete(AnalysisInput))
        assert load_inputs(s, ids, store=False) == from_rows  # read-only, as the web app reads
        assert s.scalar(select(func.count()).select_from(AnalysisInput)) == 0
        assert load_inputs(s, ids) == from_rows  # built from the tables, and stored
        assert s.scalar(select(func.count()).select_from(AnalysisInput)) == len(ids)
        assert load_inputs(s, ids) == from_rows  # decoded from the stored rows


def test_stale_or_unreadable_encoded_inputs_are_rebuilt_from_the_tables(factory) -> None:
    with factory() as s:
        a, b = s.scalars(select(Application.id).order_by(Application.id).limit(2)).all()
        expected = from_tables(s, [a, b])
        load_inputs(s, [a, b])
        s.execute(
            update(AnalysisInput).where(AnalysisInput.application_id == a).values(format="old")
        )
        s.execute(
            update(AnalysisInput)
            .where(AnalysisInput.application_id == b)
            .values(data=b"\x00 not what encode wrote")
        )
        assert load_inputs(s, [a, b]) == expected
        rows = dict(s.execute(select(AnalysisInput.application_id, AnalysisInput.format)).all())
        assert rows[a] == inputs.FORMAT
        assert (
            inputs.decode(
                s.scalar(select(AnalysisInput.data).where(AnalysisInput.application_id == b))
            )
            == expected[b]
        )
        s.rollback()


def test_the_same_analysis_on_sqlite(fresh_sqlite_url: str, factory, monkeypatch) -> None:
    """The embedded default stores what PostgreSQL stores (its own upsert and update paths)."""
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_sqlite_url)
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING)])
    assert result.exit_code == 0, result.output
    engine = make_engine(fresh_sqlite_url)
    lite = make_sessionmaker(engine)
    registry = load_heuristics(str(BUNDLED))
    at_fetch = stored_analysis(lite)
    assert analyze_all(lite, registry, force=True, workers=2).analysed == 21
    assert stored_analysis(lite) == at_fetch
    analyze_all(factory, registry, force=True)
    assert stored_analysis(factory) == at_fetch  # PostgreSQL, same recording
    engine.dispose()
