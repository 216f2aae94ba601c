"""The ``/sql`` answers from the stored executions of a :class:`SQLReplay`."""

from __future__ import annotations

from typing import Any

from fetcher.eventlog.formats import shs_date
from fetcher.eventlog.params import NotFound
from fetcher.eventlog.scalaorder import int_map_order
from fetcher.eventlog.sql.graph import PlanGraph
from fetcher.eventlog.sql.listener import SQLReplay


def _execution_json(
    sql: SQLReplay, s: dict[str, Any], details: bool, plan: bool, now: int | None
) -> dict[str, Any]:
    order = int_map_order(s["job_order"])
    running = [j for j in order if s["jobs"][j] == "RUNNING"]
    done = [j for j in order if s["jobs"][j] == "SUCCEEDED"]
    failed = [j for j in order if s["jobs"][j] == "FAILED"]
    # SQLExecutionUIData.executionStatus (Spark 4.0)
    if s["error"] is not None:
        status = "COMPLETED" if s["error"] == "" else "FAILED"
    elif s["completion"] is None:
        status = "RUNNING"
    elif failed:
        status = "FAILED"
    else:
        status = "COMPLETED"
    end = s["completion"] if s["completion"] is not None else (now or s["submission"])
    d: dict[str, Any] = {"id": s["id"], "status": status}
    if s["description"] is not None:
        d["description"] = s["description"]
    d["planDescription"] = s["plan"] if plan else ""
    if d["planDescription"] is None:
        del d["planDescription"]
    d["submissionTime"] = shs_date(s["submission"])
    d["duration"] = end - s["submission"]
    d["runningJobIds"] = running
    d["successJobIds"] = done
    d["failedJobIds"] = failed
    graph = sql.graphs.get(s["id"])
    if details and graph is not None:
        d["nodes"] = _nodes(graph, s["metric_values"] or {})
        d["edges"] = [{"fromId": a, "toId": b} for a, b in graph.edges]
    else:
        d["nodes"] = []
        d["edges"] = []
    return d


def _nodes(graph: PlanGraph, values: dict[int, str]) -> list[dict[str, Any]]:
    wscg: dict[int, int | None] = {}
    for n in graph.all_nodes:
        if n.children is not None and n.name.strip().startswith("WholeStageCodegen"):
            name = n.name.strip()
            try:
                cid: int | None = int(name[len("WholeStageCodegen (") : -1])
            except ValueError:
                cid = None
            for c in n.children:
                wscg[c.node_id] = cid
    out = []
    for n in graph.all_nodes:
        metrics = []
        for mname, aid, _t in n.metrics:
            v = values.get(aid)
            if v is None:
                continue
            metrics.append({"name": (mname or "").strip(), "value": v.removeprefix("\n")})
        d: dict[str, Any] = {"nodeId": n.node_id, "nodeName": n.name.strip()}
        if wscg.get(n.node_id) is not None:
            d["wholeStageCodegenId"] = wscg[n.node_id]
        d["metrics"] = metrics
        out.append(d)
    out.sort(key=lambda x: x["nodeId"], reverse=True)
    return out


def executions(
    sql: SQLReplay,
    offset: int,
    length: int,
    details: bool = True,
    plan: bool = True,
    now: int | None = None,
) -> list[dict[str, Any]]:
    ids = sorted(sql.store)[offset : offset + length]
    return [_execution_json(sql, sql.store[i], details, plan, now) for i in ids]


def execution(
    sql: SQLReplay,
    execution_id: int,
    details: bool = True,
    plan: bool = True,
    now: int | None = None,
) -> dict[str, Any]:
    s = sql.store.get(execution_id)
    if s is None:
        raise NotFound(f"unknown query execution id: {execution_id}")
    return _execution_json(sql, s, details, plan, now)
