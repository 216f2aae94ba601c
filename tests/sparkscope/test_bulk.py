"""Bulk writes of the loader (COPY on PostgreSQL, INSERTs of many rows on SQLite) store what the
ORM's INSERT stored: every value as given, JSON read back equal, a JSON ``None`` as JSON null and
a missing JSON key as SQL NULL, a missing count as its default; and a row of the wrong shape fails
the transaction as an INSERT would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import orjson
import pytest
from sqlalchemy import Table, func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from sparkscope import bulk
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import Application, Stage, StageTaskDistribution, Task
from sparkscope.models.fetch import HistoryServer

STAGE = {
    "stage_id": 3,
    "attempt_id": 0,
    "name": "count at <stdin>:1 — ünïcode, 'quotes', \\ back\\slash\ttab\nline",
    "status": "COMPLETE",
    "num_tasks": 200,
    "raw": {"stageId": 3, "nested": {"list": [1, 2.5, None, True], "s": "é\u2028"}},
    # the counts left out take their default (0)
}


@pytest.fixture
def factory(fresh_db_url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on a fresh PostgreSQL and a fresh SQLite database."""
    engine = make_engine(fresh_db_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def _app(session: Any, app_id: str = "app-1") -> int:
    """A stored application's key (its server stored first when there is none)."""
    if session.get(HistoryServer, 1) is None:
        session.add(HistoryServer(name="s", url="http://s", created_at_ms=0))
        session.flush()
    app = Application(
        server_id=1, app_id=app_id, attempt_id="", name="n", fetched_at_ms=0, completed=True
    )
    session.add(app)
    session.flush()
    return app.id


def test_rows_read_back_as_written(factory: sessionmaker[Session]) -> None:
    task = {"stage_id": 3, "stage_attempt_id": 0, "task_id": 7, "index": 7, "attempt": 0}
    task.update(status="SUCCESS", kept_because="slowest", executor_id="1", host="h")
    task.update(duration_ms=None, error_message=None, raw={"taskId": 7})
    with factory() as s, s.begin():
        pk = _app(s)
        conn = s.connection()
        bulk.write(conn, bulk.layout(cast(Table, Stage.__table__)), [(pk, [STAGE])])
        dists = [
            {
                "stage_id": 3,
                "attempt_id": 0,
                "quantiles": [0.0, 0.5, 1.0],
                "metrics": {"d": [1.0]},
                "executor_metrics": None,
            },
        ]
        bulk.write(conn, bulk.layout(cast(Table, StageTaskDistribution.__table__)), [(pk, dists)])
        bulk.write(conn, bulk.layout(cast(Table, Task.__table__)), [(pk, [task])])
    with factory() as s:
        stage = s.scalars(select(Stage)).one()
        assert (stage.name, stage.raw, stage.num_tasks) == (STAGE["name"], STAGE["raw"], 200)
        assert stage.executor_run_time_ms == 0 and stage.completion_time_ms is None
        dist = s.scalars(select(StageTaskDistribution)).one()
        assert (dist.quantiles, dist.metrics, dist.executor_metrics) == (
            [0.0, 0.5, 1.0],
            {"d": [1.0]},
            None,
        )
        # a None that is there is JSON null, as the JSON type stores it: not SQL NULL
        assert (
            s.scalar(select(func.count()).where(StageTaskDistribution.executor_metrics.is_(None)))
            == 0
        )
        stored = s.scalars(select(Task)).one()
        assert (stored.index, stored.duration_ms, stored.raw) == (7, None, {"taskId": 7})


def test_a_missing_json_key_is_sql_null(factory: sessionmaker[Session]) -> None:
    with factory() as s, s.begin():
        pk = _app(s)
        conn = s.connection()
        bulk.write(conn, bulk.layout(cast(Table, Stage.__table__)), [(pk, [STAGE])])
        older = {
            "stage_id": 3,
            "attempt_id": 0,
            "quantiles": [0.5],
            "metrics": {},
        }  # no executor_metrics
        bulk.write(conn, bulk.layout(cast(Table, StageTaskDistribution.__table__)), [(pk, [older])])
    with factory() as s:
        count = s.scalar(
            select(func.count()).where(StageTaskDistribution.executor_metrics.is_(None))
        )
        assert count == 1


def test_a_bad_row_fails_the_transaction_and_leaves_nothing(factory: sessionmaker[Session]) -> None:
    with factory() as s, s.begin():
        pk = _app(s)
    bad = [STAGE, {**STAGE, "stage_id": 4, "status": None}]  # status is NOT NULL
    with pytest.raises(IntegrityError), factory() as s, s.begin():  # the loader's "database error"
        bulk.write(s.connection(), bulk.layout(cast(Table, Stage.__table__)), [(pk, bad)])
    with factory() as s:
        assert s.scalar(text("SELECT count(*) FROM stage")) == 0


def _stages_of(s: Any, pk: int) -> list[tuple[Any, ...]]:
    rows = s.scalars(select(Stage).where(Stage.application_id == pk).order_by(Stage.stage_id))
    return [
        (r.stage_id, r.name, r.status, r.num_tasks, r.raw, r.executor_run_time_ms) for r in rows
    ]


def test_one_row_alone_is_stored_as_in_a_batch(factory: sessionmaker[Session]) -> None:
    """PostgreSQL inserts a lone row and copies a batch: both store the same values."""
    second = {**STAGE, "stage_id": 4, "raw": None, "executor_run_time_ms": 12}
    lay = bulk.layout(cast(Table, Stage.__table__))
    with factory() as s, s.begin():
        pk = _app(s)
        other = _app(s, "app-2")
        conn = s.connection()
        bulk.write(conn, lay, [(pk, [STAGE, second])])  # a batch
        bulk.write(conn, lay, [(other, [STAGE])])  # one row at a time
        bulk.write(conn, lay, [(other, [second])])
    with factory() as s:
        batch, alone = _stages_of(s, pk), _stages_of(s, other)
        assert batch == alone
        assert alone[0][4] == STAGE["raw"] and alone[1][4] is None and alone[1][5] == 12


def test_a_bad_lone_row_fails_as_a_batch_does(factory: sessionmaker[Session]) -> None:
    with factory() as s, s.begin():
        pk = _app(s)
    with pytest.raises(IntegrityError), factory() as s, s.begin():
        lay = bulk.layout(cast(Table, Stage.__table__))
        bulk.write(s.connection(), lay, [(pk, [{**STAGE, "status": None}])])
    with factory() as s:
        assert s.scalar(text("SELECT count(*) FROM stage")) == 0


def test_many_rows_of_several_applications_are_all_stored(
    factory: sessionmaker[Session],
) -> None:
    """More rows than one SQLite statement takes (999 parameters): split into statements of a
    power of four rows each, every row stored once, with its own application."""
    lay = bulk.layout(cast(Table, Stage.__table__))
    with factory() as s, s.begin():
        pk = _app(s)
        other = _app(s, "app-2")
        first = [{**STAGE, "stage_id": i, "executor_run_time_ms": i} for i in range(70)]
        second = [{**STAGE, "stage_id": i, "raw": None} for i in range(3)]
        bulk.write(s.connection(), lay, [(pk, first), (other, second)])
    with factory() as s:
        stored = _stages_of(s, pk)
        assert [(r[0], r[5]) for r in stored] == [(i, i) for i in range(70)]
        assert all(r[1:5] == (STAGE["name"], "COMPLETE", 200, STAGE["raw"]) for r in stored)
        assert [(r[0], r[4]) for r in _stages_of(s, other)] == [(0, None), (1, None), (2, None)]


def test_a_batch_stores_each_value_whatever_the_types_of_its_column(
    factory: sessionmaker[Session],
) -> None:
    """A batch whose columns each hold one type is copied with the columns' types set, one
    whose column mixes types (ints among floats) value by value: both store what each value
    is."""
    lay = bulk.layout(cast(Table, AnalysisResult.__table__))

    def rows(n: int, mixed: bool) -> list[dict[str, Any]]:
        return [
            {
                "heuristic": f"h{i}",
                "severity": i % 5,
                "value": i if mixed and i % 2 else i / 4,
                "title": f"t{i} é",
                "impact_core_hours": None,
            }
            for i in range(n)
        ]

    with factory() as s, s.begin():
        pk = _app(s)
        other = _app(s, "app-2")
        bulk.write(s.connection(), lay, [(pk, rows(40, False))])
        bulk.write(s.connection(), lay, [(other, rows(40, True))])
    with factory() as s:
        for app_pk, mixed in ((pk, False), (other, True)):
            stored = s.execute(
                select(
                    AnalysisResult.heuristic,
                    AnalysisResult.severity,
                    AnalysisResult.value,
                    AnalysisResult.title,
                    AnalysisResult.impact_core_hours,
                )
                .where(AnalysisResult.application_id == app_pk)
                .order_by(AnalysisResult.severity, AnalysisResult.heuristic)
            ).all()
            expected = sorted(
                (r["heuristic"], r["severity"], float(r["value"]), r["title"], None)
                for r in rows(40, mixed)
            )
            assert sorted(tuple(r) for r in stored) == expected


def test_values_of_whole_rows_and_of_rows_lacking_columns_are_the_plain_ones() -> None:
    """Layout.values flattens whole rows in C and takes a group holding a row that lacks a
    column row by row: either way each value is the row's (or the column's default), each JSON
    value its orjson text (a missing one SQL NULL), in the order of the groups and rows."""
    lay = bulk.layout(cast(Table, StageTaskDistribution.__table__))
    whole = {"stage_id": 1, "attempt_id": 0, "quantiles": [0.5], "metrics": {"d": [1.0]}}
    whole["executor_metrics"] = None
    lacking = {"stage_id": 2, "attempt_id": 0, "quantiles": [], "metrics": {}}
    groups = [(10, [whole, whole]), (11, [whole, lacking]), (12, []), (13, [whole])]
    expected: list[Any] = []
    for first, rows in groups:
        for row in rows:
            expected.append(first)
            for i, (name, default) in enumerate(zip(lay.names, lay.defaults, strict=True)):
                value = row.get(name, default)
                if i in lay.json:
                    value = None if name not in row else orjson.dumps(value).decode()
                expected.append(value)
    assert lay.values(groups) == expected
    assert lay.values(groups[:1] + groups[2:]) == expected[:12] + expected[24:]
