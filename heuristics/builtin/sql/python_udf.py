"""Python UDF: row-at-a-time Python user-defined functions taking much of a query's time.

**What it measures.** For every BatchEvalPython (and BatchEvalPythonUDTF) operator that ran, the
share of its query's task time spent in the Python workers: its `time to run Python workers`
(Spark 4.0 and later) over the task time of the stages the query ran. Arrow-based operators
(ArrowEvalPython, MapInPandas, FlatMapGroupsInPandas, ...) are the recommended path and never
flagged. Servers before 4.0 report no Python time: the UDF stage's whole task time is then an
upper bound, and the finding stays LOW. A query that failed stays LOW too: its timings are those
of an unfinished run, and the failure checks report the failure.

**Why it matters.** A row-at-a-time UDF makes Spark serialise every row to a Python worker
process, run the function once per row in the interpreter and serialise the result back: typically
tens to hundreds of times slower than the same logic as a built-in column expression, and it
blocks code generation around it.

**How to fix.** Replace the UDF with built-in functions (`pyspark.sql.functions`: `lower`,
`trim`, `regexp_replace`, `split`, `when`, `to_date` ...); where Python is really needed,
vectorise it: `@pandas_udf("string") def f(s: pd.Series) -> pd.Series: ...`, or on Spark 3.5+
`@udf(useArrow=True)` / `spark.sql.execution.pythonUDF.arrow.enabled=true`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heuristics.appdata import AppData, SqlPlanNode
from heuristics.builtin.sql.findings import (
    SQL_INPUTS,
    Finding,
    count,
    facts,
    label,
    no_sql,
    outcome,
)
from heuristics.builtin.sql.plan import graph, split_list, total
from heuristics.params import param
from heuristics.result import Outcome, Severity
from heuristics.sparkconf import version_tuple
from heuristics.stats import fmt_ms
from heuristics.thresholds import Thresholds

NAME = "sql_python_udf"
TITLE = "Row-at-a-time Python UDF"
#: Bump when what this heuristic computes changes: only its stored results are redone.
VERSION = 1
INPUTS = SQL_INPUTS

_ROW_AT_A_TIME = ("BatchEvalPython", "BatchEvalPythonUDTF")
ARROW_UDF = "spark.sql.execution.pythonUDF.arrow.enabled"


@dataclass(frozen=True)
class Params:
    """Parameters of the Python UDF check."""

    share: Thresholds = param(
        Thresholds(0.10, 0.25, 0.50, 0.75),
        "time in row-at-a-time Python workers / the query's task time (ratio; ascending)",
    )


def _udf_names(node: SqlPlanNode) -> list[str]:
    args = node.detail.get("Arguments", "")
    first = args.split("], [")[0] + "]" if args.startswith("[") else ""
    names = []
    for item in split_list(first):
        m = re.match(r"([A-Za-z_][\w.]*)\(", item)
        if m:
            names.append(m.group(1))
    return names


def _fix(name: str) -> str:
    return (
        f"Replace {name} with built-in column functions (pyspark.sql.functions: lower, trim, "
        "regexp_replace, split, when, ...); where Python is needed, vectorise it: "
        f"@pandas_udf('string') def {name}(s: pd.Series) -> pd.Series: ..., or on Spark 3.5+ "
        "@udf(useArrow=True) / spark.sql.execution.pythonUDF.arrow.enabled=true."
    )


def evaluate(app: AppData, params: Params) -> Outcome:
    """Flag row-at-a-time Python UDFs that take much of their query's time."""
    empty = no_sql(app)
    if empty is not None:
        return empty
    fx = facts(app)
    # Spark 3.5 runs Python UDFs through Arrow with one setting (the UDFs' code stays the same)
    version = version_tuple(app.spark_version)
    arrow = (ARROW_UDF, "true") if version is None or version >= (3, 5) else None
    arrow_conf = (arrow,) if arrow is not None else ()
    found = []
    for ex in app.sql_executions:
        g = graph(ex)
        for node in g.operators():
            if node.name.split(" ")[0] not in _ROW_AT_A_TIME or node.in_cached_plan:
                continue
            python_ms = total(node, "time to run Python workers")
            upper_bound = python_ms is None
            if python_ms is None:
                python_ms = fx.stage_time_ms(node.stage_ids) if node.stage_ids else None
            query_ms = fx.execution_task_ms(ex) or (ex.duration_ms or 0) * fx.cores
            if not python_ms or not query_ms:
                continue
            share = min(1.0, python_ms / query_ms)
            severity = params.share.severity_of(share)
            if severity == Severity.NONE:
                continue
            failed = ex.status == "FAILED" or bool(ex.failed_job_ids)
            if upper_bound or failed:
                severity = min(severity, Severity.LOW)
            names = _udf_names(node)
            basis = (
                "the UDF stage's task time (no Python timing before Spark 4.0: an upper bound)"
                if upper_bound
                else "time to run Python workers (summed over tasks)"
            )
            summary = (
                f"{node.name} ({', '.join(names) or 'a Python UDF'}) in {label(ex)}: "
                f"{fmt_ms(python_ms)} in Python workers over {count(total(node, 'number of output rows'))} "
                f"rows, {share:.0%} of the query's task time"
                + (" (the query failed)" if failed else "")
            )
            fix = _fix(names[0] if names else "the UDF")
            found.append(
                Finding(
                    severity,
                    share,
                    ex,
                    node,
                    summary,
                    fix,
                    python_ms,
                    basis,
                    node.stage_ids,
                    arrow_conf,
                )
            )
    return outcome(
        found, fx, "No row-at-a-time Python UDF taking much of a query's time", "{:.0%}".format
    )
