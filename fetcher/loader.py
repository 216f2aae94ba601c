"""Write parsed applications into the database: idempotent upserts on Spark's natural keys.

The caller owns the transaction (one per application): :func:`load_application` either writes the
whole application or, when anything fails, the caller rolls back and nothing of it is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from fetcher.parse.app import AppBundle
from sparkscope.accounting import day_summary as summary
from sparkscope.db import dialect_insert, now_ms
from sparkscope.models.app_rows import APP_CHILD_TABLES
from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Executor,
    Job,
    Stage,
    StageExecutor,
    StageTaskDistribution,
    Task,
)
from sparkscope.models.fetch import FetchFailure, HistoryServer
from sparkscope.models.sql import SqlExecution, SqlFetch, SqlNode, SqlStage


def ensure_server(session: Session, name: str, url: str) -> int:
    """Id of the named server, creating (or updating the URL of) its row."""
    stmt = dialect_insert(session, HistoryServer).values(name=name, url=url, created_at_ms=now_ms())
    stmt = stmt.on_conflict_do_update(index_elements=["name"], set_={"url": url})
    session.execute(stmt)
    server_id = session.scalar(select(HistoryServer.id).where(HistoryServer.name == name))
    assert server_id is not None
    return server_id


def load_application(
    session: Session, server_id: int, bundle: AppBundle
) -> tuple[int, Mapping[Any, Any]]:
    """Upsert the application row and replace all of its child rows; return application.id and
    the day-summary contribution of the version it replaced (empty for a new application), for
    the pipeline to take the new one once the application's findings are stored."""
    row = bundle.application_row()
    row["server_id"] = server_id
    row["fetched_at_ms"] = now_ms()
    update = {k: v for k, v in row.items() if k not in ("server_id", "app_id", "attempt_id")}
    # Findings are derived from the old rows: clear them so analysis re-scores this app.
    update["worst_severity"] = None
    update["analysis_fingerprint"] = None
    existing = session.scalar(
        select(Application.id).where(
            Application.server_id == server_id,
            Application.app_id == row["app_id"],
            Application.attempt_id == row["attempt_id"],
        )
    )
    before = summary.read(session, [existing])
    stmt = dialect_insert(session, Application).values(**row)
    stmt = stmt.on_conflict_do_update(
        index_elements=["server_id", "app_id", "attempt_id"], set_=update
    ).returning(Application.id)
    app_pk = session.scalar(stmt)
    assert app_pk is not None
    if existing is not None:
        # A re-fetch replaces the application: its old rows go, in the same transaction.
        for table in APP_CHILD_TABLES:
            session.execute(delete(table).where(table.application_id == app_pk))
    _bulk(session, EnvironmentProperty, app_pk, bundle.environment)
    _bulk(session, Executor, app_pk, bundle.executors)
    _bulk(session, Job, app_pk, bundle.jobs)
    _bulk(session, Stage, app_pk, bundle.stages)
    known_stages = {(s["stage_id"], s["attempt_id"]) for s in bundle.stages}
    _bulk(
        session,
        StageTaskDistribution,
        app_pk,
        [d for d in bundle.distributions if (d["stage_id"], d["attempt_id"]) in known_stages],
    )
    _bulk(
        session,
        StageExecutor,
        app_pk,
        [e for e in bundle.stage_executors if (e["stage_id"], e["attempt_id"]) in known_stages],
    )
    _bulk(
        session,
        Task,
        app_pk,
        [t for t in bundle.tasks if (t["stage_id"], t["stage_attempt_id"]) in known_stages],
    )
    _bulk(session, SqlFetch, app_pk, bundle.sql_fetch)
    _bulk(session, SqlExecution, app_pk, bundle.sql_executions)
    _bulk(session, SqlNode, app_pk, bundle.sql_nodes)
    _bulk(session, SqlStage, app_pk, bundle.sql_stages)
    if bundle.sql_error is not None:
        # Stored without its SQL part: counted as a failure of the app, so the next run retries it.
        error = f"SQL executions not stored: {bundle.sql_error}"
        record_failure(
            session, server_id, row["app_id"], row["attempt_id"], error, row["last_updated_ms"]
        )
        return app_pk, before
    session.execute(
        delete(FetchFailure).where(
            FetchFailure.server_id == server_id,
            FetchFailure.app_id == row["app_id"],
            FetchFailure.attempt_id == row["attempt_id"],
        )
    )
    return app_pk, before


def _bulk(session: Session, model: Any, app_pk: int, rows: list[dict[str, Any]]) -> None:
    if rows:
        session.execute(model.__table__.insert(), [{**r, "application_id": app_pk} for r in rows])


def record_failure(
    session: Session,
    server_id: int,
    app_id: str,
    attempt_id: str | None,
    error: str,
    last_updated_ms: int | None,
) -> int:
    """Count one more failure of an app (reset when the SHS has a newer version); return the count."""
    key = (server_id, app_id, attempt_id or "")
    existing = session.get(FetchFailure, key)
    if existing is None:
        existing = FetchFailure(
            server_id=server_id,
            app_id=app_id,
            attempt_id=attempt_id or "",
            failures=0,
            last_error="",
            last_failed_at_ms=0,
        )
        session.add(existing)
    elif last_updated_ms is not None and existing.last_updated_ms != last_updated_ms:
        existing.failures = 0
    existing.failures += 1
    existing.last_error = error[:5000]
    existing.last_failed_at_ms = now_ms()
    existing.last_updated_ms = last_updated_ms
    session.flush()
    return existing.failures
