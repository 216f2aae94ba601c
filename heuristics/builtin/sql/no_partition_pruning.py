"""No partition pruning: a scan of a partitioned table that read every partition although the query
filters on the partition column (or on a time column the partitions follow).

**What it measures.** For every scan of a partitioned table that ran with no partition filter
(the plan's `PartitionFilters` line absent, or only `isnotnull`; scans pruned at run time by
dynamic partition pruning are left alone), the number of partitions it read. The partition columns
are the scan's output columns that are not read from the files (`Output` minus `ReadSchema`).
A scan is flagged only with evidence that the query wanted fewer partitions:

- `expression`: a filter right above the scan mentions a partition column, yet it did not become
  a partition filter: the column is in an `OR` with a data column, compared with a data column,
  or the argument of a Python UDF (Spark prunes with any other expression over partition columns
  alone, functions and casts included, evaluating it on the partition values);
- `correlated`: the query filters a date or timestamp data column (`event_ts`) while a
  partition column is named like a date (`event_date`, `dt`, `day`, ...): the partitions
  follow the time the query asks for, but Spark only prunes on the partition column itself.

Scans filtered only on other data columns are not flagged: reading every partition is then what
the query asks for.

**Why it matters.** Partitioning exists so that a query for one day reads one day: without
pruning, the scan lists, opens and reads every partition, N times the I/O and tasks of the data
the query keeps.

**How to fix.** Filter the partition column directly, against constants:
`WHERE event_date = DATE'2024-06-15'` (keep the finer `event_ts` condition for exactness);
replace a Python UDF over the partition column by built-in functions (which Spark evaluates on the
partition values to prune); split an `OR` that mixes a partition column with a data column into a
`UNION` of two queries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heuristics.appdata import AppData
from heuristics.builtin.sql.findings import (
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
from heuristics.builtin.sql.plan import Graph, Scan, graph, strip_attr_ids
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.thresholds import Thresholds

NAME = "sql_no_partition_pruning"
TITLE = "No partition pruning"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS

_TEMPORAL_TYPES = ("timestamp", "date")
_ABOVE_SCAN = ("Filter", "ColumnarToRow", "Project", "InputAdapter")
# a Python UDF in a filter is evaluated by one of these below the Filter, which then reads its
# result (pythonUDF0#...): the UDF's arguments are what the filter is about
_PYTHON_EVAL = ("BatchEvalPython", "ArrowEvalPython")


@dataclass(frozen=True)
class Params:
    """Parameters of the no-partition-pruning check."""

    partitions: Thresholds = param(
        Thresholds(2, 10, 100, 1_000),
        "partitions read by a scan that should have pruned (count; ascending)",
    )
    date_like_words: str = param(
        "date,day,dt,ds,month,year,hour,week,period,time",
        "a partition column is date-like when a word of its name is one of these, or (from 3 "
        "letters) starts or ends with one (comma-separated)",
    )


def date_like(column: str, words: tuple[str, ...]) -> bool:
    """``event_date``, ``dt``, ``eventDate``, ``day_id``: a word of the name is a date word."""
    for token in re.split(r"[^a-z0-9]+", column.lower()):
        for w in words:
            if token == w or (len(w) >= 3 and (token.startswith(w) or token.endswith(w))):
                return True
    return False


def _filter_columns(filters: tuple[str, ...]) -> set[str]:
    """Columns of pushed filters such as `GreaterThan(event_ts,2024-06-15)`."""
    cols: set[str] = set()
    for f in filters:
        if f.lower().startswith("isnotnull"):
            continue
        m = re.match(r"^\w+\(([^,()]+)", f)
        if m:
            cols.add(m.group(1).strip("` "))
    return cols


def _condition_columns(cond: str) -> set[str]:
    """Columns a Filter condition compares (`isnotnull` conjuncts left out)."""
    cols: set[str] = set()
    for part in re.split(r"\bAND\b", cond):
        if "isnotnull(" in part.lower() and not re.search(r"[<>=]| IN |LIKE", part):
            continue
        cols.update(m.group(1) for m in re.finditer(r"([A-Za-z_]\w*)#\d+", part))
    return cols


def _conditions_above(g: Graph, scan: Scan) -> list[str]:
    """The conditions of the filters right above a scan (a Python UDF's call in its place)."""
    conds: list[str] = []
    udf_calls: list[str] = []
    cur = scan.node
    for _ in range(8):
        parent = g.parent(cur)
        if parent is None:
            break
        cur = parent
        if cur.name.startswith(_PYTHON_EVAL):
            udf_calls.append(cur.detail.get("Arguments", "").split("], [")[0])
            continue
        if cur.name == "Filter":
            cond = cur.detail.get("Condition", "")
            conds.append(cond)
            if "pythonUDF" in cond:
                conds.extend(udf_calls)
        if not cur.name.startswith(_ABOVE_SCAN):
            break
    return conds


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag scans of partitioned tables that read every partition against the query's filter."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    words = tuple(w.strip().lower() for w in params.date_like_words.split(",") if w.strip())
    found = []
    for ex in app.sql_executions:
        g = graph(ex)
        for node, scan in g.ran_scans():
            if (scan.partitions or 0) < 2 or not scan.partition_columns:
                continue  # (the partition count first: the columns are read from the plan)
            pf = scan.partition_filters or ()
            if any(not f.lower().startswith("isnotnull") for f in pf):
                continue  # pruned (statically, or at run time by dynamic partition pruning)
            parts = set(scan.partition_columns)
            conds = _conditions_above(g, scan)
            cond_cols = set().union(*map(_condition_columns, conds)) if conds else set()
            data_cols = (
                cond_cols | _filter_columns(scan.pushed_filters + scan.data_filters)
            ) - parts
            on_partition = sorted(cond_cols & parts)
            dated_data = sorted(
                c
                for c in data_cols
                if scan.read_columns.get(c, "").lower().startswith(_TEMPORAL_TYPES)
            )
            dated_parts = sorted(c for c in parts if date_like(c, words))
            if on_partition:
                reason, pcol = "expression", on_partition[0]
            elif dated_data and dated_parts:
                reason, pcol = "correlated", dated_parts[0]
            else:
                continue
            severity = params.partitions.severity_of(scan.partitions)
            if severity == Severity.NONE:
                continue
            if reason == "expression":
                why = f"the filter on {pcol} is an expression Spark cannot prune with"
                fix = (
                    f"Filter {pcol} on its own: built-in functions of {pcol} against constants "
                    f"(e.g. {pcol} = DATE'2024-06-15' or {pcol} BETWEEN ... AND ...), not a Python "
                    f"UDF, not an OR with a data column (split it into a UNION of two queries): only "
                    f"predicates over partition columns alone prune partitions."
                )
            else:
                dcol = dated_data[0]
                why = f"it filters {dcol} while the partitions follow {pcol}"
                fix = (
                    f"Also filter the partition column: add {pcol} = <the day(s) of the {dcol} "
                    f"range> (e.g. .where(F.col('{pcol}') == '2024-06-15')) and keep the {dcol} "
                    f"condition; Spark prunes only on predicates over {pcol}."
                )
            cost = operator_cost(fx, g, node, scan.scan_time_ms)
            shown = "; ".join(strip_attr_ids(c)[:120] for c in conds) or ", ".join(
                scan.pushed_filters
            )
            summary = (
                f"{node.name} of {scan.location} in {label(ex)}: all {count(scan.partitions)} "
                f"partitions read ({count(scan.files)} files, {size(scan.bytes)}), no partition "
                f"filter; {why} (filter: {shown[:200]})"
            )
            found.append(
                Finding(
                    severity,
                    float(scan.partitions or 0),
                    ex,
                    node,
                    summary,
                    fix,
                    cost[0],
                    cost[1],
                    node.stage_ids,
                )
            )
    return outcome(found, fx, "No scan of a partitioned table that should have pruned")
