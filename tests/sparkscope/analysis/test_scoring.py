"""Analysis: cached findings per fingerprint, the analyze command, incremental re-scores after a
config edit or a version bump, and unreadable stored results (the same findings whichever way they
are computed, and resources on the recorded apps: test_scoring_equivalence.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.scoring import analyze_all, analyze_apps, ensure_analyzed
from sparkscope.cli.main import cli
from sparkscope.models.analysis import Analysis, AnalysisResult
from sparkscope.models.application import Application
from tests.sparkscope.analysis.conftest import BUNDLED, N_HEURISTICS, stored_analysis

TINY = "local-1795972070675"  # 2000 tiny tasks: task_granularity CRITICAL under production config


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
