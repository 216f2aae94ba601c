"""Small files read: a file scan that opened many more files than its data needs.

**What it measures.** For every file scan that ran (`Scan parquet`, `Scan orc`, ...), the
files it read beyond what its bytes need: `files - max(ceil(bytes / target), partitions read)`,
where the target is `spark.sql.files.maxPartitionBytes` (128 MB by default) and a partitioned
table needs at least one file per partition read. Only scans whose mean file is under
`small_file_bytes` count.

**Why it matters.** Every file costs a listing entry, an open, a footer read and a task split;
Spark itself charges 4 MB (`spark.sql.files.openCostInBytes`) per file when it packs files into
tasks, so a file under 16 MiB spends a fifth or more of its read on overhead. Thousands of tiny
files turn a seconds-long scan into minutes of metadata work on the driver and the storage.

**How to fix.** Compact the data into files near the target size: rewrite it once with
`spark.read.parquet(path).coalesce(N).write.mode("overwrite").parquet(new_path)` (N =
bytes / 128 MB), or use the table format's compaction (Delta `OPTIMIZE`, Iceberg
`rewrite_data_files`); then fix the job that writes it (see the small-files-written check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.builtin.sql.findings import (
    DEFAULT_MAX_PARTITION_BYTES,
    MIB,
    SQL_INPUTS,
    Finding,
    count,
    facts,
    label,
    no_sql,
    operator_cost,
    outcome,
    size,
)
from heuristics.builtin.sql.plan import graph, total
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.thresholds import Thresholds

NAME = "sql_small_files_read"
TITLE = "Small files read"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS


@dataclass(frozen=True)
class Params:
    """Parameters of the small-files-read check."""

    excess_files: Thresholds = param(
        Thresholds(100, 1_000, 10_000, 100_000),
        "files read beyond max(bytes / maxPartitionBytes, partitions read) (count; ascending)",
    )
    small_file_bytes: float = param(
        16.0 * MIB, "only scans whose mean file is under this count (bytes)"
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag scans that read many small files."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    target = fx.conf_bytes("spark.sql.files.maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES)
    target = target if target > 0 else DEFAULT_MAX_PARTITION_BYTES
    found = []
    for ex in app.sql_executions:
        g = graph(ex)
        for node, scan in g.ran_scans():
            if not scan.files or scan.bytes is None:
                continue
            mean = scan.bytes / scan.files
            needed = max(1, math.ceil(scan.bytes / target), int(scan.partitions or 0))
            excess = scan.files - needed
            severity = params.excess_files.severity_of(excess)
            if mean >= params.small_file_bytes or severity == Severity.NONE:
                continue
            own = (scan.scan_time_ms or 0) + (total(node, "metadata time") or 0)
            cost = operator_cost(fx, g, node, own or None)
            fix = (
                f"Compact {scan.location} into about {needed:,} file(s) near "
                f"{size(min(target, scan.bytes / needed))} each: rewrite it once with "
                f".coalesce({needed}) (or OPTIMIZE / rewrite_data_files for Delta or Iceberg), "
                "then make its writer write fewer, larger files."
            )
            summary = (
                f"{node.name} of {scan.location} in {label(ex)}: {count(scan.files)} files for "
                f"{size(scan.bytes)} (mean {size(mean)} per file; {needed:,} would do)"
            )
            found.append(
                Finding(severity, excess, ex, node, summary, fix, cost[0], cost[1], node.stage_ids)
            )
    return outcome(found, fx, "No scan of many small files")
