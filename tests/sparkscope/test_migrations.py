"""Migrations: one head, up and down on both databases, no drift from the models."""

from __future__ import annotations

import json
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from sparkscope import migrate
from sparkscope.db import make_engine
from sparkscope.models.base import Base


def test_single_head() -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1


def test_every_revision_has_a_downgrade() -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    for rev in script.walk_revisions():
        source = Path(rev.path).read_text()
        assert "def downgrade() -> None:" in source
        assert "    pass\n" not in source.split("def downgrade() -> None:")[1], rev.revision


def test_upgrade_check_downgrade_roundtrip(fresh_db_url: str) -> None:
    # fresh_db_url is already at head (both PostgreSQL and SQLite)
    engine = make_engine(fresh_db_url)
    tables = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= tables
    migrate.check(fresh_db_url)  # raises when models and migrations drift
    migrate.downgrade(fresh_db_url, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(fresh_db_url)
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_0003_moves_stored_results_up_and_back_down(fresh_db_url: str) -> None:
    """Results stored one row per heuristic (0002) become one document per application plus
    finding rows above NONE (0003), and go back on downgrade."""
    migrate.downgrade(fresh_db_url, "0002")
    engine = make_engine(fresh_db_url)
    skew = {"name": "stage_skew", "severity": 3, "value": 9.5, "title": "skewed", "impact": None}
    gc = {"name": "executor_gc", "severity": 0, "value": 0.01, "title": "fine", "impact": None}
    with engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO history_server (id, name, url, created_at_ms) VALUES (1, 's', 'u', 0)"
            )
        )
        c.execute(
            text(
                "INSERT INTO application (id, server_id, app_id, attempt_id, name, completed, "
                "fetched_at_ms, analysis_fingerprint) VALUES (7, 1, 'app-1', '', 'n', true, 0, 'fp')"
            )
        )
        for r in (skew, gc):
            c.execute(
                text(
                    "INSERT INTO analysis_result (application_id, heuristic, severity, value, "
                    "title, result, fingerprint, analyzed_at_ms) "
                    "VALUES (7, :h, :s, :v, :t, :r, 'fp', 1234)"
                ),
                {
                    "h": r["name"],
                    "s": r["severity"],
                    "v": r["value"],
                    "t": r["title"],
                    "r": json.dumps(r),
                },
            )
    migrate.upgrade(fresh_db_url)
    with engine.connect() as c:
        at, document = c.execute(text("SELECT analyzed_at_ms, results FROM analysis")).one()
        assert at == 1234
        assert sorted(json.loads(document), key=lambda r: r["name"]) == [gc, skew]
        rows = c.execute(text("SELECT application_id, heuristic, severity FROM analysis_result"))
        assert rows.all() == [(7, "stage_skew", 3)]
    migrate.downgrade(fresh_db_url, "0002")
    with engine.connect() as c:
        rows = c.execute(
            text(
                "SELECT heuristic, severity, value, title, result, fingerprint, analyzed_at_ms "
                "FROM analysis_result ORDER BY heuristic"
            )
        ).all()
    assert [(h, s, v, t, fp, at) for h, s, v, t, _, fp, at in rows] == [
        ("executor_gc", 0, 0.01, "fine", "fp", 1234),
        ("stage_skew", 3, 9.5, "skewed", "fp", 1234),
    ]
    assert [r if isinstance(r, dict) else json.loads(r) for *_, r, _, _ in rows] == [gc, skew]
    migrate.upgrade(fresh_db_url)
    engine.dispose()


def test_0014_drops_the_stored_predictions_and_queues_their_recomputation(
    fresh_db_url: str,
) -> None:
    """Run features gained the iterations: 0014 empties the prediction cache (stored vectors one
    feature short) and queues the predictions step of every server that has runs, once."""
    migrate.downgrade(fresh_db_url, "0013")
    engine = make_engine(fresh_db_url)
    with engine.begin() as c:
        for sid in (1, 2):
            c.execute(
                text(
                    "INSERT INTO history_server (id, name, url, created_at_ms) "
                    f"VALUES ({sid}, 's{sid}', 'u', 0)"
                )
            )
        c.execute(
            text(
                "INSERT INTO application (id, server_id, app_id, attempt_id, name, completed, "
                "fetched_at_ms, analysis_fingerprint) VALUES (7, 1, 'app-1', '', 'n', true, 0, 'fp')"
            )
        )
        c.execute(
            text(
                "INSERT INTO run_prediction (application_id, server_id, key, start_time_ms, "
                "succeeded, fetched_at_ms, features, vector, candidates, forecasts, level, model, "
                "n_train, verdict, causes, computed_at_ms) VALUES (7, 1, 'n', 0, true, 0, '{}', "
                "'[]', '{}', '{}', 0.8, 'io_line', 0, 'insufficient_history', '[]', 0)"
            )
        )
    migrate.upgrade(fresh_db_url)
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM run_prediction")).scalar() == 0
        queued = c.execute(
            text("SELECT server_id, subject FROM pipeline_pending WHERE step = 'predictions'")
        ).all()
    assert [tuple(r) for r in queued] == [(1, "")]  # server 2 has no runs
    migrate.downgrade(fresh_db_url, "0013")
    migrate.upgrade(fresh_db_url)  # again: still queued once
    with engine.connect() as c:
        n = c.execute(text("SELECT count(*) FROM pipeline_pending WHERE step = 'predictions'"))
        assert n.scalar() == 1
    engine.dispose()
