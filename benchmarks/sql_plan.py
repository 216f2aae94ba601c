"""A SQL part for one fleet application: a 200-node plan, made as a History Server answers it and
stored through the fetcher's parser, so the web benchmark measures the Queries section and the SQL
API at the size the targets name.

The plan: one query unioning 28 sort-merge joins of two scans each (a join, two sorts, two
exchanges, two scans per branch) under an aggregate, 200 nodes, with Spark 4.0's metric strings, a
plan text of about 60 kB, and stage links; the joins' small sides are 3 MiB, so the sort-merge
check flags every join and the page draws the flagged nodes.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine, delete, insert, select, update

from fetcher.parse.app import parse_jobs
from fetcher.parse.sql.rows import parse_bodies, sql_rows
from sparkscope.models.analysis import AnalysisInput
from sparkscope.models.application import Application
from sparkscope.models.sql import SqlExecution, SqlFetch, SqlNode, SqlStage

BRANCHES = 28
MIB = 1024 * 1024


def _metric(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value}


def _timing(total_ms: int, stage: int) -> str:
    return f"total (min, med, max (stageId: taskId))\n{total_ms} ms (1 ms, {total_ms // 8} ms, {total_ms // 4} ms (stage {stage}.0: task 7))"


def answer() -> list[dict[str, Any]]:
    """The /sql answer of one execution with a 200-node plan."""
    nodes: list[dict[str, Any]] = [
        {
            "nodeId": 0,
            "nodeName": "Execute InsertIntoHadoopFsRelationCommand",
            "metrics": [
                _metric("number of written files", "1"),
                _metric("written output", "2.0 KiB"),
            ],
        },
        {
            "nodeId": 1,
            "nodeName": "WholeStageCodegen (1)",
            "metrics": [_metric("duration", _timing(90, 57))],
        },
        {
            "nodeId": 2,
            "nodeName": "HashAggregate",
            "wholeStageCodegenId": 1,
            "metrics": [_metric("number of output rows", "28")],
        },
        {"nodeId": 3, "nodeName": "Union", "metrics": []},
    ]
    edges = [{"fromId": 2, "toId": 0}, {"fromId": 3, "toId": 2}]
    tree = [
        "== Physical Plan ==",
        "Execute InsertIntoHadoopFsRelationCommand (1)",
        "+- * HashAggregate (2)",
        "   +- Union (3)",
    ]
    blocks = [
        "(1) Execute InsertIntoHadoopFsRelationCommand\nInput: []\nArguments: file:/warehouse/revenue_mart, false, Parquet, Overwrite, [n]",
        "(2) HashAggregate [codegen id : 1]\nKeys: []\nFunctions [1]: [count(1)]",
        "(3) Union",
    ]
    op = 4
    for b in range(BRANCHES):
        base = len(nodes)
        stage = 2 * b + 1
        kinds = [
            ("SortMergeJoin", {"number of output rows": "1,000,000"}),
            ("Sort", {"sort time": _timing(800, stage + 1), "peak memory": "64.0 MiB"}),
            (
                "Exchange",
                {
                    "data size": "total (min, med, max (stageId: taskId))\n900.0 MiB (1.0 MiB, 4.5 MiB, 9.0 MiB (stage 0.0: task 3))",
                    "shuffle records written": "1,000,000",
                    "shuffle write time": _timing(300, 0),
                },
            ),
            (
                "Scan parquet",
                {
                    "number of files read": "40",
                    "size of files read": "1.2 GiB",
                    "number of output rows": "1,000,000",
                    "scan time": _timing(1200, 0),
                },
            ),
            ("Sort", {"sort time": _timing(40, stage + 1)}),
            ("Exchange", {"data size": "3.0 MiB", "shuffle records written": "100,000"}),
            (
                "Scan parquet",
                {
                    "number of files read": "1",
                    "size of files read": "2.1 MiB",
                    "number of output rows": "100,000",
                    "scan time": "12 ms",
                },
            ),
        ]
        parents = [3, base, base + 1, base + 2, base, base + 4, base + 5]
        prefix = ":- " if b < BRANCHES - 1 else "+- "
        cont = ":  " if b < BRANCHES - 1 else "   "
        depths = [0, 1, 2, 3, 1, 2, 3]
        for k, ((name, metrics), parent, depth) in enumerate(
            zip(kinds, parents, depths, strict=True)
        ):
            nid = base + k
            node: dict[str, Any] = {
                "nodeId": nid,
                "nodeName": name,
                "metrics": [_metric(m, v) for m, v in metrics.items()],
            }
            nodes.append(node)
            edges.append({"fromId": nid, "toId": parent})
            branch = ":- " if k == 1 else "+- "  # the join's left side first, then its right side
            lead = "      " + (prefix if depth == 0 else cont + ("   " * (depth - 1)) + branch)
            tree.append(f"{lead}{name}{' Inner' if name == 'SortMergeJoin' else ''} ({op})")
            detail = {
                "SortMergeJoin": f"Left keys [1]: [k#{op}L]\nRight keys [1]: [k#{op + 1}L]\nJoin type: Inner\nJoin condition: None",
                "Exchange": f"Input [2]: [k#{op}L, v#{op}]\nArguments: hashpartitioning(k#{op}L, 200), ENSURE_REQUIREMENTS, [plan_id={op}]",
                "Scan parquet": f"Output [2]: [k#{op}L, v#{op}]\nBatched: true\nLocation: InMemoryFileIndex [file:/warehouse/table_{b}_{k}]\nReadSchema: struct<k:bigint,v:string>",
                "Sort": f"Input [2]: [k#{op}L, v#{op}]\nArguments: [k#{op}L ASC NULLS FIRST], false, 0",
            }[name]
            blocks.append(f"({op}) {name}\n{detail}")
            op += 1
    plan = "\n".join(tree) + "\n\n\n" + "\n\n".join(blocks)
    return [
        {
            "id": 0,
            "status": "COMPLETED",
            "description": "nightly revenue mart: 28 sources joined to their dimensions",
            "planDescription": plan,
            "submissionTime": "2026-12-01T06:56:28.102GMT",
            "duration": 600_000,
            "runningJobIds": [],
            "successJobIds": [0],
            "failedJobIds": [],
            "nodes": nodes,
            "edges": edges,
        }
    ]


def fleet_app_id(apps: int) -> str:
    """The id benchmarks.fleet gives its last application (an ordinary one)."""
    return f"application_{1_700_000_000_000 + apps}_{apps % 10_000:04d}"


def attach(engine: Engine, app_id: str) -> int:
    """Give the application a 200-node SQL execution (replacing any SQL part); returns the nodes."""
    with engine.begin() as conn:
        pk = conn.scalar(select(Application.id).where(Application.app_id == app_id))
        if pk is None:
            raise SystemExit(f"no application {app_id!r} in the fleet")
        stages = [
            {"stage_id": s, "attempt_id": 0, "status": "COMPLETE"} for s in range(2 * BRANCHES + 1)
        ]
        jobs = parse_jobs(
            [{"jobId": 0, "status": "SUCCEEDED", "stageIds": [s["stage_id"] for s in stages]}]
        )
        rows = sql_rows(parse_bodies([json.dumps(answer())]), jobs, stages)
        for model in (SqlStage, SqlNode, SqlExecution, SqlFetch, AnalysisInput):
            conn.execute(delete(model).where(model.application_id == pk))
        # its findings and encoded inputs predate the SQL part: analysis scores it again
        conn.execute(
            update(Application).where(Application.id == pk).values(analysis_fingerprint=None)
        )
        conn.execute(insert(SqlFetch), [{**rows.status, "application_id": pk}])
        for model, batch in (
            (SqlExecution, rows.executions),
            (SqlNode, rows.nodes),
            (SqlStage, rows.stages),
        ):
            conn.execute(insert(model), [{**r, "application_id": pk} for r in batch])
    return len(rows.nodes)
