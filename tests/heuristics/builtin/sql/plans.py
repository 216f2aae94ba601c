"""Builders of SQL plan inputs: nodes with metrics and plan-text fields, executions, and the plan
fragments each SQL check reads, with sizes and counts as parameters."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from heuristics.appdata import AppData, SqlExecutionSummary, SqlMetric, SqlPlanNode
from heuristics.result import HeuristicResult
from tests.heuristics.builders import MIN_MS, make_app, make_job, make_stage, run

MIB = 1024**2
GIB = 1024**3


def judge(module: ModuleType, app: AppData, params: Any = None) -> HeuristicResult:
    """A check's result rated by its own thresholds, not capped by cost (the registry caps it;
    see test_cost_caps)."""
    return run(module, app, params, caps=None)


def _unit(name: str) -> str:
    if "size" in name or "bytes" in name or name in ("written output", "data size"):
        return "bytes"
    if "time" in name or name == "duration":
        return "ms"
    return "count"


def metric(
    total: float | None,
    unit: str = "count",
    med: float | None = None,
    mx: float | None = None,
    stage: int | None = None,
) -> SqlMetric:
    """One parsed metric."""
    return SqlMetric(
        unit, total, None, med, mx, stage, 0 if stage is not None else None, None, None
    )


def node(
    node_id: int,
    name: str,
    children: Sequence[int] = (),
    metrics: Mapping[str, float | SqlMetric] | None = None,
    detail: Mapping[str, str] | None = None,
    codegen: int | None = None,
    stages: Sequence[int] = (0,),
    cached: bool = False,
) -> SqlPlanNode:
    """A plan node; plain numbers become metrics with the unit their name implies. A node
    without metrics did not run, so every node gets at least a row count."""
    built = {
        k: v if isinstance(v, SqlMetric) else metric(float(v), _unit(k))
        for k, v in (metrics or {"number of output rows": 1.0}).items()
    }
    return SqlPlanNode(
        node_id,
        name,
        codegen,
        node_id,
        built,
        dict(detail or {}),
        tuple(children),
        (),
        cached,
        tuple(stages),
    )


def execution(
    execution_id: int,
    nodes: Sequence[SqlPlanNode],
    description: str = "a query",
    status: str = "COMPLETED",
    duration_ms: int = 10 * MIN_MS,
    stage_ids: Sequence[int] = (0,),
) -> SqlExecutionSummary:
    """An execution; each node's parents are filled in from the children."""
    parents: dict[int, list[int]] = {}
    for n in nodes:
        for c in n.children:
            parents.setdefault(c, []).append(n.node_id)
    linked = tuple(
        n._replace(parents=tuple(parents.get(n.node_id, ())))
        for n in sorted(nodes, key=lambda n: n.node_id)
    )
    return SqlExecutionSummary(
        execution_id,
        description,
        status,
        0,
        duration_ms,
        (0,),
        (),
        (),
        tuple(stage_ids),
        True,
        linked,
    )


def sql_app(executions: Sequence[SqlExecutionSummary], **kw: Any) -> AppData:
    """A YARN application (8 GiB executors, 4 GiB driver) running the given executions, stage 0
    with 100 minutes of task time."""
    props = {"spark.driver.memory": "4g", **kw.pop("props", {})}
    app = make_app(stages=kw.pop("stages", [make_stage(0)]), jobs=[make_job(0)], props=props, **kw)
    return dataclasses.replace(app, sql_status="ok", sql_executions=tuple(executions))


# ------------------------------------------------------------------------------ plan fragments


def smj(
    left_bytes: float, right_bytes: float, join_type: str = "Inner", eid: int = 0
) -> SqlExecutionSummary:
    """SortMergeJoin <- Sort <- Exchange <- Scan on both sides."""
    nodes = [
        node(0, "SortMergeJoin", (1, 4), {"number of output rows": 1e6}, {"Join type": join_type}),
        node(1, "Sort", (2,)),
        node(2, "Exchange", (3,), {"data size": left_bytes, "shuffle records written": 1e6}),
        scan(3, location="file:/data/orders"),
        node(4, "Sort", (5,)),
        node(5, "Exchange", (6,), {"data size": right_bytes, "shuffle records written": 1e4}),
        scan(6, location="file:/data/customers"),
    ]
    return execution(eid, nodes, "enrich orders")


def broadcast(data_bytes: float, rows: float, eid: int = 0) -> SqlExecutionSummary:
    """BroadcastHashJoin <- (Scan, BroadcastExchange <- Scan)."""
    nodes = [
        node(0, "BroadcastHashJoin", (1, 2), {"number of output rows": 1e6}),
        scan(1, location="file:/data/sales"),
        node(
            2,
            "BroadcastExchange",
            (3,),
            {
                "data size": data_bytes,
                "number of output rows": rows,
                "time to collect": 2000.0,
                "time to build": 1000.0,
            },
        ),
        scan(3, location="file:/data/catalog"),
    ]
    return execution(eid, nodes, "enrich sales")


def nested_loop(
    left_rows: float,
    right_rows: float,
    name: str = "BroadcastNestedLoopJoin",
    condition: str = "None",
    join_type: str = "Cross",
) -> SqlExecutionSummary:
    """A nested-loop join of two scans with the given row counts."""
    nodes = [
        node(
            0,
            name,
            (1, 2),
            {"number of output rows": left_rows * right_rows},
            {"Join condition": condition, "Join type": join_type},
            codegen=None,
        ),
        scan(1, rows=left_rows),
        node(2, "BroadcastExchange", (3,), {"number of output rows": right_rows, "data size": 1e5}),
        scan(3, rows=right_rows),
    ]
    return execution(0, nodes, "all pairs")


def scan(
    node_id: int,
    files: float = 10,
    nbytes: float = 100 * MIB,
    partitions: float | None = None,
    rows: float = 1e6,
    location: str = "file:/data/t",
    output: str = "[a#1, b#2]",
    read_schema: str = "struct<a:int,b:string>",
    extra: Mapping[str, str] | None = None,
    scan_time_ms: float = 1000.0,
    name: str = "Scan parquet",
) -> SqlPlanNode:
    """A parquet scan node with its plan-text fields."""
    metrics: dict[str, float] = {
        "number of files read": files,
        "size of files read": nbytes,
        "number of output rows": rows,
        "scan time": scan_time_ms,
    }
    if partitions is not None:
        metrics["number of partitions read"] = partitions
    detail = {
        "Output": output,
        "Location": f"InMemoryFileIndex [{location}]",
        "ReadSchema": read_schema,
    }
    detail.update(extra or {})
    return node(node_id, name, (), metrics, detail)


def write(
    files: float,
    nbytes: float,
    parts: float = 0,
    shuffle_partitions: float | None = None,
    target: str = "file:/out/export",
    eid: int = 0,
) -> SqlExecutionSummary:
    """Execute InsertIntoHadoopFsRelationCommand <- WriteFiles <- Exchange <- Scan."""
    metrics = {
        "number of written files": files,
        "written output": nbytes,
        "number of output rows": 1e5,
    }
    if parts:
        metrics["number of dynamic part"] = parts
    exchange_metrics = {"number of partitions": shuffle_partitions or 200.0, "data size": nbytes}
    nodes = [
        node(
            0,
            "Execute InsertIntoHadoopFsRelationCommand",
            (1,),
            metrics,
            {"Arguments": f"{target}, false, Parquet, Overwrite, [a, b]"},
        ),
        node(1, "WriteFiles", (2,)),
        node(
            2,
            "Exchange",
            (3,),
            exchange_metrics,
            {
                "Arguments": f"RoundRobinPartitioning({shuffle_partitions or 200:.0f}), REPARTITION_BY_NUM"
            },
        ),
        scan(3),
    ]
    return execution(eid, nodes, "export")


def filtered_scan(
    partitions: float,
    condition: str,
    pushed: str = "",
    partition_filters: str | None = None,
    eid: int = 0,
) -> SqlExecutionSummary:
    """HashAggregate <- Project <- Filter <- ColumnarToRow <- a scan of a table partitioned by
    event_date (``Output`` has it, ``ReadSchema`` does not)."""
    extra = {"PushedFilters": pushed} if pushed else {}
    if partition_filters is not None:
        extra["PartitionFilters"] = partition_filters
    nodes = [
        node(0, "HashAggregate", (1,)),
        node(1, "Project", (2,)),
        node(2, "Filter", (3,), detail={"Condition": condition}),
        node(3, "ColumnarToRow", (4,)),
        scan(
            4,
            files=2 * partitions,
            partitions=partitions,
            location="file:/data/events",
            output="[user_id#9L, spend#10, event_ts#11, event_date#13]",
            read_schema="struct<user_id:bigint,spend:double,event_ts:timestamp>",
            extra=extra,
        ),
    ]
    return execution(eid, nodes, "daily report")


def python_udf(
    python_ms: float, query_task_ms: float, status: str = "COMPLETED", name: str = "BatchEvalPython"
) -> AppData:
    """A query whose one stage ran ``query_task_ms`` of tasks, with a UDF in Python for ``python_ms``."""
    metrics: dict[str, float] = {"number of output rows": 3e5}
    if python_ms >= 0:
        metrics["time to run Python workers"] = python_ms
    nodes = [
        node(0, "HashAggregate", (1,)),
        node(
            1, name, (2,), metrics, {"Arguments": "[normalize_email(email#3)#10], [pythonUDF0#20]"}
        ),
        scan(2),
    ]
    ex = execution(0, nodes, "normalise emails", status=status)
    return sql_app([ex], stages=[make_stage(0, executor_run_time_ms=int(query_task_ms))])


def join(
    out: float,
    left: float,
    right: float,
    name: str = "BroadcastHashJoin",
    task_med: float | None = None,
    task_max: float | None = None,
) -> SqlExecutionSummary:
    """A join of two scans with its codegen pipeline (per-task durations when given)."""
    duration = metric(60_000.0, "ms", med=task_med, mx=task_max, stage=0)
    nodes = [
        node(
            0,
            name,
            (1, 2),
            {"number of output rows": out},
            {"Left keys [1]": "", "Left keys": "[region#3]"},
            codegen=1,
        ),
        scan(1, rows=left),
        node(2, "BroadcastExchange", (3,), {"number of output rows": right, "data size": 1e5}),
        scan(3, rows=right),
        node(4, "WholeStageCodegen (1)", (), {"duration": duration}),
    ]
    return execution(0, nodes, "join on a non-unique key")


def kpi_queries(
    n: int, location: str = "file:/data/sales", with_join: bool = False, nbytes: float = 10 * MIB
) -> list[SqlExecutionSummary]:
    """``n`` queries each scanning the same location (and, ``with_join``, another table too)."""
    out = []
    for i in range(n):
        nodes = [node(0, "HashAggregate", (1,)), scan(1, nbytes=nbytes, location=location)]
        if with_join:
            nodes = [
                node(0, "BroadcastHashJoin", (1, 2)),
                scan(1, nbytes=nbytes, location=location),
                scan(2, nbytes=nbytes, location="file:/data/other"),
            ]
        out.append(execution(i, nodes, f"kpi {i}"))
    return out
