"""Byte encoding of one application's heuristic inputs (:class:`heuristics.appdata.AppData`) as bytes.

Re-scoring an application from its rows means about a hundred rows from seven tables and a JSON
decode per task distribution; the encoded inputs are one ``analysis_input`` row that decodes in a
fraction of that. The rows stay the source of truth: this is a cache, rebuilt from them whenever
it is missing or was written in another :data:`FORMAT`.

The encoding is zlib-compressed :mod:`marshal` of plain tuples (field values in field order);
each stage's task-distribution metrics are packed together as float64 bytes (``array('d')``),
and the quantile grid the stages share is stored once per application. Only built-in values go
in, and decoding builds nothing but the input types, so a tampered row cannot run code;
marshal's layout may change between Python versions, which is why the Python version is part of
the format.
"""

from __future__ import annotations

import hashlib
import marshal
import sys
import zlib
from array import array
from collections.abc import Sequence
from operator import attrgetter, itemgetter
from typing import Any

from heuristics import appdata

#: Bump when the layout below changes (field changes are picked up from the input types).
CODEC_VERSION = 4  # 4: the SQL executions and their plan nodes

_EXECUTOR = appdata.ExecutorSummary._fields
_JOB = appdata.JobSummary._fields
# A stage is encoded without its distribution, which decode appends: it must be the last field.
_STAGE = appdata.StageSummary._fields[:-1]
assert appdata.StageSummary._fields[-1] == "distribution"
_TASK = appdata.TaskSummary._fields
# A SQL execution is encoded without its nodes and a node without its metrics (both appended on
# decode): they must be the last fields.
_SQL_EXECUTION = appdata.SqlExecutionSummary._fields[:-1]
assert appdata.SqlExecutionSummary._fields[-1] == "nodes"
_SQL_NODE = tuple(f for f in appdata.SqlPlanNode._fields if f != "metrics")
_SQL_METRIC = appdata.SqlMetric._fields
#: The application's own fields of AppData, which are also its table's column names.
APP_COLUMNS = (
    "app_id",
    "attempt_id",
    "name",
    "user",
    "start_time_ms",
    "end_time_ms",
    "duration_ms",
    "spark_version",
)
_APP_SCALARS = (*APP_COLUMNS, "spark_properties")


def _format() -> str:
    layout = repr(
        (
            CODEC_VERSION,
            _EXECUTOR,
            _JOB,
            _STAGE,
            _TASK,
            _SQL_EXECUTION,
            _SQL_NODE,
            _SQL_METRIC,
            _APP_SCALARS,
            appdata.DISTRIBUTION_METRICS,
            sorted(appdata.INPUT_TASKS.statuses),  # sorted: a set repr varies between processes
            appdata.INPUT_TASKS.positive_fields,
        )
    )
    digest = hashlib.sha256(layout.encode()).hexdigest()[:16]
    return f"mz{marshal.version}-py{sys.version_info[0]}.{sys.version_info[1]}-v{CODEC_VERSION}-{digest}"


#: Stored next to each encoded row; a row of any other format is rebuilt from the tables.
FORMAT = _format()


#: The application's own values of an AppData, in :data:`APP_COLUMNS` order, as a tuple.
_app_values = attrgetter(*APP_COLUMNS)
#: A named tuple's values as a plain tuple (what marshal takes): a slice of a tuple subclass is
#: a new tuple, built without iterating.
_plain = itemgetter(slice(None))


def encode(app: appdata.AppData) -> bytes:
    """The inputs of one application as bytes (raises ValueError on a value marshal cannot hold)."""
    # marshal marks the objects referenced more than once (and refers back to them), so which
    # intermediate containers are alive during dumps is part of the bytes: ``grids`` and
    # ``stages`` stay lists next to their tuples in the payload, and ``packed`` holds the last
    # stage's, as they always did.
    grids: list[tuple[float, ...]] = []
    stages = []
    for stage in app.stages:
        dist = stage.distribution
        packed: tuple[int, tuple[str, ...], tuple[int, ...], bytes] | None = None
        if dist is not None:
            grid = tuple(map(float, dist.quantiles))
            if grid in grids:  # (not index() and ValueError: its message is the grid's repr)
                at = grids.index(grid)
            else:
                at = len(grids)
                grids.append(grid)
            # float64 arrays as assemble builds them; any other sequence converted
            values = [
                v if type(v) is array and v.typecode == "d" else array("d", v)
                for v in dist.metrics.values()
            ]
            # bytes.join reads the arrays' buffers: one copy instead of a tobytes() each
            packed = (at, tuple(dist.metrics), tuple(map(len, values)), b"".join(values))
        stages.append((stage[:-1], packed))  # a named tuple's fields in order, less the last
    payload = (
        _app_values(app),
        dict(app.spark_properties),
        tuple(map(_plain, app.executors)),
        tuple(map(_plain, app.jobs)),
        tuple(grids),
        tuple(stages),
        tuple(map(_plain, app.tasks)),
        app.sql_status,
        tuple([_encode_execution(e) for e in app.sql_executions]),
    )
    # zlib level 1 shrinks the ~18 kB of a typical application about sevenfold, and reading 2.7 kB
    # from the database and inflating it costs half of reading 18 kB (sent hex-encoded).
    return zlib.compress(marshal.dumps(payload, 4), 1)  # type: ignore[arg-type]


assert appdata.SqlPlanNode._fields == (
    "node_id",
    "name",
    "codegen_id",
    "op_id",
    "metrics",
    "detail",
    "children",
    "parents",
    "in_cached_plan",
    "stage_ids",
)  # _encode_execution unpacks a node in this order


def _encode_execution(ex: appdata.SqlExecutionSummary) -> tuple[Any, ...]:
    nodes = []
    for node in ex.nodes:
        node_id, name, codegen_id, op_id, metrics, detail, children, parents, cached, stages = node
        fields = (node_id, name, codegen_id, op_id, dict(detail), children, parents, cached, stages)
        # the metrics as plain tuples (a slice of a named tuple is one), by name
        nodes.append((fields, {k: m[:] for k, m in metrics.items()}))  # fields: _SQL_NODE's
    return (ex[:-1], tuple(nodes))


_build_executor = appdata.ExecutorSummary._make
_build_job = appdata.JobSummary._make
_build_stage = appdata.StageSummary._make
_build_task = appdata.TaskSummary._make
_build_dist = appdata.TaskDistribution._make
_build_metric = appdata.SqlMetric._make
_build_node = appdata.SqlPlanNode._make
_build_execution = appdata.SqlExecutionSummary._make
_METRICS_AT = appdata.SqlPlanNode._fields.index("metrics")
assert _SQL_NODE == (
    *appdata.SqlPlanNode._fields[:_METRICS_AT],
    *appdata.SqlPlanNode._fields[_METRICS_AT + 1 :],
)


def _decode_execution(values: tuple[Any, ...], nodes: Any) -> appdata.SqlExecutionSummary:
    built = []
    for fields, metrics in nodes:
        decoded = {name: _build_metric(m) for name, m in metrics.items()}
        node = (*fields[:_METRICS_AT], decoded, *fields[_METRICS_AT:])
        built.append(_build_node(node))
    return _build_execution((*values, tuple(built)))


def _metrics(names: Sequence[str], lengths: Sequence[int], raw: bytes) -> dict[str, array[float]]:
    # One array for all of a stage's metrics, sliced per metric: cheaper than one array each.
    packed = array("d")
    packed.frombytes(raw)
    out = {}
    start = 0
    for name, length in zip(names, lengths, strict=True):
        out[name] = packed[start : start + length]
        start += length
    return out


def decode(blob: bytes) -> appdata.AppData:
    """The inputs :func:`encode` wrote (raises ValueError, EOFError, TypeError or zlib.error on a bad blob)."""
    payload = marshal.loads(zlib.decompress(blob))
    scalars, props, executors, jobs, grids, stages, tasks, sql_status, sql = payload
    built_stages = []
    for values, packed in stages:
        dist = None
        if packed is not None:
            grid, names, lengths, raw = packed
            dist = _build_dist((grids[grid], _metrics(names, lengths, raw)))
        built_stages.append(_build_stage((*values, dist)))
    app_id, attempt_id, name, user, start_ms, end_ms, duration_ms, spark_version = scalars
    return appdata.AppData(
        app_id=app_id,
        attempt_id=attempt_id,
        name=name,
        user=user,
        start_time_ms=start_ms,
        end_time_ms=end_ms,
        duration_ms=duration_ms,
        spark_properties=props,
        executors=tuple(map(_build_executor, executors)),
        jobs=tuple(map(_build_job, jobs)),
        stages=tuple(built_stages),
        tasks=tuple(map(_build_task, tasks)),
        spark_version=spark_version,
        sql_status=sql_status,
        sql_executions=tuple(_decode_execution(values, nodes) for values, nodes in sql),
    )
