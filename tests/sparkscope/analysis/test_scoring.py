"""Analysis: cached findings per fingerprint, incremental re-scores, resources on real apps."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from heuristics.registry import builtin_heuristics
from sparkscope.accounting.resources import compute_resources, core_hours
from sparkscope.analysis import inputs
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.inputs import from_tables, load_inputs
from sparkscope.analysis.scoring import analyze_all, analyze_apps, ensure_analyzed
from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import Analysis, AnalysisInput, AnalysisResult, HeuristicsConfig
from sparkscope.models.application import Application, Stage, Task
from tests.fetcher.recorded import RECORDING

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "config" / "heuristics.yaml"
N_HEURISTICS = len(builtin_heuristics())
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


def test_findings_are_reused_for_an_unchanged_config_and_redone_in_memory_for_a_new_one(
    factory, tmp_path
) -> None:
    registry = load_heuristics(str(BUNDLED))
    with factory() as session:
        pk = _pk(session, TINY)
        analyze_apps(session, [pk], registry)
        session.commit()
        results = ensure_analyzed(session, pk, registry)
        assert results[0].name == "task_granularity" and results[0].pattern_severity == 4
        assert results[0].severity == 1  # 12 s of overhead: capped to LOW by its cost
        stamp = session.scalar(select(Analysis.analyzed_at_ms).where(Analysis.application_id == pk))
        document = session.scalar(select(Analysis.results).where(Analysis.application_id == pk))
    time.sleep(0.01)
    with factory() as session:
        again = ensure_analyzed(session, pk, registry)
        assert [r.to_dict() for r in again] == [r.to_dict() for r in results]
        assert (
            session.scalar(select(Analysis.analyzed_at_ms).where(Analysis.application_id == pk))
            == stamp
        )
    edited = tmp_path / "h.yaml"
    edited.write_text("task_granularity:\n  tiny_min_tasks_per_slot: 5000\n")
    other = load_heuristics(str(edited))
    with factory() as session:
        redone = ensure_analyzed(session, pk, other)
        by_name = {r.name: r for r in redone}
        assert by_name["task_granularity"].severity == 0
        # Scored in memory only: the stored results stay those of the first config.
        app = session.get(Application, pk)
        assert app is not None and app.analysis_fingerprint == registry.fingerprint
        assert (
            session.scalar(select(Analysis.results).where(Analysis.application_id == pk))
            == document
            and not session.dirty
            and not session.new
        )
        # `analyze` stores exactly what the page showed.
        analyze_apps(session, [pk], other)
        session.commit()
        session.refresh(app)
        assert app.analysis_fingerprint == other.fingerprint and app.worst_severity == max(
            int(r.severity) for r in redone
        )
        stored = ensure_analyzed(session, pk, other)
        assert [r.to_dict() for r in stored] == [r.to_dict() for r in redone]


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


def stored_analysis(factory: sessionmaker[Session]) -> dict[str, tuple]:
    """Per application: its fingerprint, worst severity, every result, and its finding rows."""
    with factory() as s:
        findings: dict[int, list[tuple]] = {}
        for row in s.execute(
            select(
                AnalysisResult.application_id,
                AnalysisResult.heuristic,
                AnalysisResult.severity,
                AnalysisResult.title,
                AnalysisResult.value,
                AnalysisResult.impact_core_hours,
            ).order_by(AnalysisResult.application_id, AnalysisResult.heuristic)
        ):
            findings.setdefault(row[0], []).append(tuple(row[1:]))
        return {
            app_id: (fp, worst, orjson.loads(results or "null"), findings.get(pk, []))
            for pk, app_id, fp, worst, results in s.execute(
                select(
                    Application.id,
                    Application.app_id,
                    Application.analysis_fingerprint,
                    Application.worst_severity,
                    Analysis.results,
                ).outerjoin(Analysis, Analysis.application_id == Application.id)
            )
        }


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


def test_rescore_rewrites_only_the_documents_that_change(factory, tmp_path: Path) -> None:
    registry = load_heuristics(str(BUNDLED))
    analyze_all(factory, registry, force=True)

    def stamps() -> dict[int, int]:
        with factory() as s:
            return dict(s.execute(select(Analysis.application_id, Analysis.analyzed_at_ms)).all())

    before = stamps()
    time.sleep(0.01)
    analyze_all(factory, registry, force=True)
    assert stamps() == before  # same config, same results: nothing rewritten
    edited = tmp_path / "h.yaml"
    edited.write_text("task_granularity:\n  tiny_min_tasks_per_slot: 5000\n")
    other = load_heuristics(str(edited))
    analyze_all(factory, other)
    after = stamps()
    with factory() as s:
        tiny = _pk(s, TINY)
        assert (
            s.scalar(
                select(func.count())
                .select_from(AnalysisResult)
                .where(
                    AnalysisResult.application_id == tiny,
                    AnalysisResult.heuristic == "task_granularity",
                )
            )
            == 0
        )
        fingerprints = set(s.scalars(select(Application.analysis_fingerprint)).all())
    assert fingerprints == {other.fingerprint}  # every application is marked re-scored
    assert after[tiny] > before[tiny]
    assert 0 < sum(after[pk] != before[pk] for pk in before) < len(before)


def test_results_carry_the_thresholds_of_the_config_in_force(factory, tmp_path: Path) -> None:
    edited = tmp_path / "h.yaml"
    edited.write_text("executor_gc:\n  gc_ratio:\n    low: 0.09\n")
    registry = load_heuristics(str(edited))
    with factory() as session:
        results = ensure_analyzed(session, _pk(session, TINY), registry)
    gc = next(r for r in results if r.name == "executor_gc")
    assert gc.thresholds["gc_ratio"]["low"] == 0.09  # type: ignore[index]
    assert len(results) == N_HEURISTICS
    assert all(r.thresholds for r in results)


def _counting(calls: dict[str, int], bump: tuple[str, ...] = ()) -> list[object]:
    """The built-in heuristics, counting their calls; those in ``bump`` one version up."""
    import dataclasses

    from heuristics.registry import builtin_heuristics

    def counted(h):  # type: ignore[no-untyped-def]
        def evaluate(app, params):  # type: ignore[no-untyped-def]
            calls[h.name] = calls.get(h.name, 0) + 1
            return h.evaluate(app, params)

        return evaluate

    return [
        dataclasses.replace(
            h, evaluate_fn=counted(h), version=h.version + (1 if h.name in bump else 0)
        )
        for h in builtin_heuristics()
    ]


def test_rescore_after_an_edit_keeps_unchanged_heuristics_and_equals_a_full_rescore(
    factory, tmp_path: Path
) -> None:
    from heuristics.registry import build_registry

    calls: dict[str, int] = {}
    heuristics = _counting(calls)
    edit = {"task_failures": {"failed_task_rate": {"low": 0.05, "moderate": 0.1}}}
    analyze_all(factory, build_registry({}, heuristics), force=True)
    calls.clear()
    stats = analyze_all(factory, build_registry(edit, heuristics))
    assert stats.analysed == 21
    assert calls == {"task_failures": 21}  # the others kept their stored results
    incremental = stored_analysis(factory)
    analyze_all(factory, build_registry(edit, heuristics), force=True)
    assert stored_analysis(factory) == incremental
    assert calls["stage_skew"] == 21


def test_a_version_bump_rescores_only_that_heuristic(factory) -> None:
    """Changing one heuristic (its VERSION) re-runs it alone: the stored results of the others
    stay valid, and the outcome equals a full re-score."""
    from heuristics.registry import build_registry

    calls: dict[str, int] = {}
    analyze_all(factory, build_registry({}, _counting(calls)), force=True)
    before = stored_analysis(factory)
    calls.clear()
    bumped = build_registry({}, _counting(calls, bump=("disk_spill",)))
    stats = analyze_all(factory, bumped)
    assert stats.analysed == 21  # every application moves to the new fingerprint...
    assert calls == {"disk_spill": 21}  # ...but only the bumped heuristic runs again
    after = stored_analysis(factory)
    with factory() as s:
        assert set(s.scalars(select(Application.analysis_fingerprint)).all()) == {
            bumped.fingerprint
        }
    analyze_all(factory, bumped, force=True)
    assert stored_analysis(factory) == after
    assert calls["stage_skew"] == 21
    assert [len(v) for v in after.values()] == [len(v) for v in before.values()]


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


@pytest.mark.parametrize("garbage", ['{"not": "a list"', '[{"severity": 3}]', "[1, 2]"])
def test_an_unreadable_results_document_is_scored_again_not_a_crash(factory, garbage: str) -> None:
    registry = load_heuristics(str(BUNDLED))
    with factory() as session:
        pk = _pk(session, TINY)
        analyze_apps(session, [pk], registry)
        session.commit()
        expected = [r.to_dict() for r in ensure_analyzed(session, pk, registry)]
        session.execute(
            update(Analysis).where(Analysis.application_id == pk).values(results=garbage)
        )
        session.commit()
        again = ensure_analyzed(session, pk, registry)
        assert [r.to_dict() for r in again] == expected
        document = select(Analysis.results).where(Analysis.application_id == pk)
        assert session.scalar(document) == garbage  # a page read does not repair it
        analyze_apps(session, [pk], registry)
        session.commit()
        assert session.scalar(document) != garbage  # `analyze` does
