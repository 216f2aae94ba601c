"""Write parsed applications into the database: idempotent upserts on Spark's natural keys.

The caller owns the transaction (one per application): :func:`load_application` either writes the
whole application or, when anything fails, the caller rolls back and nothing of it is stored.

An application costs a handful of statements: the look-up of a stored version, the upsert of its
row (``RETURNING`` its id), one bulk write per child table (:mod:`fetcher.bulk`) and the removal
of its failure record. Only a re-fetch reads more (what the stored version contributes to the day
summary) and deletes the stored version's rows. The statements are built once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from fetcher import bulk
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
from sparkscope.redaction import without_credentials

APPS = cast(Table, Application.__table__)
FAILURES = cast(Table, FetchFailure.__table__)

#: (table, the bundle's rows of it, the row's stage key columns when a stage must be known)
CHILD_ROWS: tuple[tuple[Table, str, tuple[str, str] | None], ...] = tuple(
    (cast(Table, model.__table__), rows, stage_key)
    for model, rows, stage_key in (
        (EnvironmentProperty, "environment", None),
        (Executor, "executors", None),
        (Job, "jobs", None),
        (Stage, "stages", None),
        (StageTaskDistribution, "distributions", ("stage_id", "attempt_id")),
        (StageExecutor, "stage_executors", ("stage_id", "attempt_id")),
        (Task, "tasks", ("stage_id", "stage_attempt_id")),
        (SqlFetch, "sql_fetch", None),
        (SqlExecution, "sql_executions", None),
        (SqlNode, "sql_nodes", None),
        (SqlStage, "sql_stages", None),
    )
)

#: The columns a re-fetch keeps (its key); every other one is replaced.
KEY_COLUMNS = ("server_id", "app_id", "attempt_id")


@dataclass(frozen=True)
class Loaded:
    """What :func:`load_application` wrote."""

    app_pk: int
    #: the application row as stored (without its id)
    row: Mapping[str, Any]
    #: the day-summary contribution of the version this one replaced (empty for a new one)
    replaced: Mapping[Any, Any]


def ensure_server(session: Session, name: str, url: str) -> int:
    """Id of the named server, creating (or updating the URL of) its row (never with the
    credentials a URL may carry: an older row that holds some is rewritten without them)."""
    url = without_credentials(url)
    stmt = dialect_insert(session, HistoryServer).values(name=name, url=url, created_at_ms=now_ms())
    stmt = stmt.on_conflict_do_update(index_elements=["name"], set_={"url": url})
    session.execute(stmt)
    server_id = session.scalar(select(HistoryServer.id).where(HistoryServer.name == name))
    assert server_id is not None
    return server_id


_EXISTING = select(APPS.c.id, APPS.c.allocated_core_hours, APPS.c.wasted_core_hours).where(
    APPS.c.server_id == bindparam("k_server"),
    APPS.c.app_id == bindparam("k_app"),
    APPS.c.attempt_id == bindparam("k_attempt"),
)
_CLEAR_FAILURE = delete(FAILURES).where(
    FAILURES.c.server_id == bindparam("k_server"),
    FAILURES.c.app_id == bindparam("k_app"),
    FAILURES.c.attempt_id == bindparam("k_attempt"),
)


@cache
def _upsert(dialect: str, columns: tuple[str, ...]) -> Any:
    """INSERT of the application row that replaces the stored version of the same key."""
    stmt = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(APPS)
    stmt = stmt.on_conflict_do_update(
        index_elements=list(KEY_COLUMNS),
        set_={c: stmt.excluded[c] for c in columns if c not in KEY_COLUMNS},
    )
    return stmt.returning(APPS.c.id)


def load_application(
    session: Session, server_id: int, bundle: AppBundle, analysis: Mapping[str, Any]
) -> Loaded:
    """Upsert the application row and replace all of its child rows.

    ``analysis`` holds the application row's analysis columns, computed before the load: its
    worst severity and the fingerprint of the heuristics config that scored it (None when it was
    not scored), and its core-hours when scored. The row's earlier findings are derived from its
    old rows, so a re-fetch deletes them with those (the pipeline writes the new ones).
    """
    row = bundle.application_row()
    row["server_id"] = server_id
    row["fetched_at_ms"] = now_ms()
    row.update(analysis)
    key = {"k_server": server_id, "k_app": row["app_id"], "k_attempt": row["attempt_id"]}
    conn = session.connection()
    found = conn.execute(_EXISTING, key).first()
    existing = None if found is None else found.id
    before: Mapping[Any, Any] = {}
    stored = dict(row)
    if "wasted_core_hours" not in row:  # not scored: a re-fetch keeps the stored core-hours
        stored["allocated_core_hours"] = None if found is None else found.allocated_core_hours
        stored["wasted_core_hours"] = None if found is None else found.wasted_core_hours
    if existing is not None:
        # A re-fetch replaces the application: its old rows go, in the same transaction.
        before = summary.read(session, [existing])
        for model in APP_CHILD_TABLES:
            session.execute(delete(model).where(model.application_id == existing))
    app_pk = conn.execute(_upsert(conn.dialect.name, tuple(row)), row).scalar()
    assert app_pk is not None
    known = {(s["stage_id"], s["attempt_id"]) for s in bundle.stages}
    for child, attr, stage_key in CHILD_ROWS:
        rows = getattr(bundle, attr)
        if stage_key is not None:
            a, b = stage_key
            rows = [r for r in rows if (r[a], r[b]) in known]
        bulk.write(conn, bulk.layout(child), app_pk, rows)
    if bundle.sql_error is not None:
        # Stored without its SQL part: counted as a failure of the app, so the next run retries it.
        error = f"SQL executions not stored: {bundle.sql_error}"
        record_failure(
            session, server_id, row["app_id"], row["attempt_id"], error, row["last_updated_ms"]
        )
    else:
        conn.execute(_CLEAR_FAILURE, key)
    return Loaded(app_pk, stored, before)


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
