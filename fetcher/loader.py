"""Write parsed applications into the database: idempotent upserts on Spark's natural keys.

The caller owns the transaction, which holds one application or several:
:func:`load_applications` either writes every one of them whole or, when anything fails, the
caller rolls back and nothing of them is stored.

Applications loaded together cost a handful of statements between them: the look-up of stored
versions, the upsert of their rows (``RETURNING`` their ids), one bulk write per child table
(:mod:`sparkscope.bulk`) and the removal of their failure records. Only a re-fetch reads more (what
the stored version contributes to the day summary) and deletes the stored version's rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, delete, select
from sqlalchemy.orm import Session

from fetcher.parse.app import AppBundle
from sparkscope import bulk
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
    """What :func:`load_applications` wrote of one application."""

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


#: The stored versions of applications: ``%s`` takes one placeholder per app id.
_EXISTING = (
    "SELECT id, app_id, attempt_id, allocated_core_hours, wasted_core_hours FROM application "
    "WHERE server_id = ? AND app_id IN (%s)"
)
#: The failure records of applications: ``%s`` takes one ``(?, ?)`` per (app id, attempt id).
_CLEAR_FAILURES = (
    "DELETE FROM fetch_failure WHERE server_id = ? AND (app_id, attempt_id) IN (VALUES %s)"
)


@dataclass(frozen=True)
class _StoredVersion:
    """What a re-fetch needs of the stored version of an application."""

    id: int
    allocated_core_hours: float | None
    wasted_core_hours: float | None


def load_applications(
    session: Session, server_id: int, apps: Sequence[tuple[AppBundle, Mapping[str, Any]]]
) -> list[Loaded]:
    """Upsert the applications' rows and replace all of their child rows, in the caller's
    transaction: a few statements for all of them (one per child table), whatever their number.

    Each application comes with its row's analysis columns, computed before the load: its worst
    severity and the fingerprint of the heuristics config that scored it (None when it was not
    scored), and its core-hours when scored. An application's earlier findings are derived from
    its old rows, so a re-fetch deletes them with those (the pipeline writes the new ones). The
    applications must have distinct keys (server, app id, attempt id).
    """
    if not apps:
        return []
    fetched_at = now_ms()
    rows = []
    for bundle, analysis in apps:
        row = bundle.application_row()
        row["server_id"] = server_id
        row["fetched_at_ms"] = fetched_at
        row.update(analysis)
        rows.append(row)
    keys = [(row["app_id"], row["attempt_id"]) for row in rows]
    if len(set(keys)) != len(keys):
        raise ValueError("an application appears twice in one load")
    conn = session.connection()
    app_ids = sorted({k[0] for k in keys})
    found = {
        (app_id, attempt_id): _StoredVersion(pk, allocated, wasted)
        for pk, app_id, attempt_id, allocated, wasted in bulk.query(
            conn, _EXISTING % bulk.marks(len(app_ids)), [server_id, *app_ids]
        )
    }
    replaced = [old.id for old in map(found.get, keys) if old is not None]
    # what the versions replaced contribute to the day summary, read before their rows go
    contributed = summary.read_each(session, replaced) if replaced else {}
    befores: list[Mapping[Any, Any]] = []
    stored_rows = []
    for row, key in zip(rows, keys, strict=True):
        old = found.get(key)
        stored = dict(row)
        if "wasted_core_hours" not in row:  # not scored: a re-fetch keeps the stored core-hours
            stored["allocated_core_hours"] = None if old is None else old.allocated_core_hours
            stored["wasted_core_hours"] = None if old is None else old.wasted_core_hours
        stored_rows.append(stored)
        befores.append({} if old is None else contributed.get(old.id, {}))
    if replaced:
        # A re-fetch replaces the application: its old rows go, in the same transaction.
        for model in APP_CHILD_TABLES:
            session.execute(delete(model).where(model.application_id.in_(replaced)))
    pks: dict[tuple[str, str], int] = {}
    for group in _by_columns(rows).values():
        for pk, app_id, attempt_id in bulk.upsert(
            conn, APPS, KEY_COLUMNS, group, ("id", "app_id", "attempt_id")
        ):
            pks[(app_id, attempt_id)] = pk
    app_pks = [pks[key] for key in keys]
    # each application's stage attempts: a row of a stage not stored is left out
    stages = [{(s["stage_id"], s["attempt_id"]) for s in b.stages} for b, _ in apps]
    for child, attr, stage_key in CHILD_ROWS:
        groups = []
        for (bundle, _), pk, known in zip(apps, app_pks, stages, strict=True):
            child_rows = getattr(bundle, attr)
            if stage_key is not None and child_rows:
                a, b = stage_key
                child_rows = [r for r in child_rows if (r[a], r[b]) in known]
            if child_rows:
                groups.append((pk, child_rows))
        if groups:
            bulk.write(conn, bulk.layout(child), groups)
    cleared = []
    for (bundle, _), row, key in zip(apps, rows, keys, strict=True):
        if bundle.sql_error is not None:
            # Stored without its SQL part: a failure of the app, so the next run retries it.
            error = f"SQL executions not stored: {bundle.sql_error}"
            record_failure(session, server_id, key[0], key[1], error, row["last_updated_ms"])
        else:
            cleared.append(key)
    if cleared:
        bulk.query(
            conn,
            _CLEAR_FAILURES % ", ".join(["(?, ?)"] * len(cleared)),
            [server_id, *(v for key in cleared for v in key)],
        )
    return [
        Loaded(pk, stored, before)
        for pk, stored, before in zip(app_pks, stored_rows, befores, strict=True)
    ]


def _by_columns(rows: list[dict[str, Any]]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    """The rows grouped by their columns (one multi-row statement per group)."""
    out: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(tuple(row), []).append(row)
    return out


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
