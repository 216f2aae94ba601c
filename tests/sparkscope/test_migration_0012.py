"""Migration 0012 fills each analysed application's impact from its stored findings (the costliest
one's core-hours, 0 when none has a cost, NULL when not analysed) and goes back down cleanly,
keeping the application table's name triggers (PostgreSQL and SQLite)."""

from __future__ import annotations

from sqlalchemy import inspect, text

from sparkscope import migrate
from sparkscope.db import make_engine


def test_0012_fills_the_impact_from_the_findings_and_goes_back(fresh_db_url: str) -> None:
    migrate.downgrade(fresh_db_url, "0011")
    engine = make_engine(fresh_db_url)
    with engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO history_server (id, name, url, created_at_ms) VALUES (1, 's', 'u', 0)"
            )
        )
        for pk, fingerprint in ((1, "fp"), (2, "fp"), (3, None)):
            c.execute(
                text(
                    "INSERT INTO application (id, server_id, app_id, attempt_id, name, completed, "
                    "fetched_at_ms, analysis_fingerprint) "
                    "VALUES (:pk, 1, :a, '', 'n', true, 0, :fp)"
                ),
                {"pk": pk, "a": f"app-{pk}", "fp": fingerprint},
            )
        for heuristic, hours in (("stage_skew", 1.5), ("executor_gc", 4.0), ("config", None)):
            c.execute(
                text(
                    "INSERT INTO analysis_result (application_id, heuristic, severity, title, "
                    "impact_core_hours) VALUES (1, :h, 2, 't', :c)"
                ),
                {"h": heuristic, "c": hours},
            )
        c.execute(
            text(
                "INSERT INTO analysis_result (application_id, heuristic, severity, title) "
                "VALUES (2, 'config', 1, 't')"
            )
        )
    migrate.upgrade(fresh_db_url)
    with engine.connect() as c:
        impact = dict(c.execute(text("SELECT id, impact_core_hours FROM application")).all())
    assert impact == {1: 4.0, 2: 0.0, 3: None}
    migrate.downgrade(fresh_db_url, "0011")
    columns = {col["name"] for col in inspect(engine).get_columns("application")}
    assert "impact_core_hours" not in columns
    with engine.begin() as c:  # the name trigger still keeps the distinct names
        c.execute(
            text(
                "INSERT INTO application (id, server_id, app_id, attempt_id, name, completed, "
                "fetched_at_ms) VALUES (4, 1, 'app-4', '', 'brand new name', true, 0)"
            )
        )
        names = set(c.execute(text("SELECT name FROM application_name")).scalars())
    assert "brand new name" in names
    migrate.upgrade(fresh_db_url)
    engine.dispose()
