"""The SQL part of an application as its page, its stage pages and the API read it: the /sql
outcome, each execution with its duration, stages and findings, and plans as indented trees with
the flagged operators marked.

A finding names its operators in its details rows (the ``query`` and ``node`` columns the SQL
checks write), so any heuristic that writes them marks nodes here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from heuristics.result import HeuristicResult, Severity
from sparkscope.models.sql import SqlExecution, SqlFetch, SqlNode, SqlStage
from sparkscope.present.display import fmt_bytes, fmt_count, fmt_duration_ms

#: Plans drawn as trees on the page: the executions with findings, the selected one, and the
#: longest ones up to this many in all.
TREE_EXECUTIONS = 10
#: Nodes drawn per tree (a 10,000-node plan is summarised after these).
TREE_NODES = 2000
#: Executions listed on the page (the rest are counted, and in the API).
LISTED_EXECUTIONS = 500
# Operators a stage is best named by, most telling first.
_NAMING_ORDER = (
    "Execute",
    "SortMergeJoin",
    "BroadcastHashJoin",
    "ShuffledHashJoin",
    "BroadcastNestedLoopJoin",
    "CartesianProduct",
    "BatchEvalPython",
    "ArrowEvalPython",
    "Scan",
    "Window",
    "HashAggregate",
    "ObjectHashAggregate",
    "SortAggregate",
    "Sort",
    "BroadcastExchange",
    "Exchange",
)


@dataclass(frozen=True)
class Flag:
    """A finding on an operator (or a query): the heuristic, its severity and what it saw."""

    heuristic: str
    severity: int
    text: str


@dataclass(frozen=True)
class TreeRow:
    """One line of a plan tree."""

    depth: int
    node_id: int
    name: str
    codegen_id: int | None
    metrics: tuple[tuple[str, str], ...]
    flags: tuple[Flag, ...]
    stage_ids: tuple[int, ...]
    cached: bool
    repeat: bool = False  # drawn already under another parent (a reused exchange)


@dataclass
class QueryRow:
    """One SQL execution as the page lists it."""

    execution_id: int
    description: str
    status: str
    submission_time_ms: int | None
    duration_ms: int | None
    stage_ids: list[int]
    plan_chars: int
    notes: list[str]
    flags: list[Flag] = field(default_factory=list)
    tree: list[TreeRow] | None = None
    tree_cut: int = 0  # nodes not drawn
    plan_text: str | None = None

    @property
    def worst(self) -> int:
        """The worst severity of its findings (0 without)."""
        return max((f.severity for f in self.flags), default=0)


@dataclass
class SqlSection:
    """What the Queries section shows."""

    status: str | None  # None: fetched before SQL executions were read
    error: str | None
    notes: list[str]
    total: int
    rows: list[QueryRow]
    selected: int | None


def flags_by_node(findings: Iterable[HeuristicResult]) -> dict[tuple[int, int | None], list[Flag]]:
    """(execution id, node id) -> the findings naming it, from the findings' details rows."""
    out: dict[tuple[int, int | None], list[Flag]] = defaultdict(list)
    for f in findings:
        if f.severity <= Severity.NONE or f.details is None:
            continue
        cols = list(f.details.columns)
        if "query" not in cols or "node" not in cols:
            continue
        qi, ni = cols.index("query"), cols.index("node")
        ti = cols.index("finding") if "finding" in cols else None
        for row in f.details.rows:
            query, node = row[qi], row[ni]
            if not isinstance(query, int):
                continue
            text = str(row[ti]) if ti is not None else f.title
            key = (query, node if isinstance(node, int) else None)
            out[key].append(Flag(f.name, int(f.severity), text))
    return out


_SHOW = {"bytes": fmt_bytes, "ms": fmt_duration_ms}


def metric_text(values: Sequence[Any]) -> str:
    """A stored metric (``[unit, total, min, med, max, stage, attempt, task, raw]``) as text."""
    if len(values) < 6:
        return "?"
    unit, total, _mn, med, mx, stage = values[:6]
    if unit == "unknown":
        return str(values[8] if len(values) > 8 and values[8] is not None else "?")
    show = _SHOW.get(unit, fmt_count)
    if unit == "average":
        return f"median {show(med)}" + (f", max {show(mx)}" if mx is not None else "")
    text = show(total)
    if mx is not None and med is not None and mx != total:
        where = f" in stage {stage}" if stage is not None else ""
        text += f" (median task {show(med)}, max {show(mx)}{where})"
    return text


def _tree(
    nodes: dict[int, Any],
    edges: list[list[int]],
    stages: dict[int, list[int]],
    flags: dict[tuple[int, int | None], list[Flag]],
    eid: int,
) -> tuple[list[TreeRow], int]:
    children: dict[int, list[int]] = defaultdict(list)
    has_parent: set[int] = set()
    for child, parent in edges:
        if child in nodes and parent in nodes:
            children[parent].append(child)
            has_parent.add(child)
    ops = {nid: n for nid, n in nodes.items() if not n.name.startswith("WholeStageCodegen")}
    roots = sorted(nid for nid in ops if nid not in has_parent)
    rows: list[TreeRow] = []
    drawn: set[int] = set()
    stack = [(nid, 0) for nid in reversed(roots)]
    while stack and len(rows) < TREE_NODES:
        nid, depth = stack.pop()
        n = ops.get(nid)
        if n is None:
            continue
        repeat = nid in drawn
        drawn.add(nid)
        rows.append(
            TreeRow(
                depth=depth,
                node_id=nid,
                name=n.name,
                codegen_id=n.codegen_id,
                metrics=tuple((k, metric_text(v)) for k, v in (n.metrics or {}).items()),
                flags=tuple(flags.get((eid, nid), ())),
                stage_ids=tuple(stages.get(nid, ())),
                cached=n.in_cached_plan,
                repeat=repeat,
            )
        )
        if not repeat:
            stack.extend((c, depth + 1) for c in sorted(children.get(nid, ()), reverse=True))
    return rows, max(0, len(ops) - len(drawn))


def app_queries(
    session: Session,
    application_pk: int,
    findings: Sequence[HeuristicResult],
    selected: int | None = None,
) -> SqlSection:
    """The Queries section of one application (read-only)."""
    fetch = session.get(SqlFetch, application_pk)
    execs = session.execute(
        select(
            SqlExecution.execution_id,
            SqlExecution.description,
            SqlExecution.status,
            SqlExecution.submission_time_ms,
            SqlExecution.duration_ms,
            SqlExecution.plan_chars,
            SqlExecution.notes,
        )
        .where(SqlExecution.application_id == application_pk)
        .order_by(SqlExecution.execution_id)
    ).all()
    by_exec: dict[int, list[int]] = defaultdict(list)
    node_stages: dict[tuple[int, int], list[int]] = defaultdict(list)
    for eid, sid, nids in session.execute(
        select(SqlStage.execution_id, SqlStage.stage_id, SqlStage.node_ids).where(
            SqlStage.application_id == application_pk
        )
    ):
        by_exec[eid].append(sid)
        for nid in nids or ():
            node_stages[(eid, nid)].append(sid)
    flags = flags_by_node(findings)
    rows = []
    for e in execs[:LISTED_EXECUTIONS]:
        per_heuristic: dict[str, Flag] = {}
        for (eid, _), fl in flags.items():
            if eid == e.execution_id:
                for f in fl:
                    if (
                        f.heuristic not in per_heuristic
                        or f.severity > per_heuristic[f.heuristic].severity
                    ):
                        per_heuristic[f.heuristic] = f
        rows.append(
            QueryRow(
                execution_id=e.execution_id,
                description=e.description,
                status=e.status,
                submission_time_ms=e.submission_time_ms,
                duration_ms=e.duration_ms,
                stage_ids=sorted(by_exec.get(e.execution_id, ())),
                plan_chars=e.plan_chars,
                notes=list(e.notes or ()),
                flags=sorted(per_heuristic.values(), key=lambda f: (-f.severity, f.heuristic)),
            )
        )
    drawn = {r.execution_id for r in rows if r.flags}
    if selected is not None:
        drawn.add(selected)
    for r in sorted(rows, key=lambda r: -(r.duration_ms or 0)):
        if len(drawn) >= TREE_EXECUTIONS:
            break
        drawn.add(r.execution_id)
    _add_trees(
        session, application_pk, [r for r in rows if r.execution_id in drawn], flags, node_stages
    )
    if selected is not None:
        text = session.scalar(
            select(SqlExecution.plan_text).where(
                SqlExecution.application_id == application_pk,
                SqlExecution.execution_id == selected,
            )
        )
        for r in rows:
            if r.execution_id == selected:
                r.plan_text = text
    return SqlSection(
        status=fetch.status if fetch is not None else None,
        error=fetch.error if fetch is not None else None,
        notes=list(fetch.notes or ()) if fetch is not None else [],
        total=len(execs),
        rows=rows,
        selected=selected,
    )


def _add_trees(
    session: Session,
    application_pk: int,
    rows: list[QueryRow],
    flags: dict[tuple[int, int | None], list[Flag]],
    node_stages: dict[tuple[int, int], list[int]],
) -> None:
    if not rows:
        return
    ids = [r.execution_id for r in rows]
    nodes: dict[int, dict[int, Any]] = defaultdict(dict)
    for eid, nid, name, codegen, metrics, cached in session.execute(
        select(
            SqlNode.execution_id,
            SqlNode.node_id,
            SqlNode.name,
            SqlNode.codegen_id,
            # as text, decoded by orjson: several times faster than the driver's json per value
            cast(SqlNode.metrics, Text),
            SqlNode.in_cached_plan,
        ).where(SqlNode.application_id == application_pk, SqlNode.execution_id.in_(ids))
    ):
        nodes[eid][nid] = _Node(name, codegen, orjson.loads(metrics) if metrics else {}, cached)
    edges = dict(
        session.execute(
            select(SqlExecution.execution_id, SqlExecution.edges).where(
                SqlExecution.application_id == application_pk, SqlExecution.execution_id.in_(ids)
            )
        ).all()
    )
    for r in rows:
        eid = r.execution_id
        stages = {nid: s for (e, nid), s in node_stages.items() if e == eid}
        r.tree, r.tree_cut = _tree(nodes.get(eid, {}), edges.get(eid) or [], stages, flags, eid)


class _Node(NamedTuple):
    name: str
    codegen_id: int | None
    metrics: dict[str, list[Any]]
    in_cached_plan: bool


@dataclass(frozen=True)
class StageQuery:
    """The SQL execution a stage ran for, with the operators it ran (most telling first)."""

    execution_id: int
    description: str
    status: str
    operators: tuple[tuple[int, str], ...]

    @property
    def anchor(self) -> str:
        """The fragment of the query on the application page (``#query-3``)."""
        return f"query-{self.execution_id}"


def _rank(name: str) -> int:
    return next((k for k, p in enumerate(_NAMING_ORDER) if name.startswith(p)), len(_NAMING_ORDER))


def queries_for_stage(session: Session, application_pk: int, stage_id: int) -> list[StageQuery]:
    """The SQL executions (usually one) a stage of an application ran for, for its stage page:
    link it with the application page's ``?query=<execution_id>#<anchor>``."""
    links = session.execute(
        select(
            SqlStage.execution_id, SqlStage.node_ids, SqlExecution.description, SqlExecution.status
        )
        .join(
            SqlExecution,
            (SqlExecution.application_id == SqlStage.application_id)
            & (SqlExecution.execution_id == SqlStage.execution_id),
        )
        .where(SqlStage.application_id == application_pk, SqlStage.stage_id == stage_id)
        .order_by(SqlStage.execution_id)
    ).all()
    out = []
    for eid, nids, description, status in links:
        names: list[tuple[int, str]] = []
        if nids:
            names = [
                (nid, name)
                for nid, name in session.execute(
                    select(SqlNode.node_id, SqlNode.name).where(
                        SqlNode.application_id == application_pk,
                        SqlNode.execution_id == eid,
                        SqlNode.node_id.in_(list(nids)),
                    )
                )
                if not name.startswith("WholeStageCodegen")
            ]
        names.sort(key=lambda o: (_rank(o[1]), o[0]))
        out.append(StageQuery(eid, description, status, tuple(names)))
    return out
