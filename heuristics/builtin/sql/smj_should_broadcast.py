"""Sort-merge join that should broadcast: a join that shuffled and sorted both sides although one
side is small enough to send whole to every executor.

**What it measures.** For every sort-merge join that ran, the shuffled size (`data size` of the
exchange feeding each side, which is what adaptive execution compares with
`spark.sql.adaptive.autoBroadcastJoinThreshold`) of its two sides. A join is flagged when the
smaller side that Spark could build a broadcast from (either side of an inner join, the right side
of a left outer, semi or anti join, the left side of a right outer join; never a full outer join)
is at most `max_broadcast_bytes` and at most `max_broadcast_heap_fraction` of the smaller of
driver and executor heap. The value is the size of the *other* side: what a broadcast join would
not shuffle and sort. A side fed through an aggregate rather than straight from an exchange is
sized from the exchange below it, scaled by the rows that come out.

**Why it matters.** A sort-merge join writes both sides to shuffle files, reads them back over the
network and sorts them; a broadcast hash join ships the small side once and streams the large side
where it lies. Spark picks sort-merge when the broadcast threshold is disabled (`-1`), when its
size estimate at planning time was too high (a filter or aggregate it could not estimate), or when
the small side is above the threshold. Above Spark's 10 MB default the finding stays at MODERATE
at most: broadcasting is then a choice of settings, not a missed plan.

**How to fix.** Hint the small side: `SELECT /*+ BROADCAST(customers) */ ...` or
`orders.join(F.broadcast(customers), "customer_id")`; or raise
`spark.sql.autoBroadcastJoinThreshold` (and with adaptive execution
`spark.sql.adaptive.autoBroadcastJoinThreshold`) to a value above the small side, e.g.
`spark.sql.autoBroadcastJoinThreshold=32MB`. Keep broadcasts well under the driver's and
executors' memory: the driver collects the side and every executor holds a copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData, SqlPlanNode
from heuristics.builtin.sql.findings import (
    DEFAULT_BROADCAST_THRESHOLD,
    GIB,
    MIB,
    SQL_INPUTS,
    Facts,
    Finding,
    count,
    facts,
    label,
    nice_size_setting,
    no_sql,
    operator_cost,
    outcome,
    size,
)
from heuristics.builtin.sql.plan import Graph, graph, join_type, total
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.sparkconf import parse_size_bytes
from heuristics.thresholds import Thresholds

NAME = "sql_smj_should_broadcast"
TITLE = "Sort-merge join that should broadcast"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS

# which sides (0 left, 1 right) a broadcast hash join can build from, per join type
_BUILDABLE = {
    "inner": (0, 1),
    "cross": (0, 1),
    "leftouter": (1,),
    "leftsemi": (1,),
    "leftanti": (1,),
    "existencejoin": (1,),
    "rightouter": (0,),
    "fullouter": (),
}


@dataclass(frozen=True)
class Params:
    """Parameters of the sort-merge-join-should-broadcast check."""

    saved_bytes: Thresholds = param(
        Thresholds(1 * MIB, 1 * GIB, 10 * GIB, 100 * GIB),
        "shuffled size of the larger side, which a broadcast join would not shuffle (bytes; ascending)",
    )
    max_broadcast_bytes: float = param(
        256.0 * MIB, "the small side must be at most this to be worth broadcasting (bytes)"
    )
    max_broadcast_heap_fraction: float = param(
        0.10, "... and at most this share of the smaller of driver and executor heap (ratio)"
    )
    above_default_cap: int = param(
        int(Severity.MODERATE),
        "highest severity when the small side is above Spark's 10 MB default threshold (0-4)",
    )


@dataclass(frozen=True)
class _Side:
    index: int
    child: int
    exchange: SqlPlanNode | None
    bytes: float | None
    estimated: bool


def _side(g: Graph, child: int, index: int) -> _Side:
    exch = g.descend(child, lambda n: n.name == "Exchange")
    if exch is not None:
        return _Side(index, child, exch, total(exch, "data size"), False)
    # Fed by an aggregate (or window) on the join key: the exchange below sizes the rows, scaled
    # by the rows that come out of the side.
    exch = g.descend(child, lambda n: n.name == "Exchange", lambda n: len(n.children) == 1)
    if exch is None:
        return _Side(index, child, None, None, False)
    nbytes = total(exch, "data size")
    rows_in = g.rows_of(exch.node_id)
    rows_out = g.rows_of(child)
    if nbytes is None or not rows_in or rows_out is None:
        return _Side(index, child, exch, None, True)
    return _Side(index, child, exch, nbytes * min(1.0, rows_out / rows_in), True)


THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"
AQE_THRESHOLD = "spark.sql.adaptive.autoBroadcastJoinThreshold"


def _settings(fx: Facts, nbytes: float) -> tuple[tuple[str, str], ...]:
    """The threshold (and the adaptive one, when the application sets it) that broadcasts a side
    of ``nbytes``."""
    value = nice_size_setting(nbytes)
    return ((THRESHOLD, value),) + (((AQE_THRESHOLD, value),) if AQE_THRESHOLD in fx.conf else ())


def _fix(g: Graph, small: _Side, fx: Facts) -> str:
    rel = g.relation_name(small.child) or "the_small_side"
    setting = nice_size_setting(small.bytes or 0)
    now = fx.conf.get(THRESHOLD, "not set, 10MB by default")
    aqe = AQE_THRESHOLD in fx.conf
    return (
        f"Broadcast the {'right' if small.index else 'left'} side ({size(small.bytes)}): "
        f"SELECT /*+ BROADCAST({rel}) */ ... or F.broadcast({rel}) in the join, or set "
        f"spark.sql.autoBroadcastJoinThreshold={setting}"
        + (f" and spark.sql.adaptive.autoBroadcastJoinThreshold={setting}" if aqe else "")
        + f" (now {now})."
    )


def _check(g: Graph, node: SqlPlanNode, fx: Facts, params: Params, limit: float) -> Finding | None:
    sides = [_side(g, c, i) for i, c in enumerate(node.children)]
    if any(s.bytes is None for s in sides):
        return None
    jt = join_type(node)
    buildable = [s for s in sides if s.index in _BUILDABLE.get(jt, (0, 1))]
    if not buildable:
        return None
    small = min(buildable, key=lambda s: s.bytes or 0)
    big = next(s for s in sides if s is not small)
    if (small.bytes or 0) > limit:
        return None
    saved = float(big.bytes or 0)
    severity = params.saved_bytes.severity_of(saved)
    if severity == Severity.NONE:
        return None
    if (small.bytes or 0) > DEFAULT_BROADCAST_THRESHOLD:
        severity = min(severity, Severity(max(1, min(4, params.above_default_cap))))
    stages = set(node.stage_ids)
    for s in sides:
        if s.exchange is not None:
            stages |= set(s.exchange.stage_ids)
    stage_ms = fx.stage_time_ms(stages)
    cost = (
        (stage_ms, f"task time of the join's stages {', '.join(map(str, sorted(stages)))}")
        if stage_ms
        else operator_cost(fx, g, node)
    )
    side = "right" if small.index else "left"
    summary = (
        f"SortMergeJoin ({jt}) in {label(g.ex)}: the {side} side, {size(small.bytes)} "
        f"({count(g.rows_of(small.child))} rows{', estimated' if small.estimated else ''}), "
        f"would fit a broadcast; {size(saved)} of the other side shuffled and sorted for it"
    )
    return Finding(
        severity,
        saved,
        g.ex,
        node,
        summary,
        _fix(g, small, fx),
        cost[0],
        cost[1],
        tuple(sorted(stages)),
        _settings(fx, small.bytes or 0),
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag sort-merge joins with a side small enough to broadcast."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    limit = params.max_broadcast_bytes
    if fx.heap_bytes:
        limit = min(limit, fx.heap_bytes * params.max_broadcast_heap_fraction)
    found = []
    for ex in app.sql_executions:
        g = graph(ex)
        for node in g.ran():
            if node.name.startswith("SortMergeJoin") and len(node.children) == 2:
                finding = _check(g, node, fx, params, limit)
                if finding is not None:
                    found.append(finding)
    # one threshold for the next run: the one that broadcasts the largest small side flagged
    conf = max(
        (f.conf for f in found), key=lambda c: parse_size_bytes(c[0][1], "b") or 0, default=()
    )
    return outcome(
        found, fx, "No sort-merge join with a side small enough to broadcast", size, conf
    )
