"""One SQL execution of the ``/sql`` answer: its graph nodes with parsed metrics, the edges, and
each node matched to its operator in the plan text.

The SHS graph (SparkPlanGraph) numbers nodes in pre-order, leaves out ``InputAdapter`` and the
query-stage wrappers, draws an exchange met again as an edge to the first one and adds
``WholeStageCodegen (n)`` cluster nodes; the plan text prints ``ShuffleQueryStage``,
``ResultQueryStage``, ``InMemoryRelation``, ``ReusedExchange`` and the like. Within each operator
key (:func:`fetcher.parse.sql.plantext.op_key`) the k-th graph node is the k-th operator of the
executed plan; codegen ids are compared as a check. A cached plan printed twice is drawn once
under adaptive execution and twice without it, so both readings are tried and the one whose
counts fit the graph is used.

Nothing here raises on a malformed execution: what cannot be read is skipped or kept partially,
with a note on the execution.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fetcher.parse.fields import parse_time_ms
from fetcher.parse.sql.metrics import TOTAL_AT, MetricValues, canonical_metric_name, metric_values
from fetcher.parse.sql.plantext import OpDetail, PlanText, TreeOp, op_key, parse_plan

#: Descriptions and error messages kept per execution (a description can be the whole SQL text).
DESCRIPTION_KEEP_CHARS = 4000
ERROR_KEEP_CHARS = 4000

_INT64 = 2**63


@dataclass(slots=True)
class GraphNode:
    """One node of the SHS plan graph (``nodes[]``), with its plan-text operator when matched."""

    node_id: int
    name: str
    codegen_id: int | None
    metrics: dict[str, MetricValues]  # by canonical name; the dict the node's row keeps
    op_id: int | None = None
    detail: OpDetail | None = None
    children: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    in_cached_plan: bool = False

    @property
    def key(self) -> str:
        """The operator key the plan text is matched by."""
        return op_key(self.name)

    @property
    def is_cluster(self) -> bool:
        """A ``WholeStageCodegen (n)`` cluster rather than an operator."""
        return self.name.startswith("WholeStageCodegen")

    def total(self, metric: str) -> float | None:
        """A metric's total, None when the node has no such metric."""
        m = self.metrics.get(metric)
        return m[TOTAL_AT] if m is not None else None


@dataclass
class ParsedExecution:
    """One SQL execution as the SHS reports it."""

    execution_id: int
    status: str
    description: str
    submission_time_ms: int | None
    duration_ms: int | None
    success_job_ids: list[int]
    failed_job_ids: list[int]
    running_job_ids: list[int]
    nodes: dict[int, GraphNode]
    edges: list[tuple[int, int]]
    plan: PlanText | None
    plan_text: str | None
    notes: list[str] = field(default_factory=list)
    error_message: str | None = None

    @property
    def job_ids(self) -> list[int]:
        """Every job of the execution, by id."""
        return sorted({*self.success_job_ids, *self.failed_job_ids, *self.running_job_ids})

    def operators(self) -> list[GraphNode]:
        """Graph nodes that are operators (codegen clusters left out), by node id."""
        return [n for _, n in sorted(self.nodes.items()) if not n.is_cluster]


def as_int(value: Any) -> int | None:
    """An id or count the database can hold, else None (bools, text, out-of-range numbers)."""
    if type(value) is int and -_INT64 <= value < _INT64:  # nearly every value
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value == value and abs(value) < _INT64:
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            return None
    if isinstance(value, int) and -_INT64 <= value < _INT64:
        return value
    return None


def _ints(value: Any) -> list[int]:
    if not isinstance(value, list):
        return []
    return [v for v in map(as_int, value) if v is not None]


def _parse_nodes(raw_nodes: Any, notes: list[str]) -> dict[int, GraphNode]:
    if raw_nodes is None:
        notes.append("no plan graph (an old server, or details=false)")
        return {}
    if not isinstance(raw_nodes, list):
        notes.append("plan graph nodes are not a list")
        return {}
    nodes: dict[int, GraphNode] = {}
    bad_nodes = bad_metrics = 0
    for rn in raw_nodes:
        nid = rn.get("nodeId") if isinstance(rn, dict) else None
        if type(nid) is not int or not -_INT64 <= nid < _INT64:  # (as_int's common case inline)
            nid = as_int(nid)
        if nid is None:
            bad_nodes += 1
            continue
        metrics: dict[str, MetricValues] = {}
        raw_metrics = rn.get("metrics")
        for rm in raw_metrics if isinstance(raw_metrics, list) else ():
            metric_name = rm.get("name") if isinstance(rm, dict) else None
            if not isinstance(metric_name, str):
                bad_metrics += 1
                continue
            name, hint = canonical_metric_name(metric_name[:200])
            if name not in metrics:  # the first of a repeated name is kept (the others unread)
                metrics[name] = metric_values(rm.get("value"), hint)
        name = rn.get("nodeName")
        label = (name.strip()[:500] or "?") if isinstance(name, str) else "?"
        codegen_id = rn.get("wholeStageCodegenId")  # (None for most operators)
        if codegen_id is not None and (
            type(codegen_id) is not int or not -_INT64 <= codegen_id < _INT64
        ):
            codegen_id = as_int(codegen_id)
        nodes[nid] = GraphNode(nid, label, codegen_id, metrics)
    if bad_nodes:
        notes.append(f"{bad_nodes} node(s) without a nodeId skipped")
    if bad_metrics:
        notes.append(f"{bad_metrics} unreadable metric(s) skipped")
    return nodes


def parse_execution(raw: Any) -> ParsedExecution | None:
    """One element of a ``/sql`` page; None when it has no usable execution id."""
    if not isinstance(raw, dict):
        return None
    exec_id = as_int(raw.get("id"))
    if exec_id is None:
        return None
    notes: list[str] = []
    nodes = _parse_nodes(raw.get("nodes"), notes)
    edges: list[tuple[int, int]] = []
    unsorted: list[list[int]] = []  # children lists appended to out of order
    raw_edges = raw.get("edges")
    for e in raw_edges if isinstance(raw_edges, list) else []:
        if isinstance(e, dict):
            # (an int taken as it is: one out of as_int's range is no node's id either)
            src, dst = e.get("fromId"), e.get("toId")
            if type(src) is not int:
                src = as_int(src)
            if type(dst) is not int:
                dst = as_int(dst)
            if src is None or dst is None:
                continue
            child, parent = nodes.get(src), nodes.get(dst)  # fromId is the child, toId the parent
            if child is not None and parent is not None:
                edges.append((src, dst))
                kids = parent.children
                if kids and kids[-1] > src:
                    unsorted.append(kids)
                kids.append(src)
                child.parents.append(dst)
    for kids in unsorted:  # (each node's children by id)
        kids.sort()
    text = raw.get("planDescription")
    plan = parse_plan(text) if isinstance(text, str) and text.strip() else None
    if plan is None:
        notes.append("no plan description (an old server, or planDescription=false)")
    status = raw.get("status")
    message = raw.get("errorMessage")
    ex = ParsedExecution(
        execution_id=exec_id,
        status=status[:32] if isinstance(status, str) and status else "UNKNOWN",
        description=str(raw.get("description") or "")[:DESCRIPTION_KEEP_CHARS],
        submission_time_ms=parse_time_ms(raw.get("submissionTime")),
        duration_ms=as_int(raw.get("duration")),
        success_job_ids=_ints(raw.get("successJobIds")),
        failed_job_ids=_ints(raw.get("failedJobIds")),
        running_job_ids=_ints(raw.get("runningJobIds")),
        nodes=nodes,
        edges=edges,
        plan=plan,
        plan_text=text if plan is not None else None,
        notes=notes,
        error_message=str(message)[:ERROR_KEEP_CHARS] if message else None,
    )
    if plan is not None:
        notes.extend(plan.notes)
    mark_cached(ex)
    if plan is not None and nodes:
        match_plan(ex, plan)
    return ex


def mark_cached(ex: ParsedExecution) -> None:
    """Nodes below an InMemoryTableScan are the cached relation's plan: they ran when the cache
    was built (usually in another execution), not here."""
    stack = [
        c for n in ex.nodes.values() if n.name.startswith("InMemoryTableScan") for c in n.children
    ]
    seen: set[int] = set()
    while stack:
        nid = stack.pop()
        if nid in seen or nid not in ex.nodes:
            continue
        seen.add(nid)
        ex.nodes[nid].in_cached_plan = True
        stack.extend(ex.nodes[nid].children)


_SKIP_IN_GRAPH = frozenset(
    {
        "ShuffleQueryStage",
        "BroadcastQueryStage",
        "ResultQueryStage",
        "TableCacheQueryStage",
        "InputAdapter",
        "InMemoryRelation",
        "ReusedSubquery",
        "ReusedExchange",
    }
)
# graph nodes the formatted plan prints as a section header, not as a tree operator
_GRAPH_ONLY = frozenset({"Subquery", "SubqueryBroadcast", "ReusedSubquery"})


def _text_ops(ops: list[TreeOp], keys: dict[str, str]) -> dict[str, list[TreeOp]]:
    """A reading's operators by key; ``keys``: name -> key of the names met so far (the graph and
    both readings meet the same names, and a plan repeats its operator names)."""
    out: dict[str, list[TreeOp]] = {}
    for op in ops:
        name = op.name
        if op.op_id is None or name.partition(" ")[0] in _SKIP_IN_GRAPH:
            continue
        key = keys.get(name)
        if key is None:
            key = keys[name] = op_key(name)
        if key in out:
            out[key].append(op)
        else:
            out[key] = [op]
    return out


def _misfit(reading: dict[str, list[TreeOp]], graph: dict[str, list[GraphNode]]) -> int:
    """How far a reading's operator counts are from the graph's."""
    keys = set(reading) | set(graph)
    return sum(abs(len(reading.get(k, ())) - len(graph.get(k, ()))) for k in keys)


def match_plan(ex: ParsedExecution, plan: PlanText) -> None:
    """Give graph nodes their plan-text operator id and detail block (see the module doc)."""
    key_of: dict[str, str] = {}
    graph: dict[str, list[GraphNode]] = {}
    for nid in sorted(ex.nodes):  # the operators (GraphNode.is_cluster left out), by node id
        node = ex.nodes[nid]
        name = node.name
        if name.startswith("WholeStageCodegen"):
            continue
        key = key_of.get(name)
        if key is None:
            key = key_of[name] = op_key(name)
        if key in graph:
            graph[key].append(node)
        else:
            graph[key] = [node]
    # The reading with exchanges met again left out, else the full one when its counts fit the
    # graph better; when no exchange is met again the two readings are the same.
    deduped, repeated = plan.executed_walk(True)
    text_ops = _text_ops(deduped, key_of)
    if repeated:
        full = _text_ops(plan.executed_ops(False), key_of)
        if _misfit(full, graph) < _misfit(text_ops, graph):
            text_ops = full
    uneven = []
    mismatched = 0
    for key, nodes in graph.items():
        ops = text_ops.get(key, [])
        if not ops and key in _GRAPH_ONLY:
            continue
        if len(ops) != len(nodes):
            uneven.append(f"{key} {len(nodes)}/{len(ops)}")
        for node, op in zip(nodes, ops, strict=False):
            detail = plan.details.get(op.op_id) if op.op_id is not None else None
            if (
                detail is not None
                and detail.codegen_id is not None
                and node.codegen_id is not None
                and detail.codegen_id != node.codegen_id
            ):
                mismatched += 1
                continue
            node.op_id = op.op_id
            node.detail = detail
    if uneven:
        ex.notes.append(
            "graph and plan text differ in operator counts: " + ", ".join(sorted(uneven)[:10])
        )
    if mismatched:
        ex.notes.append(f"{mismatched} node(s) not matched: codegen ids differ from the plan text")
