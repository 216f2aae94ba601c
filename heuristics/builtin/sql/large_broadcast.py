"""Large broadcast: a broadcast exchange too big for the driver that builds it and the executors
that each hold a copy.

**What it measures.** The size of every broadcast that ran (the `data size` of its
BroadcastExchange). The severity is the higher of two levels: the size itself (`size_bytes`:
64 MiB is six times Spark's 10 MB default threshold, 4 GiB half its 8 GB hard limit) and the size
as a share of the smaller of driver and executor heap (`heap_fraction`). A broadcast of at least
8 GB or 357,913,941 rows (the limits Spark refuses beyond) is CRITICAL. The hashed relation reports
whole memory pages, so a few hundred string-keyed rows can show 32 MiB: a size of at most one page
(64 MiB) is counted as at most `max_row_bytes` per row.

**Why it matters.** The driver collects the whole side, builds a hash table from it and sends it
to every executor, which keeps it in memory for the life of the query: a large broadcast costs
driver time (`time to collect`, `time to build`), network, and heap on every node, and it is a
common cause of driver out-of-memory failures and of executors spilling or dying. It usually comes
from a `BROADCAST` hint or `broadcast()` call on a table that grew, or a threshold raised far
above the data it was set for.

**How to fix.** Let Spark shuffle the join instead: drop the hint or `F.broadcast(...)`, or
lower the threshold below the relation's size (`spark.sql.autoBroadcastJoinThreshold=10MB`,
and `spark.sql.adaptive.autoBroadcastJoinThreshold` under adaptive execution). Or shrink what is
broadcast: select only the columns the join needs and filter the rows first. If it must stay a
broadcast, give the driver and executors room (`spark.driver.memory`, `spark.executor.memory`).
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData, SqlPlanNode
from heuristics.builtin.sql.findings import (
    DEFAULT_BROADCAST_THRESHOLD,
    GIB,
    KIB,
    MIB,
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
    size,
)
from heuristics.builtin.sql.plan import Graph, total
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.thresholds import Thresholds

NAME = "sql_large_broadcast"
TITLE = "Large broadcast"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS

#: BroadcastExchangeExec refuses larger relations (8 GB) and more rows (BytesToBytesMap's capacity).
HARD_LIMIT_BYTES = 8 * GIB
HARD_LIMIT_ROWS = 357_913_941
THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"
_ROUND_MB = (10, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def _round_below(nbytes: float) -> str:
    """The largest round threshold under ``nbytes``, Spark's 10 MB default at the least."""
    below = [mb for mb in _ROUND_MB if mb * MIB < nbytes] or [10]
    return f"{below[-1]}MB"


#: The largest Tungsten memory page (spark.buffer.pageSize ranges over 1 MiB - 64 MiB).
MAX_PAGE_BYTES = 64 * MIB


@dataclass(frozen=True)
class Params:
    """Parameters of the large-broadcast check."""

    size_bytes: Thresholds = param(
        Thresholds(64 * MIB, 256 * MIB, 1 * GIB, 4 * GIB),
        "broadcast size (bytes; ascending)",
    )
    heap_fraction: Thresholds = param(
        Thresholds(0.05, 0.10, 0.25, 0.50),
        "broadcast size / the smaller of driver and executor heap (ratio; ascending)",
    )
    max_row_bytes: float = param(
        4.0 * KIB,
        "a broadcast of at most one memory page counts at most this per row (bytes)",
    )


def _fix(g: Graph, node: SqlPlanNode, nbytes: float, fx: Facts) -> str:
    rel = g.relation_name(node.node_id) or "the broadcast side"
    threshold = fx.conf_bytes("spark.sql.autoBroadcastJoinThreshold", DEFAULT_BROADCAST_THRESHOLD)
    forced = threshold < 0 or (total(node, "data size") or 0) > threshold
    return (
        f"Stop broadcasting {rel} ({size(nbytes)}): remove the BROADCAST hint / F.broadcast() "
        + (
            "(it is above spark.sql.autoBroadcastJoinThreshold, so a hint forced it) "
            if forced
            else ""
        )
        + f"or set spark.sql.autoBroadcastJoinThreshold={_round_below(nbytes)}; or "
        f"select only the columns the join needs and filter {rel} before the join."
    )


def _check(g: Graph, node: SqlPlanNode, fx: Facts, params: Params) -> Finding | None:
    reported = total(node, "data size")
    if reported is None:
        return None
    rows = total(node, "number of output rows")
    nbytes = reported
    if rows is not None and reported <= MAX_PAGE_BYTES:
        nbytes = min(reported, rows * params.max_row_bytes)  # whole memory pages, not rows
    severity = params.size_bytes.severity_of(nbytes)
    share = nbytes / fx.heap_bytes if fx.heap_bytes else None
    if share is not None:
        severity = max(severity, params.heap_fraction.severity_of(share))
    if nbytes >= HARD_LIMIT_BYTES or (rows or 0) >= HARD_LIMIT_ROWS:
        severity = Severity.CRITICAL
    if severity == Severity.NONE:
        return None
    times = [total(node, k) for k in ("time to collect", "time to build", "time to broadcast")]
    own = sum(t for t in times if t) or None
    cost = (own, "time to collect, build and broadcast it") if own else operator_cost(fx, g, node)
    heap = f" ({share:.0%} of a {size(fx.heap_bytes)} heap)" if share is not None else ""
    summary = (
        f"BroadcastExchange in {label(g.ex)}: {size(nbytes)}, {count(rows)} rows of "
        f"{g.relation_name(node.node_id) or 'a relation'} broadcast{heap}"
    )
    threshold = fx.conf_bytes(THRESHOLD, DEFAULT_BROADCAST_THRESHOLD)
    by_threshold = 0 < (total(node, "data size") or 0) <= threshold  # no hint was needed
    conf = ((THRESHOLD, _round_below(nbytes)),)
    return Finding(
        severity,
        nbytes,
        g.ex,
        node,
        summary,
        _fix(g, node, nbytes, fx),
        cost[0],
        cost[1],
        node.stage_ids,
        conf if by_threshold and threshold > DEFAULT_BROADCAST_THRESHOLD else (),
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag broadcasts too large for the driver and executors."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    found = flagged_nodes(
        app,
        lambda node: node.name == "BroadcastExchange",
        lambda g, node: _check(g, node, fx, params),
    )
    # one threshold for the next run: under the smallest broadcast the threshold let through
    conf = min((f.conf for f in found if f.conf), key=lambda c: float(c[0][1][:-2]), default=())
    return outcome(found, fx, "No broadcast too large for the driver and executors", size, conf)
