"""Repeated scan: the same table or files read many times in one application without caching.

**What it measures.** How many file scans that ran read the same data (the same table or paths
with the same partition filters), over all the application's queries; scans of less than
`min_scan_bytes` (dimension lookups) do not count, nor reads of a cached relation
(InMemoryTableScan). The severity comes from the scans by queries that read nothing else (one-table
aggregations, which one cached DataFrame or one combined pass replaces outright); scans that are
part of multi-table queries show the pattern at LOW, since caching only one input of a join saves
a smaller part of its work.

**Why it matters.** Each scan lists the files, reads and decompresses them and decodes the
columns again: five KPI queries over the same table read it five times. Twice is common (a check
and the job); from three reads on, reading once pays.

**How to fix.** Read it once and keep it: `sales = spark.read.parquet(path).cache()` (or
`.persist(StorageLevel.MEMORY_AND_DISK)`), run the queries on `sales`, then
`sales.unpersist()`; or compute the figures in one pass: one `groupBy().agg(...)` with several
aggregates, or `GROUPING SETS` / `ROLLUP` for several groupings.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuristics.appdata import AppData, SqlExecutionSummary
from heuristics.builtin.sql.findings import (
    MIB,
    SQL_INPUTS,
    Finding,
    facts,
    no_sql,
    outcome,
    size,
)
from heuristics.builtin.sql.plan import Scan, graph, strip_attr_ids
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.thresholds import Thresholds

NAME = "sql_repeated_scan"
TITLE = "Repeated scan without caching"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS


@dataclass(frozen=True)
class Params:
    """Parameters of the repeated-scan check."""

    scans: Thresholds = param(
        Thresholds(3, 5, 10, 25),
        "scans of the same data by queries that read nothing else (count; ascending)",
    )
    min_scan_bytes: float = param(1.0 * MIB, "scans reading less than this do not count (bytes)")


def _key(scan: Scan) -> str:
    filters = sorted(
        strip_attr_ids(f)
        for f in scan.partition_filters or ()
        if not f.lower().startswith("isnotnull")
    )
    return scan.location_key + "|" + ";".join(filters)


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag data scanned many times by the application's queries."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    groups: dict[str, list[tuple[SqlExecutionSummary, Scan]]] = {}
    sources: dict[int, set[str]] = {}
    for ex in app.sql_executions:
        g = graph(ex)
        for _, scan in g.ran_scans():
            if scan.bytes is None:
                continue
            sources.setdefault(ex.execution_id, set()).add(scan.location_key)
            if scan.bytes >= params.min_scan_bytes:
                groups.setdefault(_key(scan), []).append((ex, scan))
    found = []
    for scans in groups.values():
        alone = [s for s in scans if len(sources.get(s[0].execution_id, ())) == 1]
        severity = params.scans.severity_of(len(alone))
        if severity == Severity.NONE and params.scans.severity_of(len(scans)) > Severity.NONE:
            severity = Severity.LOW
        if severity == Severity.NONE:
            continue
        first_ex, first = scans[0]
        queries = sorted({ex.execution_id for ex, _ in scans})
        read = sum(s.bytes or 0 for _, s in scans)
        repeat_ms = [s.scan_time_ms for _, s in scans[1:] if s.scan_time_ms]
        if repeat_ms:
            cost_ms, basis = sum(repeat_ms), "scan time of the repeated scans (summed over tasks)"
        else:
            cost_ms = float(sum((ex.duration_ms or 0) for ex, _ in scans[1:])) * fx.cores
            basis = "the repeating queries' duration x task slots"
        name = (first.table or first.location.rstrip("/").split("/")[-1] or "df").replace(".", "_")
        fix = (
            f"Read {first.location} once: {name} = spark.read...({first.location!r}).cache(), run "
            f"the {len(scans)} queries on {name}, then {name}.unpersist(); or compute the figures "
            "in one pass (one groupBy().agg(...) with several aggregates, or GROUPING SETS)."
        )
        summary = (
            f"{first.location} scanned {len(scans)} times ({size(read)} in total) by queries "
            f"{', '.join(map(str, queries[:12]))}{' ...' if len(queries) > 12 else ''} without "
            f"caching; {len(alone)} of them read nothing else"
        )
        stages = tuple(sorted({st for _, s in scans for st in s.node.stage_ids}))
        found.append(
            Finding(
                severity,
                float(len(scans)),
                first_ex,
                first.node,
                summary,
                fix,
                cost_ms or None,
                basis,
                stages,
            )
        )
    return outcome(found, fx, "No data scanned many times without caching")
