"""Small files written: writes that produced many more files than their data needs.

**What it measures.** For every write that ran (a node with `number of written files`: insert
into a path or table, create-table-as-select), the files written beyond what the data needs:
`files - max(ceil(bytes / target), dynamic partitions written)` with the target
`spark.sql.files.maxPartitionBytes` (128 MB by default), counted when the mean file is under
`small_file_bytes`. Writes of one application into the same place are added up (a loop appending
small batches fills a table with small files as surely as one write does).

**Why it matters.** Spark writes one file per task and output partition: a write fed by a shuffle
of 1,200 partitions writes 1,200 files however little data there is, and a partitioned write of
200 tasks over 1,000 dates can write 200,000. Every reader of the data then pays for each file
(see the small-files-read check), and object stores and the Hive metastore slow down with the
file count.

**How to fix.** Write about `bytes / 128 MB` files: `df.coalesce(N).write...`; drop an
explicit `repartition(n)` before the write, or use the `/*+ REBALANCE */` hint so adaptive
execution sizes the partitions by `spark.sql.adaptive.advisoryPartitionSizeInBytes`; for a
partitioned write, `df.repartition(*partition_cols).write.partitionBy(*partition_cols)` gives
one file per output partition, with `spark.sql.files.maxRecordsPerFile` to cap big ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heuristics.appdata import AppData, SqlExecutionSummary, SqlPlanNode
from heuristics.builtin.sql.findings import (
    DEFAULT_MAX_PARTITION_BYTES,
    MIB,
    SQL_INPUTS,
    Facts,
    Finding,
    count,
    facts,
    label,
    no_sql,
    operator_cost,
    outcome,
    size,
)
from heuristics.builtin.sql.plan import PASS_THROUGH, Graph, graph, total
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.thresholds import Thresholds

NAME = "sql_small_files_written"
TITLE = "Small files written"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS


@dataclass(frozen=True)
class Params:
    """Parameters of the small-files-written check."""

    excess_files: Thresholds = param(
        Thresholds(100, 1_000, 10_000, 100_000),
        "files written beyond max(bytes / maxPartitionBytes, partitions written) (count; ascending)",
    )
    small_file_bytes: float = param(
        16.0 * MIB, "only writes whose mean file is under this count (bytes)"
    )


@dataclass
class _Write:
    execution: SqlExecutionSummary
    graph: Graph
    node: SqlPlanNode
    files: float
    bytes: float
    partitions: float
    shuffle_partitions: float | None
    repartition: bool


def _target(node: SqlPlanNode) -> str:
    args = node.detail.get("Arguments", "")
    first = args.split(",", 1)[0].strip()
    return first or node.name


def _write(g: Graph, node: SqlPlanNode) -> _Write | None:
    files = total(node, "number of written files")
    nbytes = total(node, "written output")
    if not files or nbytes is None:
        return None
    feeding = (
        g.descend(
            node.children[0],
            lambda n: n.name == "Exchange",
            lambda n: n.name.startswith((*PASS_THROUGH, "WriteFiles", "Sort")),
        )
        if node.children
        else None
    )
    args = feeding.detail.get("Arguments", "") if feeding is not None else ""
    return _Write(
        g.ex,
        g,
        node,
        files,
        nbytes,
        total(node, "number of dynamic part") or 0,
        total(feeding, "number of partitions") if feeding is not None else None,
        "REPARTITION_BY_NUM" in args,
    )


def _fix(w: _Write, n_files: int) -> str:
    if w.partitions:
        return (
            f"Repartition by the partition columns before the write "
            f"(df.repartition(*partition_cols).write.partitionBy(*partition_cols)) so each of the "
            f"{w.partitions:,.0f} partitions gets about one file; cap big ones with "
            "spark.sql.files.maxRecordsPerFile."
        )
    shuffle = ""
    if w.shuffle_partitions and w.shuffle_partitions >= 0.5 * w.files:
        what = "the explicit repartition" if w.repartition else "the shuffle"
        shuffle = (
            f" The write follows {what} into {w.shuffle_partitions:,.0f} partitions: "
            "drop it, or use the /*+ REBALANCE */ hint so adaptive execution sizes the files by "
            "spark.sql.adaptive.advisoryPartitionSizeInBytes."
        )
    return f"Write about {n_files:,} file(s): df.coalesce({n_files}).write... .{shuffle}"


def _finding(
    target: str, writes: list[_Write], fx: Facts, params: Params, limit: float
) -> Finding | None:
    files = sum(w.files for w in writes)
    nbytes = sum(w.bytes for w in writes)
    needed = max(1, math.ceil(nbytes / limit), int(max(w.partitions for w in writes)))
    excess = files - needed
    severity = params.excess_files.severity_of(excess)
    if nbytes / files >= params.small_file_bytes or severity == Severity.NONE:
        return None
    worst = max(writes, key=lambda w: w.files)
    costs = [operator_cost(fx, w.graph, w.node) for w in writes]
    cost_ms = sum(c for c, _ in costs if c) or None
    times = f"{len(writes)} writes" if len(writes) > 1 else "1 write"
    summary = (
        f"{times} to {target} ({label(worst.execution)}{' and others' if len(writes) > 1 else ''}): "
        f"{count(files)} files for {size(nbytes)} (mean {size(nbytes / files)} per file; "
        f"{needed:,} would do)"
    )
    stages = tuple(sorted({s for w in writes for s in w.node.stage_ids}))
    fix = _fix(worst, max(1, math.ceil(worst.bytes / limit)))
    return Finding(
        severity, excess, worst.execution, worst.node, summary, fix, cost_ms, costs[0][1], stages
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag writes of many small files (per target, over the application)."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    limit = fx.conf_bytes("spark.sql.files.maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES)
    limit = limit if limit > 0 else DEFAULT_MAX_PARTITION_BYTES
    by_target: dict[str, list[_Write]] = {}
    for ex in app.sql_executions:
        g = graph(ex)
        for node in g.ran():
            w = _write(g, node)
            if w is not None:
                by_target.setdefault(_target(node), []).append(w)
    found = [
        f
        for target, writes in by_target.items()
        if (f := _finding(target, writes, fx, params, limit)) is not None
    ]
    return outcome(found, fx, "No write of many small files")
