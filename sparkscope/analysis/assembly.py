"""Rows -> heuristic inputs: one row, one application's SQL executions, one application.

Stored rows (the tables) and fetched rows (:mod:`fetcher.parse` output) share column names, so
both go through :func:`assemble`, which applies every rule of what a heuristic sees (which tasks,
which task-distribution metrics, which properties, in which order);
:mod:`sparkscope.analysis.inputs` reads the tables and keeps the encoded form of what it built.
"""

from __future__ import annotations

import struct
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from heuristics import appdata

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

# The input types are named tuples built by tuple.__new__ from their values in field order (their
# generated __new__ is a Python call per row); the getters take those values out of a row.
_new = tuple.__new__
_executor_values = itemgetter(*EXECUTOR_FIELDS)
_HOST_AT = appdata.ExecutorSummary._fields.index("host")
_job_values = itemgetter(*JOB_COLUMNS)
_JOB_NAME_AT = JOB_COLUMNS.index("name")
_JOB_STAGES_AT = JOB_COLUMNS.index("stage_ids")
_stage_values = itemgetter(*STAGE_COLUMNS)
_STAGE_NAME_AT = STAGE_COLUMNS.index("name")
assert appdata.StageSummary._fields[-1] == "distribution"  # appended to the stage's columns
_task_values = itemgetter(*TASK_COLUMNS)
assert appdata.TaskDistribution._fields == ("quantiles", "metrics")
_METRIC_WIDTH = len(appdata.SqlMetric._fields)
assert appdata.SqlPlanNode._fields == (
    *SQL_NODE_COLUMNS[1:7],
    "children",
    "parents",
    "in_cached_plan",
    "stage_ids",
)
assert appdata.SqlExecutionSummary._fields == (
    *SQL_EXECUTION_COLUMNS[:8],
    "stage_ids",
    *SQL_EXECUTION_COLUMNS[8:-1],
    "nodes",
)
_stage_key = itemgetter("stage_id", "attempt_id")
_task_stage = itemgetter("stage_id", "stage_attempt_id")
_task_order = itemgetter("stage_id", "task_id")


def executor_input(row: Row) -> appdata.ExecutorSummary:
    """An executor row as the heuristics see it."""
    host_port = row.get("host_port")
    host = host_port.rsplit(":", 1)[0] if host_port else None
    values = _executor_values(row)
    return _new(appdata.ExecutorSummary, (*values[:_HOST_AT], host, *values[_HOST_AT:]))


def job_input(row: Row) -> appdata.JobSummary:
    """A job row as the heuristics see it."""
    values = list(_job_values(row))
    values[_JOB_NAME_AT] = values[_JOB_NAME_AT] or ""
    values[_JOB_STAGES_AT] = tuple(values[_JOB_STAGES_AT] or ())
    return _new(appdata.JobSummary, values)


_PACKERS: dict[int, Callable[..., bytes]] = {}


def doubles_packer(n: int) -> Callable[..., bytes]:
    """Packs n numbers as native float64 bytes, each converted as ``array('d')`` converts it
    (with PyFloat_AsDouble); kept for a few lengths (those of the quantile grids)."""
    pack = _PACKERS.get(n)
    if pack is None:
        pack = struct.Struct(f"{n}d").pack
        if len(_PACKERS) < 16:
            _PACKERS[n] = pack
    return pack


def distribution_input(quantiles: Sequence[float], metrics: Row) -> appdata.TaskDistribution:
    """A stage's task quantiles, reduced to the metrics the heuristics read, as float arrays."""
    kept = {}
    get = metrics.get
    for key in appdata.DISTRIBUTION_METRICS:
        values = get(key)
        if values is None:
            continue
        if type(values) is list:
            # array('d', a list) runs the argument parser on every value; struct converts each
            # with the same PyFloat_AsDouble for a fifth of the cost, and the bytes make the
            # same array. A value struct refuses gets array's own verdict below.
            pack = _PACKERS.get(len(values)) or doubles_packer(len(values))
            try:
                kept[key] = array("d", pack(*values))
                continue
            except struct.error:
                pass
        try:
            kept[key] = array("d", values)
        except TypeError:  # a null among the values: the metric is unusable
            continue
    return _new(appdata.TaskDistribution, (tuple(map(float, quantiles)), kept))


def stage_input(row: Row, dist: appdata.TaskDistribution | None) -> appdata.StageSummary:
    """A stage attempt row (with its distribution) as the heuristics see it."""
    values = list(_stage_values(row))
    values[_STAGE_NAME_AT] = values[_STAGE_NAME_AT] or ""
    values.append(dist)
    return _new(appdata.StageSummary, values)


def task_input(row: Row) -> appdata.TaskSummary:
    """A task row as the heuristics see it."""
    return _new(appdata.TaskSummary, _task_values(row))


_selects_input = appdata.INPUT_TASKS.selects


def is_input_task(row: Row) -> bool:
    """Whether a stored or fetched task row is a heuristic input (:data:`appdata.INPUT_TASKS`)."""
    return _selects_input(row)


def _metric(values: Sequence[Any]) -> appdata.SqlMetric:
    """A plan node's metric values (unit, total, ...), padded with None or cut to its fields."""
    if type(values) is list and len(values) == _METRIC_WIDTH:  # as stored
        return _new(appdata.SqlMetric, values)
    return appdata.SqlMetric._make((list(values) + [None] * _METRIC_WIDTH)[:_METRIC_WIDTH])


#: The containers of a metric's values: a tuple as parsed (fetcher.parse.sql), a list as stored.
_METRIC_VALUES = frozenset({tuple, list})


def sql_input(
    fetches: Iterable[Row], executions: Iterable[Row], nodes: Iterable[Row], stages: Iterable[Row]
) -> tuple[str, tuple[appdata.SqlExecutionSummary, ...]]:
    """(``sql_status``, executions by id) from the SQL rows of one application, stored or fetched:
    the edges become each node's children and parents, the stage links each node's stages."""
    status = next((f["status"] for f in fetches), "unknown")
    # execution id -> node id -> stages (by execution: an int key per node, not a pair)
    node_stages: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    exec_stages: dict[int, list[int]] = defaultdict(list)
    for st in sorted(stages, key=itemgetter("execution_id", "stage_id")):
        eid, sid = st["execution_id"], st["stage_id"]
        exec_stages[eid].append(sid)
        if node_ids := st["node_ids"]:
            stages_of = node_stages[eid]
            for nid in node_ids:
                stages_of[nid].append(sid)
    by_exec: dict[int, list[Row]] = defaultdict(list)
    for n in nodes:
        by_exec[n["execution_id"]].append(n)
    by_node_id = itemgetter("node_id")
    metric_type, width, containers = appdata.SqlMetric, _METRIC_WIDTH, _METRIC_VALUES
    out = []
    for ex in sorted(executions, key=itemgetter("execution_id")):
        eid = ex["execution_id"]
        children: dict[int, list[int]] = defaultdict(list)
        parents: dict[int, list[int]] = defaultdict(list)
        for child, parent in ex["edges"] or ():
            children[parent].append(child)
            parents[child].append(parent)
        plan = []
        stages_of = node_stages.get(eid, {})
        for n in sorted(by_exec.get(eid, ()), key=by_node_id):
            nid, metrics, detail = n["node_id"], n["metrics"], n["detail"]
            kids, ups, node_sids = children.get(nid), parents.get(nid), stages_of.get(nid)
            # (the empty cases without building and copying an empty container)
            node = (  # SqlPlanNode's fields, in order
                nid,
                n["name"],
                n["codegen_id"],
                n["op_id"],
                {  # (_metric's common case inline: the values as parsed or stored)
                    k: _new(metric_type, v)
                    if type(v) in containers and len(v) == width
                    else _metric(v)
                    for k, v in metrics.items()
                }
                if metrics
                else {},
                # (a dict as it is: rows and inputs are read, never changed)
                (detail if type(detail) is dict else dict(detail)) if detail else {},
                tuple(sorted(kids)) if kids else (),
                tuple(ups) if ups else (),
                bool(n["in_cached_plan"]),
                tuple(node_sids) if node_sids else (),
            )
            plan.append(_new(appdata.SqlPlanNode, node))
        execution = (  # SqlExecutionSummary's fields, in order
            eid,
            ex["description"] or "",
            ex["status"],
            ex["submission_time_ms"],
            ex["duration_ms"],
            tuple(ex["success_job_ids"] or ()),
            tuple(ex["failed_job_ids"] or ()),
            tuple(ex["running_job_ids"] or ()),
            tuple(exec_stages.get(eid, ())),
            bool(ex["adaptive"]),
            tuple(plan),
        )
        out.append(_new(appdata.SqlExecutionSummary, execution))
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
    dists = {_stage_key(d): distribution_input(d["quantiles"], d["metrics"]) for d in distributions}
    stage_rows = sorted(stages, key=_stage_key)
    known = set(map(_stage_key, stage_rows))
    selects = _selects_input
    # Few task rows are inputs: select them first, then order only those (the same order).
    selected = [t for t in tasks if _task_stage(t) in known and selects(t)]
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
        executors=tuple([executor_input(x) for x in executors]),
        jobs=tuple([job_input(j) for j in sorted(jobs, key=itemgetter("job_id"))]),
        stages=tuple([stage_input(s, dists.get(_stage_key(s))) for s in stage_rows]),
        tasks=tuple([task_input(t) for t in sorted(selected, key=_task_order)]),
        spark_version=app.get("spark_version") or None,
        sql_status=sql[0],
        sql_executions=sql[1],
    )
