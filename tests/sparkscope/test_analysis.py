"""Analysis: hot-reloaded heuristics config, cached findings per fingerprint, resources on real apps."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.analysis import (
    HeuristicsState,
    analyze_all,
    ensure_analyzed,
    load_app_data,
    load_heuristics,
)
from sparkscope.cli import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models import AnalysisResult, Application, Stage, Task
from sparkscope.resources import compute_resources
from tests.fetcher.recorded import RECORDING

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "config" / "heuristics.yaml"
TINY = "local-1795972070675"  # 2000 tiny tasks: task_granularity CRITICAL under production config


@pytest.fixture(scope="module")
def loaded_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A PostgreSQL database holding the 21 recorded applications, not yet analysed."""
    from tests.conftest import create_pg_database, drop_pg_database

    url = create_pg_database(pg_server_url, template=pg_template)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARKSCOPE_DATABASE_URL", url)
        result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--no-analyze"])
    assert result.exit_code == 0, result.output
    yield url
    drop_pg_database(pg_server_url, url)


@pytest.fixture
def factory(loaded_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(loaded_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def _pk(session: Session, app_id: str) -> int:
    pk = session.scalar(select(Application.id).where(Application.app_id == app_id))
    assert pk is not None
    return pk


def test_state_reloads_on_edit_and_keeps_last_valid_config(tmp_path: Path) -> None:
    path = tmp_path / "heuristics.yaml"
    shutil.copy(BUNDLED, path)
    state = HeuristicsState(str(path))
    first, error = state.current()
    assert error is None
    assert state.current()[0] is first  # unchanged file: same registry object, nothing re-read

    path.write_text(
        BUNDLED.read_text().replace("min_tasks_for_tiny: 1000", "min_tasks_for_tiny: 5000")
    )
    time.sleep(0.01)
    second, error = state.current()
    assert error is None and second.fingerprint != first.fingerprint

    path.write_text(
        "stage_skew:\n  task_time_ratio: {low: 9, moderate: 4, severe: 8, critical: 16}\n"
    )
    third, error = state.current()
    assert third is second
    assert error is not None and "stage_skew.task_time_ratio" in error and str(path) in error

    path.write_text("stage_skew: [oops\n")
    fourth, error = state.current()
    assert fourth is second and error is not None and "invalid YAML" in error

    path.write_text("{}\n")
    fifth, error = state.current()
    assert error is None and fifth.fingerprint == load_heuristics(str(BUNDLED)).fingerprint


def test_missing_file_at_start_falls_back_to_defaults(tmp_path: Path) -> None:
    registry, error = HeuristicsState(str(tmp_path / "nope.yaml")).current()
    assert error is not None and "file not found" in error
    assert len(registry.enabled) == 13


def test_findings_are_reused_for_an_unchanged_config_and_redone_for_a_new_one(
    factory, tmp_path
) -> None:
    registry = load_heuristics(str(BUNDLED))
    with factory() as session:
        pk = _pk(session, TINY)
        results = ensure_analyzed(session, pk, registry)
        assert results[0].name == "task_granularity" and results[0].severity == 4
        stamp = session.scalar(
            select(func.max(AnalysisResult.analyzed_at_ms)).where(
                AnalysisResult.application_id == pk
            )
        )
    time.sleep(0.01)
    with factory() as session:
        again = ensure_analyzed(session, pk, registry)
        assert [r.to_dict() for r in again] == [r.to_dict() for r in results]
        assert (
            session.scalar(
                select(func.max(AnalysisResult.analyzed_at_ms)).where(
                    AnalysisResult.application_id == pk
                )
            )
            == stamp
        )
    edited = tmp_path / "h.yaml"
    edited.write_text("task_granularity:\n  min_tasks_for_tiny: 5000\n")
    other = load_heuristics(str(edited))
    with factory() as session:
        redone = ensure_analyzed(session, pk, other)
        by_name = {r.name: r for r in redone}
        assert by_name["task_granularity"].severity == 0
        app = session.get(Application, pk)
        assert (
            app is not None
            and app.analysis_fingerprint == other.fingerprint
            and app.worst_severity == max(int(r.severity) for r in redone)
        )


def test_analyze_command_rescoring(loaded_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", loaded_url)
    runner = CliRunner()
    result = runner.invoke(cli, ["analyze", "--force"])
    assert result.exit_code == 0 and "analysed 21 applications" in result.output
    result = runner.invoke(cli, ["analyze"])
    assert result.exit_code == 0 and "analysed 0 applications (21 already current)" in result.output
    result = runner.invoke(cli, ["analyze", "--app-id", TINY, "--force"])
    assert "analysed 1 applications" in result.output


def test_bad_heuristics_config_stops_analyze_with_exit_2(
    loaded_url: str, tmp_path: Path, monkeypatch
) -> None:
    bad = tmp_path / "h.yaml"
    bad.write_text("stage_skew:\n  colour: red\n")
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", loaded_url)
    monkeypatch.setenv("SPARKSCOPE_HEURISTICS", str(bad))
    result = CliRunner().invoke(cli, ["analyze"])
    assert result.exit_code == 2 and "stage_skew.colour" in result.output


def test_resources_are_consistent_on_the_recorded_apps(factory) -> None:
    with factory() as session:
        ids = session.scalars(select(Application.id)).all()
        apps = load_app_data(session, ids)
        for app in apps.values():
            res = compute_resources(app)
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

    def stored() -> list[tuple]:
        with factory() as s:
            return s.execute(
                select(
                    AnalysisResult.application_id,
                    AnalysisResult.heuristic,
                    AnalysisResult.severity,
                    AnalysisResult.title,
                    AnalysisResult.fingerprint,
                ).order_by(AnalysisResult.application_id, AnalysisResult.heuristic)
            ).all()

    one = analyze_all(factory, registry, force=True, batch_size=4)
    single = stored()
    two = analyze_all(factory, registry, force=True, batch_size=4, workers=2)
    assert one.analysed == two.analysed == 21
    assert stored() == single
    assert {row[4] for row in single} == {registry.fingerprint}


def test_fetch_scores_in_memory_exactly_as_a_rescore_from_the_database(
    fresh_pg_url: str, monkeypatch
) -> None:
    """The fetcher scores the rows it just parsed; re-reading them from the database must agree."""
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_pg_url)
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING)])
    assert result.exit_code == 0, result.output
    engine = make_engine(fresh_pg_url)
    factory = make_sessionmaker(engine)

    def findings() -> list[tuple]:
        with factory() as s:
            return s.execute(
                select(
                    Application.app_id,
                    AnalysisResult.heuristic,
                    AnalysisResult.severity,
                    AnalysisResult.title,
                    AnalysisResult.value,
                    AnalysisResult.result,
                )
                .join(Application, Application.id == AnalysisResult.application_id)
                .order_by(Application.app_id, AnalysisResult.heuristic)
            ).all()

    at_fetch = findings()
    assert len(at_fetch) == 21 * 13
    stats = analyze_all(factory, load_heuristics(str(BUNDLED)), force=True)
    assert stats.analysed == 21
    assert findings() == at_fetch
    engine.dispose()
