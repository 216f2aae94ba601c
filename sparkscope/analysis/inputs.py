"""The one owner of heuristic inputs: stored rows, fetched rows and encoded rows -> AppData.

Stored rows (the tables) and fetched rows (:mod:`fetcher.parse` output) share column names, so
both go through :func:`assemble`, which applies every rule of what a heuristic sees (which tasks,
which task-distribution metrics, which properties, in which order). The encoded form
(``analysis_input``, see :mod:`sparkscope.analysis.codec`) is a cache of what ``assemble`` built.
"""

from __future__ import annotations

import logging
import zlib
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, delete, func, insert, or_, select
from sqlalchemy.orm import Session

from heuristics import appdata
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

Row = Mapping[str, Any]

# The input types name their fields after the columns, so a field list is also a column list.
EXECUTOR_FIELDS = [f for f in appdata.ExecutorSummary._fields if f != "host"]
EXECUTOR_COLUMNS = [*EXECUTOR_FIELDS, "host_port"]
JOB_COLUMNS = list(appdata.JobSummary._fields)
STAGE_COLUMNS = [f for f in appdata.StageSummary._fields if f != "distribution"]
TASK_COLUMNS = list(appdata.TaskSummary._fields)
SQL_EXECUTION_COLUMNS = [
    *(f for f in appdata.SqlExecutionSummary._fields if f not in ("stage_ids", "nodes")),
    "edges",
]
SQL_NODE_COLUMNS = [
    "execution_id",
    "node_id",
    "name",
    "codegen_id",
    "op_id",
    "metrics",
    "detail",
    "in_cached_plan",
]
SQL_STAGE_COLUMNS = ["execution_id", "stage_id", "node_ids"]
# APP_COLUMNS (the application's own fields) comes from the codec, which stores the same ones.


# ------------------------------------------------------------------------------ one row -> input


def executor_input(row: Row) -> appdata.ExecutorSummary:
    """An executor row as the heuristics see it."""
    host_port = row.get("host_port")
    host = host_port.rsplit(":", 1)[0] if host_port else None
    return appdata.ExecutorSummary(host=host, **{k: row[k] for k in EXECUTOR_FIELDS})


def job_input(row: Row) -> appdata.JobSummary:
    """A job row as the heuristics see it."""
    values = {k: row[k] for k in JOB_COLUMNS}
    values["name"] = values["name"] or ""
    values["stage_ids"] = tuple(values["stage_ids"] or ())
    return appdata.JobSummary(**values)


def distribution_input(quantiles: Sequence[float], metrics: Row) -> appdata.TaskDistribution:
    """A stage's task quantiles, reduced to the metrics the heuristics read, as float arrays."""
    kept = {}
    for key in appdata.DISTRIBUTION_METRICS:
        values = metrics.get(key)
        if values is None:
            continue
        try:
            kept[key] = array("d", values)
        except TypeError:  # a null among the values: the metric is unusable
            continue
    return appdata.TaskDistribution(quantiles=tuple(float(q) for q in quantiles), metrics=kept)


def stage_input(row: Row, dist: appdata.TaskDistribution | None) -> appdata.StageSummary:
    """A stage attempt row (with its distribution) as the heuristics see it."""
    values = {k: row[k] for k in STAGE_COLUMNS}
    values["name"] = values["name"] or ""
    return appdata.StageSummary(distribution=dist, **values)


def task_input(row: Row) -> appdata.TaskSummary:
    """A task row as the heuristics see it."""
    return appdata.TaskSummary(**{k: row[k] for k in TASK_COLUMNS})


def is_input_task(row: Row) -> bool:
    """Whether a stored or fetched task row is a heuristic input (:data:`appdata.INPUT_TASKS`)."""
    return appdata.INPUT_TASKS.selects(row)


def input_task_clause() -> ColumnElement[bool]:
    """:data:`appdata.INPUT_TASKS` as a WHERE clause on ``task``: a pre-filter that spares reading the
    other rows; :func:`assemble` applies the rule itself either way."""
    rule = appdata.INPUT_TASKS
    return or_(
        func.upper(Task.status).in_(sorted(rule.statuses)),
        *(getattr(Task, f) > 0 for f in rule.positive_fields),
    )


def _metric(values: Sequence[Any]) -> appdata.SqlMetric:
    width = len(appdata.SqlMetric._fields)
    return appdata.SqlMetric._make((list(values) + [None] * width)[:width])


def sql_input(
    fetches: Iterable[Row], executions: Iterable[Row], nodes: Iterable[Row], stages: Iterable[Row]
) -> tuple[str, tuple[appdata.SqlExecutionSummary, ...]]:
    """(``sql_status``, executions by id) from the SQL rows of one application, stored or fetched:
    the edges become each node's children and parents, the stage links each node's stages."""
    status = next((f["status"] for f in fetches), "unknown")
    node_stages: dict[tuple[int, int], list[int]] = defaultdict(list)
    exec_stages: dict[int, list[int]] = defaultdict(list)
    for st in sorted(stages, key=lambda r: (r["execution_id"], r["stage_id"])):
        exec_stages[st["execution_id"]].append(st["stage_id"])
        for nid in st["node_ids"] or ():
            node_stages[(st["execution_id"], nid)].append(st["stage_id"])
    by_exec: dict[int, list[Row]] = defaultdict(list)
    for n in nodes:
        by_exec[n["execution_id"]].append(n)
    out = []
    for ex in sorted(executions, key=lambda r: r["execution_id"]):
        eid = ex["execution_id"]
        children: dict[int, list[int]] = defaultdict(list)
        parents: dict[int, list[int]] = defaultdict(list)
        for child, parent in ex["edges"] or ():
            children[parent].append(child)
            parents[child].append(parent)
        plan = tuple(
            appdata.SqlPlanNode(
                node_id=n["node_id"],
                name=n["name"],
                codegen_id=n["codegen_id"],
                op_id=n["op_id"],
                metrics={k: _metric(v) for k, v in (n["metrics"] or {}).items()},
                detail=dict(n["detail"] or {}),
                children=tuple(sorted(children.get(n["node_id"], ()))),
                parents=tuple(parents.get(n["node_id"], ())),
                in_cached_plan=bool(n["in_cached_plan"]),
                stage_ids=tuple(node_stages.get((eid, n["node_id"]), ())),
            )
            for n in sorted(by_exec.get(eid, ()), key=lambda r: r["node_id"])
        )
        out.append(
            appdata.SqlExecutionSummary(
                execution_id=eid,
                description=ex["description"] or "",
                status=ex["status"],
                submission_time_ms=ex["submission_time_ms"],
                duration_ms=ex["duration_ms"],
                success_job_ids=tuple(ex["success_job_ids"] or ()),
                failed_job_ids=tuple(ex["failed_job_ids"] or ()),
                running_job_ids=tuple(ex["running_job_ids"] or ()),
                stage_ids=tuple(exec_stages.get(eid, ())),
                adaptive=bool(ex["adaptive"]),
                nodes=plan,
            )
        )
    return status, tuple(out)


# ------------------------------------------------------------------------------ one application


def assemble(
    app: Row,
    properties: Iterable[Row],
    executors: Iterable[Row],
    jobs: Iterable[Row],
    stages: Iterable[Row],
    distributions: Iterable[Row],
    tasks: Iterable[Row],
    sql: tuple[str, tuple[appdata.SqlExecutionSummary, ...]] = ("unknown", ()),
) -> appdata.AppData:
    """The inputs of one application from its rows, stored or fetched.

    ``app`` holds :data:`APP_COLUMNS`; properties are (section, name, value) rows, of which the
    ``spark`` section is kept; distributions are (stage_id, attempt_id, quantiles, metrics) rows.
    Jobs, stages and tasks are ordered by id; tasks are those :func:`is_input_task` selects, of
    the stages given; ``sql`` is what :func:`sql_input` made of the SQL rows.
    """
    dists = {
        (d["stage_id"], d["attempt_id"]): distribution_input(d["quantiles"], d["metrics"])
        for d in distributions
    }
    stage_rows = sorted(stages, key=lambda s: (s["stage_id"], s["attempt_id"]))
    known = {(s["stage_id"], s["attempt_id"]) for s in stage_rows}
    return appdata.AppData(
        app_id=app["app_id"],
        attempt_id=app["attempt_id"] or None,
        name=app["name"],
        user=app["user"],
        start_time_ms=app["start_time_ms"],
        end_time_ms=app["end_time_ms"],
        duration_ms=app["duration_ms"] or 0,
        spark_properties={
            p["name"]: p["value"] if p["value"] is not None else ""
            for p in properties
            if p["section"] == "spark"
        },
        executors=tuple(executor_input(x) for x in executors),
        jobs=tuple(job_input(j) for j in sorted(jobs, key=lambda j: j["job_id"])),
        stages=tuple(
            stage_input(s, dists.get((s["stage_id"], s["attempt_id"]))) for s in stage_rows
        ),
        tasks=tuple(
            task_input(t)
            for t in sorted(tasks, key=lambda t: (t["stage_id"], t["task_id"]))
            if (t["stage_id"], t["stage_attempt_id"]) in known and is_input_task(t)
        ),
        spark_version=app.get("spark_version") or None,
        sql_status=sql[0],
        sql_executions=sql[1],
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


_INSERT_INPUT = insert(cast(Table, AnalysisInput.__table__))


def insert_encoded(session: Session, app_pk: int, blob: bytes) -> None:
    """Store the encoded inputs of an application loaded in this transaction (the load removed
    those of the version it replaced)."""
    session.execute(_INSERT_INPUT, {"application_id": app_pk, "format": FORMAT, "data": blob})
