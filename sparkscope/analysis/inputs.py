"""The one owner of heuristic inputs: stored rows, fetched rows and encoded rows -> AppData.

Stored rows (the tables) and fetched rows (:mod:`fetcher.parse` output) share column names, so
both go through :func:`~sparkscope.analysis.assembly.assemble`, which applies every rule of what
a heuristic sees (which tasks, which task-distribution metrics, which properties, in which
order). The encoded form (``analysis_input``, see :mod:`sparkscope.analysis.codec`) is a cache of
what ``assemble`` built.
"""

from __future__ import annotations

import logging
import zlib
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, delete, func, insert, or_, select
from sqlalchemy.orm import Session

from heuristics import appdata
from sparkscope import bulk
from sparkscope.analysis.assembly import (
    EXECUTOR_COLUMNS,
    JOB_COLUMNS,
    SQL_EXECUTION_COLUMNS,
    SQL_NODE_COLUMNS,
    SQL_STAGE_COLUMNS,
    STAGE_COLUMNS,
    TASK_COLUMNS,
    Row,
    assemble,
    sql_input,
)
from sparkscope.analysis.codec import FORMAT, decode, encode
from sparkscope.models.analysis import AnalysisInput
from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Executor,
    Job,
    Stage,
    StageTaskDistribution,
    Task,
)
from sparkscope.models.sql import SqlExecution, SqlFetch, SqlNode, SqlStage

log = logging.getLogger(__name__)


def input_task_clause() -> ColumnElement[bool]:
    """:data:`appdata.INPUT_TASKS` as a WHERE clause on ``task``: a pre-filter that spares reading the
    other rows; :func:`assemble` applies the rule itself either way."""
    rule = appdata.INPUT_TASKS
    return or_(
        func.upper(Task.status).in_(sorted(rule.statuses)),
        *(getattr(Task, f) > 0 for f in rule.positive_fields),
    )


# ------------------------------------------------------------------------------ the tables


def _rows_by_app(
    session: Session, model: Any, columns: Sequence[str], ids: list[int], *where: Any
) -> dict[int, list[dict[str, Any]]]:
    """application.id -> its rows of ``model`` as {column: value} dicts."""
    query = select(
        model.application_id.label("_app"), *(getattr(model, c).label(c) for c in columns)
    ).where(model.application_id.in_(ids), *where)
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in session.execute(query).mappings():
        values = dict(row)
        out[values.pop("_app")].append(values)
    return out


def _distribution_rows(session: Session, ids: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    # Only the metrics the heuristics read, each taken out of the JSON document by the database.
    metric_cols = [StageTaskDistribution.metrics[k] for k in appdata.DISTRIBUTION_METRICS]
    for r in session.execute(
        select(
            StageTaskDistribution.application_id,
            StageTaskDistribution.stage_id,
            StageTaskDistribution.attempt_id,
            StageTaskDistribution.quantiles,
            *metric_cols,
        ).where(StageTaskDistribution.application_id.in_(ids))
    ):
        metrics = dict(zip(appdata.DISTRIBUTION_METRICS, r[4:], strict=True))
        yield r[0], {"stage_id": r[1], "attempt_id": r[2], "quantiles": r[3], "metrics": metrics}


def from_tables(session: Session, application_ids: Sequence[int]) -> dict[int, appdata.AppData]:
    """The inputs of several applications from the tables, with one query per table."""
    ids = list(application_ids)
    if not ids:
        return {}
    apps = session.execute(
        select(
            Application.id,
            Application.app_id,
            Application.attempt_id,
            Application.name,
            Application.spark_user.label("user"),
            Application.start_time_ms,
            Application.end_time_ms,
            Application.duration_ms,
            Application.spark_version,
        ).where(Application.id.in_(ids))
    ).mappings()
    rows: list[Row] = [dict(a) for a in apps]
    spark = EnvironmentProperty.section == "spark"
    props = _rows_by_app(session, EnvironmentProperty, ("section", "name", "value"), ids, spark)
    execs = _rows_by_app(session, Executor, EXECUTOR_COLUMNS, ids)
    jobs = _rows_by_app(session, Job, JOB_COLUMNS, ids)
    stages = _rows_by_app(session, Stage, STAGE_COLUMNS, ids)
    tasks = _rows_by_app(session, Task, TASK_COLUMNS, ids, input_task_clause())
    dists: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for app_pk, row in _distribution_rows(session, ids):
        dists[app_pk].append(row)
    fetches = _rows_by_app(session, SqlFetch, ("status",), ids)
    sql_execs = _rows_by_app(session, SqlExecution, SQL_EXECUTION_COLUMNS, ids)
    sql_nodes = _rows_by_app(session, SqlNode, SQL_NODE_COLUMNS, ids)
    sql_stages = _rows_by_app(session, SqlStage, SQL_STAGE_COLUMNS, ids)
    none: list[dict[str, Any]] = []
    return {
        a["id"]: assemble(
            a,
            props.get(a["id"], none),
            execs.get(a["id"], none),
            jobs.get(a["id"], none),
            stages.get(a["id"], none),
            dists.get(a["id"], none),
            tasks.get(a["id"], none),
            sql_input(
                fetches.get(a["id"], none),
                sql_execs.get(a["id"], none),
                sql_nodes.get(a["id"], none),
                sql_stages.get(a["id"], none),
            ),
        )
        for a in rows
    }


# ------------------------------------------------------------------------------ the encoded rows


def load_inputs(
    session: Session, application_ids: Sequence[int], store: bool = True
) -> dict[int, appdata.AppData]:
    """The heuristic inputs of several applications, from their encoded rows where those are
    current, otherwise built from the tables (and, with ``store``, encoded for next time)."""
    ids = list(application_ids)
    if not ids:
        return {}
    data: dict[int, appdata.AppData] = {}
    for app_pk, blob in session.execute(
        select(AnalysisInput.application_id, AnalysisInput.data)
        .where(AnalysisInput.application_id.in_(ids))
        .where(AnalysisInput.format == FORMAT)
    ):
        try:
            data[app_pk] = decode(blob)
        except (ValueError, EOFError, TypeError, zlib.error) as exc:
            log.warning("encoded inputs of application %s unreadable (%s): rebuilt", app_pk, exc)
    missing = [pk for pk in ids if pk not in data]
    if missing:
        built = from_tables(session, missing)
        if store:
            store_inputs(session, built)
        data.update(built)
    return data


def store_inputs(session: Session, data: Mapping[int, appdata.AppData]) -> None:
    """Write (or replace) the encoded inputs of the given applications."""
    rows = []
    for app_pk, app in data.items():
        try:
            rows.append({"application_id": app_pk, "format": FORMAT, "data": encode(app)})
        except ValueError as exc:  # a value marshal cannot hold: stay on the rows path
            log.warning("inputs of application %s not encodable: %s", app_pk, exc)
    if not data:
        return
    session.execute(delete(AnalysisInput).where(AnalysisInput.application_id.in_(list(data))))
    if rows:
        session.execute(insert(cast(Table, AnalysisInput.__table__)), rows)


def encode_or_none(app_pk: int | None, app: appdata.AppData) -> bytes | None:
    """The encoded inputs of one application, or None (logged) when a value cannot be encoded
    (the application then stays on the rows path)."""
    try:
        return encode(app)
    except ValueError as exc:
        log.warning("inputs of application %s not encodable: %s", app_pk or app.app_id, exc)
        return None


def insert_encoded(session: Session, encoded: Sequence[tuple[int, bytes]]) -> None:
    """Store the encoded inputs (application pk, blob) of applications loaded in this transaction
    (the load removed those of the versions they replaced), in one bulk statement."""
    groups = [(pk, [{"format": FORMAT, "data": blob}]) for pk, blob in encoded]
    bulk.write(session.connection(), _INPUTS, groups)


_INPUTS = bulk.layout(cast(Table, AnalysisInput.__table__))
