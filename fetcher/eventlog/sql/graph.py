"""``SparkPlanGraph``: the SQL plan as nodes and edges, and ``SQLMetrics.stringValue``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fetcher.eventlog.formats import bytes_string, java_integer, java_number, ms_duration

SUM, SIZE, TIMING, NS_TIMING, AVERAGE = "sum", "size", "timing", "nsTiming", "average"
_SUFFIX = "(min, med, max (stageId: taskId))"


def string_value(metric_type: str, values: list[int], max_metrics: list[int]) -> str:
    """``SQLMetrics.stringValue``: how the SQL tab prints an aggregated metric."""
    task_info = (
        "(driver)"
        if not max_metrics
        else f"(stage {max_metrics[1]}.{max_metrics[2]}: task {max_metrics[3]})"
    )
    if metric_type == SUM:
        return java_integer(sum(values))
    if metric_type == AVERAGE:
        valid = sorted(v for v in values if v > 0)
        if len(valid) <= 1:
            return java_number((valid[0] if valid else 0) / 10)
        mn, med, mx_ = (
            java_number(valid[0] / 10),
            java_number(valid[len(valid) // 2] / 10),
            java_number(valid[-1] / 10),
        )
        return f"{_SUFFIX}:\n({mn}, {med}, {mx_} {task_info})"
    fmt: Callable[[int], str]
    if metric_type == SIZE:
        fmt = bytes_string
    elif metric_type == TIMING:
        fmt = ms_duration
    elif metric_type == NS_TIMING:

        def fmt(v: int) -> str:
            return ms_duration(v // 1_000_000)
    else:
        # v2 custom metrics are aggregated by their own class on the SHS; not reproducible here.
        return java_integer(sum(v for v in values if v >= 0))
    valid = sorted(v for v in values if v >= 0)
    if len(valid) <= 1:
        return fmt(valid[0] if valid else 0)
    return (
        f"total {_SUFFIX}\n{fmt(sum(valid))} ({fmt(valid[0])}, {fmt(valid[len(valid) // 2])}, "
        f"{fmt(valid[-1])} {task_info})"
    )


# ----------------------------------------------------------------------------------- plan graph


@dataclass
class PlanNode:
    node_id: int
    name: str
    desc: str
    metrics: list[tuple[str, int, str]]  # (name, accumulatorId, metricType)
    children: list[PlanNode] | None = None  # set for WholeStageCodegen clusters


@dataclass
class PlanGraph:
    nodes: list[PlanNode]
    edges: list[tuple[int, int]]

    @property
    def all_nodes(self) -> list[PlanNode]:
        out: list[PlanNode] = []
        for n in self.nodes:
            if n.children is not None:
                out.extend(n.children)
                out.append(n)
            else:
                out.append(n)
        return out


def _plan_key(info: dict[str, Any], memo: dict[int, Any]) -> Any:
    """SparkPlanInfo equality: nodeName, simpleString and children (recursively)."""
    k = memo.get(id(info))
    if k is None:
        k = (
            info.get("nodeName"),
            info.get("simpleString"),
            tuple(_plan_key(c, memo) for c in info.get("children") or []),
        )
        memo[id(info)] = k
    return k


def build_graph(plan: dict[str, Any]) -> PlanGraph:
    """``SparkPlanGraph.apply``: node ids in pre-order, WholeStageCodegen as clusters, reused
    exchanges and subqueries pointing at the first occurrence."""
    counter = [0]
    nodes: list[PlanNode] = []
    edges: list[tuple[int, int]] = []
    exchanges: dict[Any, PlanNode] = {}
    memo: dict[int, Any] = {}

    def metrics_of(info: dict[str, Any]) -> list[tuple[str, int, str]]:
        return [
            (m.get("name"), m.get("accumulatorId"), m.get("metricType"))
            for m in info.get("metrics") or []
        ]

    def next_id() -> int:
        counter[0] += 1
        return counter[0] - 1

    def build(info: dict[str, Any], parent: PlanNode | None, subgraph: PlanNode | None) -> None:
        name = info.get("nodeName") or ""
        children = info.get("children") or []
        if name.startswith("WholeStageCodegen"):
            cluster = PlanNode(
                next_id(), name, info.get("simpleString") or "", metrics_of(info), []
            )
            nodes.append(cluster)
            build(children[0], parent, cluster)
        elif name == "InputAdapter":
            build(children[0], parent, None)
        elif name in ("BroadcastQueryStage", "ShuffleQueryStage"):
            k = _plan_key(children[0], memo)
            if k in exchanges and parent is not None:
                edges.append((exchanges[k].node_id, parent.node_id))
            else:
                build(children[0], parent, None)
        elif name in ("TableCacheQueryStage", "ResultQueryStage"):
            build(children[0], parent, None)
        elif name == "Subquery" and subgraph is not None:
            build(info, parent, None)
        elif name == "Subquery" and _plan_key(info, memo) in exchanges:
            edge = (exchanges[_plan_key(info, memo)].node_id, parent.node_id if parent else -1)
            if edge not in edges:
                edges.append(edge)
        elif name == "ReusedSubquery":
            build(children[0], parent, subgraph)
        elif name == "ReusedExchange" and children and _plan_key(children[0], memo) in exchanges:
            edges.append(
                (exchanges[_plan_key(children[0], memo)].node_id, parent.node_id if parent else -1)
            )
        else:
            node = PlanNode(next_id(), name, info.get("simpleString") or "", metrics_of(info))
            if subgraph is None:
                nodes.append(node)
            else:
                assert subgraph.children is not None
                subgraph.children.append(node)
            if "Exchange" in name or name == "Subquery":
                exchanges[_plan_key(info, memo)] = node
            if parent is not None:
                edges.append((node.node_id, parent.node_id))
            for c in children:
                build(c, node, subgraph)

    build(plan, None, None)
    return PlanGraph(nodes, edges)


# ------------------------------------------------------------------------------------- listener
