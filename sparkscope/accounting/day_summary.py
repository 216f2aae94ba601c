"""The fleet's per-day summary (:class:`~sparkscope.models.DaySummary`), kept equal to a recount.

Every write path that changes what an application contributes (its start day, worst severity,
user, queue, wasted core-hours, totals, or its findings) reads the contributions of the
applications it touches before and after, and adds the difference::

    before = summary.read(session, pks)
    ...  # insert, update or delete the applications and their findings
    summary.apply(session, before, summary.read(session, pks))

The difference is added with one upsert per touched row (``apps = apps + delta``), so writers
that touch the same day add up instead of overwriting each other. :func:`rebuild` recomputes the
whole table in SQL (bulk loads, migrations, or to repair it).

Wasted core-hours are summed on a grid of 2**-33 core-hour (0.42 core-microseconds): sums and
differences of such numbers are exact in a double up to 2**20 (about a million) core-hours, so a
row up to that holds the same number whatever the order its applications were added and taken
away in, and the same as a recount, to the last bit (beyond it, to a double's rounding).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from operator import add, sub
from typing import Any, Literal, cast

from sqlalchemy import Connection, Table, delete, select, text, tuple_
from sqlalchemy.orm import Session

from sparkscope import bulk
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application
from sparkscope.models.summary import DaySummary

DAY_MS = 86_400_000
NO_DAY = -1
#: The summed columns, in the order of a contribution vector.
FIELDS = ("apps", "executors", "jobs", "stages", "tasks", "wasted_core_hours", "wasted_apps")

Key = tuple[str, int, str]
"""(dimension, day, key) of one summary row."""
Vector = tuple[float, ...]
Contributions = dict[Key, Vector]

_CHUNK = 1000
#: Key of the PostgreSQL advisory lock held by summary writers until they commit.
LOCK_KEY = 0x5350_4B53_5355_4D4D


#: Wasted core-hours are counted in multiples of 1 / GRID.
GRID = 2**33


def on_grid(core_hours: float) -> float:
    """Non-negative core-hours rounded to the nearest multiple of 1 / GRID (half up)."""
    return math.floor(core_hours * GRID + 0.5) / GRID


def day_of(start_time_ms: int | None) -> int:
    """The summary day of a start time (UTC day number; -1 when unknown)."""
    return start_time_ms // DAY_MS if start_time_ms is not None and start_time_ms >= 0 else NO_DAY


def _add(
    into: dict[Key, list[float]], key: Key, vector: Iterable[float], sign: Literal[1, -1] = 1
) -> None:
    acc = into.get(key)
    if acc is None:
        acc = into[key] = [0.0] * len(FIELDS)
    # acc + v and acc - v are, to the bit, acc + 1 * v and acc + -1 * v (negation is exact)
    acc[:] = map(add if sign == 1 else sub, acc, vector)


def lock(session: Session | Connection) -> None:
    """Serialise summary writers until the end of the transaction (PostgreSQL; SQLite has one
    writer at a time anyway): a writer's "before" is then never stale, even when a fetch and an
    ``analyze`` change the same application at the same moment."""
    bind = session.get_bind() if isinstance(session, Session) else session
    if bind.dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK_KEY})


def read(session: Session, application_pks: Iterable[int | None]) -> Contributions:
    """What the given applications (those that exist) contribute to the summary now, together;
    takes the writers' lock first (see :func:`lock`)."""
    total: dict[Key, list[float]] = {}
    for contributions in read_each(session, application_pks).values():
        add_into(total, contributions)
    return {key: tuple(v) for key, v in total.items()}


def read_each(session: Session, application_pks: Iterable[int | None]) -> dict[int, Contributions]:
    """What each of the given applications (those that exist) contributes to the summary now, by
    id, read in one pass; takes the writers' lock first (see :func:`lock`)."""
    lock(session)
    pks = sorted({pk for pk in application_pks if pk is not None})
    out: dict[int, dict[Key, list[float]]] = {}
    for i in range(0, len(pks), _CHUNK):
        chunk = pks[i : i + _CHUNK]
        days: dict[int, int] = {}
        for pk, *values in session.execute(
            select(Application.id, *(Application.__table__.c[c] for c in APP_FIELDS)).where(
                Application.id.in_(chunk)
            )
        ):
            days[pk] = _add_application(
                out.setdefault(pk, {}), dict(zip(APP_FIELDS, values, strict=True))
            )
        for pk, heuristic in session.execute(
            select(AnalysisResult.application_id, AnalysisResult.heuristic)
            .where(AnalysisResult.application_id.in_(chunk))
            .where(AnalysisResult.severity > 0)
        ):
            if pk in days:
                _add(out[pk], ("heuristic", days[pk], heuristic), _FINDING)
    return {pk: {key: tuple(v) for key, v in c.items()} for pk, c in out.items()}


#: The application columns a contribution is made of.
APP_FIELDS = (
    "start_time_ms",
    "worst_severity",
    "spark_user",
    "queue",
    "wasted_core_hours",
    "num_executors",
    "num_jobs",
    "num_stages",
    "num_tasks",
)
_FINDING = (1, 0, 0, 0, 0, 0.0, 0)


def _add_application(out: dict[Key, list[float]], app: Mapping[str, Any]) -> int:
    """Add what one application row (:data:`APP_FIELDS`) contributes, its findings aside;
    returns its day."""
    day = day_of(app["start_time_ms"])
    wasted = app["wasted_core_hours"]
    totals = (app["num_executors"], app["num_jobs"], app["num_stages"], app["num_tasks"])
    waste = 0.0 if wasted is None else on_grid(wasted)
    vector = (1, *(t or 0 for t in totals), waste, 0 if wasted is None else 1)
    worst = app["worst_severity"]
    _add(out, ("severity", day, "" if worst is None else str(worst)), vector)
    _add(out, ("user", day, app["spark_user"] or ""), vector)
    _add(out, ("queue", day, app["queue"] or ""), vector)
    return day


def contribution(app: Mapping[str, Any], flagged: Iterable[str]) -> Contributions:
    """What an application contributes, from its row as written (:data:`APP_FIELDS`) and the
    heuristics of its findings (severity above none): what :func:`read` reads back once the
    row and findings are stored, without reading them back."""
    out: dict[Key, list[float]] = {}
    day = _add_application(out, app)
    for heuristic in flagged:
        _add(out, ("heuristic", day, heuristic), _FINDING)
    return {key: tuple(v) for key, v in out.items()}


def add_into(total: dict[Key, list[float]], contributions: Mapping[Key, Vector]) -> None:
    """Add contributions (of one more application) into a running total, in place."""
    for key, vector in contributions.items():
        _add(total, key, vector)


def apply(
    session: Session, before: Mapping[Key, Sequence[float]], after: Mapping[Key, Sequence[float]]
) -> None:
    """Add ``after - before`` to the summary (in the caller's transaction)."""
    delta: dict[Key, list[float]] = {}
    for key, vector in after.items():
        _add(delta, key, vector)
    for key, vector in before.items():
        _add(delta, key, vector, -1)
    # Sorted: one order for every writer, so that two of them cannot deadlock on the rows.
    changed = sorted((k, _typed(v)) for k, v in delta.items() if _changes(v))
    if not changed:
        return
    values: list[Any] = []
    for row_key, vector in changed:
        values += (*row_key, *vector)
    bulk.insert_rows(session.connection(), _TABLE, _COLUMNS, values, _ADD)
    # A row nothing counts any more goes (its float sum may keep a rounding residue).
    emptied = [k for k, v in changed if v[0] < 0]
    if emptied:
        session.execute(
            delete(DaySummary).where(
                tuple_(DaySummary.dimension, DaySummary.day, DaySummary.key).in_(emptied),
                DaySummary.apps <= 0,
            )
        )


_TABLE = cast(Table, DaySummary.__table__)
_COLUMNS = ("dimension", "day", "key", *FIELDS)
#: The upsert adds a difference to a summary row.
_ADD = 'ON CONFLICT (dimension, day, "key") DO UPDATE SET ' + ", ".join(
    f"{f} = day_summary.{f} + excluded.{f}" for f in FIELDS
)


def _changes(vector: Sequence[float]) -> bool:
    return any(v != 0 for v in vector)


def _typed(vector: Sequence[float]) -> list[float | int]:
    return [
        v if f == "wasted_core_hours" else round(v) for f, v in zip(FIELDS, vector, strict=True)
    ]


def delete_applications(session: Session, application_pks: Sequence[int]) -> None:
    """Delete applications (their rows cascade) and take them out of the summary."""
    before = read(session, application_pks)
    session.execute(delete(Application).where(Application.id.in_(list(application_pks))))
    apply(session, before, {})


# The same contributions as read(), for every application at once, in SQL (PostgreSQL and SQLite).
_DAY_SQL = "CASE WHEN a.start_time_ms >= 0 THEN a.start_time_ms / 86400000 ELSE -1 END"
#: on_grid() in SQL: floor(x + 0.5), which a cast to an integer is in SQLite (x >= 0), not in
#: PostgreSQL (it rounds half to even).
_ON_GRID = {
    "postgresql": f"floor(a.wasted_core_hours * {GRID} + 0.5) / {GRID}.0",
    "sqlite": f"CAST(a.wasted_core_hours * {GRID} + 0.5 AS INTEGER) / {GRID}.0",
}


def recount_sql(dialect: str) -> str:
    """(dimension, day, key, *FIELDS) of every summary row, counted from the applications."""
    sums = (
        "COUNT(*), COALESCE(SUM(a.num_executors), 0), COALESCE(SUM(a.num_jobs), 0), "
        "COALESCE(SUM(a.num_stages), 0), COALESCE(SUM(a.num_tasks), 0), "
        f"COALESCE(SUM({_ON_GRID[dialect]}), 0), COUNT(a.wasted_core_hours)"
    )
    return " UNION ALL ".join(
        [
            f"SELECT '{dim}', {_DAY_SQL}, {key}, {sums} FROM application a GROUP BY 2, 3"
            for dim, key in (
                ("severity", "COALESCE(CAST(a.worst_severity AS VARCHAR(8)), '')"),
                ("user", "COALESCE(a.spark_user, '')"),
                ("queue", "COALESCE(a.queue, '')"),
            )
        ]
        + [
            f"SELECT 'heuristic', {_DAY_SQL}, r.heuristic, COUNT(*), 0, 0, 0, 0, 0, 0 "
            "FROM analysis_result r JOIN application a ON a.id = r.application_id "
            "WHERE r.severity > 0 GROUP BY 2, 3"
        ]
    )


def rebuild(conn: Connection | Session) -> None:
    """Recount the whole summary from the applications and their findings."""
    lock(conn)
    bind = conn.get_bind() if isinstance(conn, Session) else conn
    conn.execute(delete(DaySummary))
    conn.execute(
        text(
            f"INSERT INTO day_summary (dimension, day, key, {', '.join(FIELDS)}) "
            + recount_sql(bind.dialect.name)
        )
    )
