"""``GET /api/apps/<id>/sql``: an application's SQL executions as data, a page of them at a time:
each with its nodes (metrics parsed, with units), edges, stages, plan text and the findings that
name its operators."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from heuristics.result import HeuristicResult
from sparkscope.models.sql import SqlExecution, SqlFetch, SqlNode, SqlStage
from sparkscope.present.display import severity_name
from sparkscope.queries.sql import flags_by_node

#: Executions per API page by default, and at most.
DEFAULT_LENGTH = 100
MAX_LENGTH = 1000
_METRIC_KEYS = (
    "unit",
    "total",
    "min",
    "median",
    "max",
    "stage_id",
    "stage_attempt",
    "task_id",
    "raw",
)


def metric_json(values: Sequence[Any]) -> dict[str, Any]:
    """A stored metric as an object (``raw`` only for a value that could not be read)."""
    out = dict(zip(_METRIC_KEYS, (list(values) + [None] * 9)[:9], strict=True))
    if out["raw"] is None:
        del out["raw"]
    return out


def sql_document(
    session: Session,
    application_pk: int,
    findings: Sequence[HeuristicResult],
    offset: int = 0,
    length: int = DEFAULT_LENGTH,
) -> dict[str, Any]:
    """The SQL part of one application, executions ``offset`` .. ``offset + length`` by id."""
    fetch = session.get(SqlFetch, application_pk)
    where = SqlExecution.application_id == application_pk
    total = session.scalar(select(func.count()).select_from(SqlExecution).where(where)) or 0
    execs = session.scalars(
        select(SqlExecution)
        .where(where)
        .order_by(SqlExecution.execution_id)
        .offset(offset)
        .limit(length)
    ).all()
    ids = [e.execution_id for e in execs]
    stages: dict[int, list[int]] = defaultdict(list)
    node_stages: dict[tuple[int, int], list[int]] = defaultdict(list)
    nodes: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if ids:
        for eid, sid, nids in session.execute(
            select(SqlStage.execution_id, SqlStage.stage_id, SqlStage.node_ids).where(
                SqlStage.application_id == application_pk, SqlStage.execution_id.in_(ids)
            )
        ):
            stages[eid].append(sid)
            for nid in nids or ():
                node_stages[(eid, nid)].append(sid)
        for n in session.scalars(
            select(SqlNode)
            .where(SqlNode.application_id == application_pk, SqlNode.execution_id.in_(ids))
            .order_by(SqlNode.execution_id, SqlNode.node_id)
        ):
            nodes[n.execution_id].append(
                {
                    "node_id": n.node_id,
                    "name": n.name,
                    "codegen_id": n.codegen_id,
                    "plan_operator_id": n.op_id,
                    "in_cached_plan": n.in_cached_plan,
                    "stage_ids": sorted(node_stages.get((n.execution_id, n.node_id), ())),
                    "metrics": {k: metric_json(v) for k, v in (n.metrics or {}).items()},
                    "detail": n.detail or {},
                }
            )
    flags = flags_by_node(findings)
    return {
        "status": fetch.status if fetch is not None else None,
        "error": fetch.error if fetch is not None else None,
        "notes": list(fetch.notes or ()) if fetch is not None else [],
        "total": total,
        "offset": offset,
        "length": length,
        "executions": [
            {
                "execution_id": e.execution_id,
                "description": e.description,
                "status": e.status,
                "submission_time_ms": e.submission_time_ms,
                "duration_ms": e.duration_ms,
                "success_job_ids": e.success_job_ids,
                "failed_job_ids": e.failed_job_ids,
                "running_job_ids": e.running_job_ids,
                "stage_ids": sorted(stages.get(e.execution_id, ())),
                "adaptive": e.adaptive,
                "error_message": e.error_message,
                "notes": e.notes or [],
                "plan_chars": e.plan_chars,
                "plan_text": e.plan_text,
                "plan_text_truncated": e.plan_text is not None and len(e.plan_text) < e.plan_chars,
                "nodes": nodes.get(e.execution_id, []),
                "edges": [{"from": c, "to": p} for c, p in e.edges or ()],
                "findings": [
                    {
                        "heuristic": f.heuristic,
                        "severity": severity_name(f.severity),
                        "severity_level": f.severity,
                        "node_id": nid,
                        "finding": f.text,
                    }
                    for (eid, nid), fl in sorted(
                        flags.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1)
                    )
                    if eid == e.execution_id
                    for f in fl
                ],
            }
            for e in execs
        ],
    }
