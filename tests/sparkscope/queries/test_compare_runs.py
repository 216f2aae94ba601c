"""The compare and history reads on recorded Spark runs (demo/spark-events), PostgreSQL and SQLite:
stages lined up by call site, gained and lost findings, verdicts, the run picker, history x axes."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from heuristics.registry import Registry
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.cli.main import cli
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine
from sparkscope.models.application import Application, Stage
from sparkscope.models.predictions import RunPrediction
from sparkscope.queries.compare import compare_apps, same_name_runs
from sparkscope.queries.compare_stages import ComparedStage, call_site, pair_stages
from sparkscope.queries.history import app_names, history, suggest_names
from tests.sparkscope.web import builders as b

RECORDED = Path(__file__).resolve().parents[3] / "demo" / "spark-events"


def load_recorded(url: str) -> None:
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(RECORDED)], env={"SPARKSCOPE_DATABASE_URL": url}
    )
    assert result.exit_code == 0, result.output


def runs_of(session: Session, name: str) -> list[Application]:
    query = select(Application).where(Application.name == name)
    return list(session.scalars(query.order_by(Application.start_time_ms)))


def registry() -> Registry:
    return load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))


def stage_duration(session: Session, app: Application, stage_id: int) -> int:
    row = session.execute(
        select(Stage.first_task_launched_time_ms, Stage.completion_time_ms)
        .where(Stage.application_id == app.id, Stage.stage_id == stage_id)
        .order_by(Stage.attempt_id.desc())
    ).first()
    assert row is not None and row[0] is not None and row[1] is not None
    return int(row[1] - row[0])


def test_stages_line_up_by_call_site_with_deltas(fresh_db_url: str) -> None:
    load_recorded(fresh_db_url)
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        left, right = runs_of(session, "flaky_ingest")
        # The right run's code changed: `first` moved two lines down, `collect` became a `save`.
        script = "/tmp/sparkscope-build-public/jobs/fail_task_retry.py"
        for ids, name in (((3, 5), f"first at {script}:38"), ((2,), f"save at {script}:50")):
            session.execute(
                update(Stage)
                .where(Stage.application_id == right.id, Stage.stage_id.in_(ids))
                .values(name=name)
            )
        session.flush()
        c = compare_apps(session, left, right, registry(), "")
        paired = [p for p in c.stages if p.left and p.right]
        assert {
            (p.left.stage_id, p.right.stage_id, p.by) for p in paired if p.left and p.right
        } == {
            (0, 0, "name"),
            (3, 3, "call site"),
            (5, 5, "call site"),
        }
        # Largest duration change first; each delta is right minus left of the stored stage.
        changes = [p.change_ms for p in paired]
        assert changes == sorted(changes, reverse=True)
        for p in paired:
            assert p.left and p.right
            expected = stage_duration(session, right, p.right.stage_id) - stage_duration(
                session, left, p.left.stage_id
            )
            assert p.delta("duration_ms") == expected
            assert p.delta("num_tasks") == p.right.num_tasks - p.left.num_tasks
        # The stage renamed away is on one side only, after the pairs: left first, then right.
        tail = c.stages[len(paired) :]
        assert [(p.left is None, p.right is None) for p in tail] == [(False, True), (True, False)]
        assert tail[0].left and tail[0].left.name == f"collect at {script}:32"
        assert tail[1].right and tail[1].right.name == f"save at {script}:50"
        assert tail[0].delta("duration_ms") is None
    engine.dispose()


def test_repeated_names_pair_in_submission_order_and_verdicts_are_the_stored_ones(
    fresh_db_url: str,
) -> None:
    load_recorded(fresh_db_url)
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        runs = runs_of(session, "daily_sales_etl")
        c = compare_apps(session, runs[0], runs[-1], registry(), "")
        # The same job twice: every stage meets its namesake of the same position, although the
        # names repeat (three `parquet at ...`, five `$anonfun$... at CompletableFuture`).
        assert len({p.name for p in c.stages}) < len(c.stages)
        assert all(p.left and p.right and p.left.stage_id == p.right.stage_id for p in c.stages)
        stored = session.get(RunPrediction, runs[-1].id)
        assert stored is not None and c.right_prediction is not None  # fetch stores them
        assert c.right_prediction.verdict == stored.verdict
        assert c.right_prediction.expected_ms == stored.expected_ms
        # One-sided findings first, read as gained (right only) or lost (left only).
        sided = [p.one_sided for p in c.findings]
        assert sided == sorted(sided, reverse=True)
        for p in c.findings:
            assert p.change == (
                "gained" if p.left is None else "lost" if p.right is None else "both"
            )
    engine.dispose()


def test_picker_lists_the_same_name_runs_own_server_first(fresh_db_url: str) -> None:
    load_recorded(fresh_db_url)
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        runs = runs_of(session, "daily_sales_etl")
        other = b.server(session, "elsewhere", "http://other.example:18080")
        b.application(session, other, "other-1", name="daily_sales_etl", start_ms=2**41)
        b.application(session, other, "other-2", name="daily_sales_etlx", start_ms=2**41)
        session.flush()
        picked = same_name_runs(session, runs[2])
        ids = [o.app_id for o in picked]
        # Its own server's runs newest first, then the other server's; other names never.
        assert ids == [r.app_id for r in reversed(runs) if r.id != runs[2].id] + ["other-1"]
        assert [o.app_id for o in picked if o.previous] == [runs[1].app_id]
        # Bounded, and the previous run stays among them.
        two = same_name_runs(session, runs[4], limit=2)
        assert [o.app_id for o in two] == [runs[3].app_id, runs[2].app_id]
        assert two[0].previous
        oldest_first = same_name_runs(session, runs[1], limit=1)
        assert [(o.app_id, o.previous) for o in oldest_first] == [(runs[0].app_id, True)]
    engine.dispose()


def test_history_x_values_and_name_suggestions(fresh_db_url: str) -> None:
    load_recorded(fresh_db_url)
    engine = make_engine(fresh_db_url)
    with Session(engine) as session:
        runs = runs_of(session, "daily_sales_etl")
        points = history(session, "daily_sales_etl")
        assert [p.input_bytes for p in points] == [r.input_bytes for r in runs]
        assert [p.executors for p in points] == [r.num_executors for r in runs]
        assert len({p.input_bytes for p in points}) == len(runs)  # the runs read different sizes
        names = app_names(session)
        assert suggest_names(session, "daily_sales_elt", names)[0] == "daily_sales_etl"
        assert suggest_names(session, "INVENTORY", names) == [
            "inventory_snapshot",
            "legacy_inventory_job",
        ]
        assert suggest_names(session, "zzzz-nothing-like-it", names) == []
        # "_" and "%" are letters here, not LIKE wildcards.
        assert len(suggest_names(session, "_", names)) == 8
        assert suggest_names(session, "%", names) == []
        # Containing comes from every stored name, not only the page's bounded list.
        assert suggest_names(session, "flaky", []) == ["flaky_ingest"]


def test_call_site_and_pairing_rules() -> None:
    def run(stage_id: int, name: str, submitted: int, duration: int) -> ComparedStage:
        return ComparedStage(stage_id, 0, name, "COMPLETE", submitted, duration, 0, 0, 0, 0, 1)

    assert call_site("count at Foo.scala:12") == "count at Foo.scala"
    assert call_site("count at Foo.scala") == "count at Foo.scala"
    left = [run(1, "map at A.py:3", 10, 100), run(2, "map at A.py:3", 20, 50)]
    # Submitted in the other order than their ids: pairing follows submission, not ids.
    right = [run(8, "map at A.py:3", 30, 80), run(7, "map at A.py:3", 5, 400), run(9, "x", 1, 9)]
    right_sorted = sorted(right, key=lambda s: s.submitted_ms or 0)
    pairs = pair_stages(left, right_sorted)
    assert [(p.left and p.left.stage_id, p.right and p.right.stage_id) for p in pairs] == [
        (1, 7),  # +300 ms
        (2, 8),  # +30 ms
        (None, 9),
    ]
    # The first of two namesakes is gone on the right: the one the sequence around it matches
    # pairs (the second), not the first in order.
    left = [run(1, "a at A.py:1", 1, 10), run(2, "a at A.py:1", 2, 20), run(3, "b", 3, 30)]
    right = [run(5, "a at A.py:1", 1, 25), run(6, "b", 2, 30)]
    pairs = pair_stages(left, right)
    assert [(p.left and p.left.stage_id, p.right and p.right.stage_id) for p in pairs] == [
        (2, 5),
        (3, 6),
        (1, None),
    ]
