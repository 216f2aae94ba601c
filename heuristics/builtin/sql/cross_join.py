"""Cross join: a cartesian product or nested-loop join comparing every row of one side with every
row of the other.

**What it measures.** For every BroadcastNestedLoopJoin and CartesianProduct that ran, the number
of row pairs it compared: left rows times right rows (when a side's rows are unknown, its output
rows). A side of one row (attaching a total or a scalar to every row) is not a cross join and is
left alone.

**Why it matters.** Spark uses these operators when a join has no equality condition between the
two sides (`crossJoin`, a join condition with only `<`/`>`/`OR`/functions, `NOT IN` a
subquery over several columns): the work grows with the product of the sides, not their sum. A
million pairs take well under a second; 10^12 are CPU-hours, and the output (up to every pair)
floods the stages after it.

**How to fix.** Join on an equality between the sides (`a.join(b, "key")`) so Spark can hash or
sort-merge; for range conditions (`a.ts BETWEEN b.start AND b.end`) add an equality on a coarse
bucket (the day, a rounded value) next to the range. Rewrite `NOT IN (subquery)` as
`NOT EXISTS`. If the product is intended, aggregate or filter each side first so the product is
small.
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
from heuristics.builtin.sql.plan import Graph, join_type, total
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.thresholds import Thresholds

NAME = "sql_cross_join"
TITLE = "Cross join"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS

_NESTED = ("BroadcastNestedLoopJoin", "CartesianProduct")


@dataclass(frozen=True)
class Params:
    """Parameters of the cross-join check."""

    pairs: Thresholds = param(
        Thresholds(1e6, 1e8, 1e10, 1e12),
        "row pairs compared: left rows x right rows (count; ascending)",
    )


def _fix(node: SqlPlanNode) -> str:
    cond = (node.detail.get("Join condition") or "").strip()
    jt = join_type(node)
    if jt in ("leftanti", "leftsemi") and "isnull" in cond.lower():
        return (
            "This is NOT IN (subquery) over columns that may be null: rewrite it as NOT EXISTS "
            "(SELECT 1 FROM ... WHERE a.k = b.k) so Spark can hash-join on the key."
        )
    where = f" instead of the nested loop over {cond}" if cond and cond != "None" else ""
    return (
        "Join on an equality between the two sides (df1.join(df2, 'key')) so Spark can hash or "
        f"sort-merge{where}; for a range condition add an equality on a coarse bucket as well; "
        "if the product is intended, aggregate or filter each side first."
    )


def _check(g: Graph, node: SqlPlanNode, fx: Facts, params: Params) -> Finding | None:
    sides = [g.rows_of(c) for c in node.children]
    out = total(node, "number of output rows")
    if len(sides) == 2 and all(s is not None for s in sides):
        left, right = float(sides[0] or 0), float(sides[1] or 0)
        if min(left, right) <= 1:
            return None  # attaching one row to every row
        pairs = left * right
    elif out is not None:
        pairs = out
    else:
        return None
    severity = params.pairs.severity_of(pairs)
    if severity == Severity.NONE:
        return None
    cost = operator_cost(fx, g, node, g.pipeline_ms(node))
    cond = node.detail.get("Join condition") or "none"
    shown = " x ".join(count(s) for s in sides) if len(sides) == 2 else "?"
    summary = (
        f"{node.name} in {label(g.ex)}: {shown} rows = {count(pairs)} pairs compared, "
        f"{count(out)} output rows (condition: {cond[:120]})"
    )
    return Finding(
        severity, pairs, g.ex, node, summary, _fix(node), cost[0], cost[1], node.stage_ids
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag nested-loop joins and cartesian products over many row pairs."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    found = flagged_nodes(
        app, lambda node: node.name.startswith(_NESTED), lambda g, node: _check(g, node, fx, params)
    )
    return outcome(found, fx, "No cartesian product or nested-loop join over many rows")
