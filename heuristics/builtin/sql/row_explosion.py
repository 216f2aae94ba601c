"""Row explosion: a join whose output has many times the rows of its inputs.

**What it measures.** For every hash or sort-merge join that ran with at least
`min_output_rows` output rows, its output rows over the rows of its two inputs together. A join
where one side's key is unique never exceeds 1; above 2, the key repeats on both sides
(many-to-many) and every match multiplies.

When one task did most of the join's work (the longest task at least `hot_task_share` of its
pipeline's time while the median task took under a tenth of the longest), the explosion is one hot
key: that is data skew, which the stage-skew and data-skew checks report with its fix (salting the
key), so this finding then stays LOW.

**Why it matters.** Every stage after the join processes, shuffles and maybe writes the multiplied
rows; a join on a low-cardinality key (a region, a status, a date) between two large tables can
turn millions of rows into billions. Usually the key is incomplete or one side should have been
reduced to one row per key first.

**How to fix.** Join on the full key (every column that identifies a row); reduce one side to one
row per key before the join (`groupBy(key).agg(...)`, `dropDuplicates([key])`, a window with
`row_number() = 1`); when only existence matters, use `how="left_semi"`.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData, SqlPlanNode
from heuristics.builtin.sql.findings import (
    SQL_INPUTS,
    Facts,
    Finding,
    count,
    facts,
    flagged_nodes,
    label,
    no_sql,
    operator_cost,
    outcome,
)
from heuristics.builtin.sql.plan import Graph, strip_attr_ids, total
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.thresholds import Thresholds

NAME = "sql_row_explosion"
TITLE = "Row explosion in a join"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS

_JOINS = ("BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin")


@dataclass(frozen=True)
class Params:
    """Parameters of the row-explosion check."""

    ratio: Thresholds = param(
        Thresholds(2, 5, 20, 100),
        "join output rows / (left + right input rows) (ratio; ascending)",
    )
    min_output_rows: float = param(100_000.0, "joins with fewer output rows are not judged (count)")
    hot_task_share: float = param(
        0.5,
        "the longest task's share of the join pipeline's time above which it is a hot key (ratio)",
    )


def _hot_task(g: Graph, node: SqlPlanNode) -> float | None:
    """Share of the join pipeline's time in its longest task when the median task is under a
    tenth of it; 0 when the work is spread; None when unknown."""
    cluster = g.cluster(node)
    m = cluster.metrics.get("duration") if cluster is not None else None
    if m is None or not m.total or m.max is None or m.med is None:
        return None
    if m.med > 0.1 * m.max:
        return 0.0
    return m.max / m.total


def _check(g: Graph, node: SqlPlanNode, fx: Facts, params: Params) -> Finding | None:
    out = total(node, "number of output rows")
    if out is None or out < params.min_output_rows or len(node.children) != 2:
        return None
    left, right = (g.rows_of(c) for c in node.children)
    if left is None or right is None or left + right <= 0:
        return None
    ratio = out / (left + right)
    severity = params.ratio.severity_of(ratio)
    if severity == Severity.NONE:
        return None
    hot = _hot_task(g, node)
    skewed = hot is not None and hot >= params.hot_task_share
    if skewed:
        severity = min(severity, Severity.LOW)
    keys = strip_attr_ids(node.detail.get("Left keys") or "?")
    per_row = out / max(right, 1)
    fix = (
        f"The key {keys} repeats on both sides (about {per_row:,.0f} matches per right-side "
        f"row): reduce one side to one row per key before the join (groupBy({keys.strip('[]')})"
        ".agg(...) or dropDuplicates), join on the full key, or use how='left_semi' if only "
        "existence matters."
    )
    if skewed:
        fix = (
            f"One task did {hot:.0%} of this join's work: a hot key. Salt it or handle it apart "
            "(see the stage-skew finding); " + fix[0].lower() + fix[1:]
        )
    cost = operator_cost(fx, g, node, g.pipeline_ms(node))
    summary = (
        f"{node.name} in {label(g.ex)}: {count(out)} output rows from {count(left)} + "
        f"{count(right)} input rows ({ratio:,.0f}x) on {keys}"
        + (f"; one task did {hot:.0%} of the work (a hot key)" if skewed else "")
    )
    return Finding(severity, ratio, g.ex, node, summary, fix, cost[0], cost[1], node.stage_ids)


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag joins whose output has many times their input rows."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    found = flagged_nodes(
        app, lambda node: node.name.startswith(_JOINS), lambda g, node: _check(g, node, fx, params)
    )
    return outcome(found, fx, "No join multiplying its input rows", "{:,.1f}x".format)
