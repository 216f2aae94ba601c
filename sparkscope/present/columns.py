"""Finding details as people read them: column labels and units, and failure messages cut to the
line that names the error.

Heuristics return their details as plain tables keyed by snake_case column names with raw values
(``failed_tasks``, ``duration_ms`` 1587, ``severity`` 4, ``recovered`` False). ``COLUMNS`` declares
a label and a unit for each key, ``HEURISTIC_COLUMNS`` what one heuristic means differently (a
``ratio`` that is a share), and keys declared nowhere fall back on their suffix (``_ms``,
``_bytes``…), so a new heuristic reads well before anyone declares its columns. No database, no
Flask.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sparkscope.present.display import MISSING, fmt_unit, severity_style
from sparkscope.redaction import redact_text


@dataclass(frozen=True)
class Column:
    """How a details column is shown. Units are those of :func:`sparkscope.present.display.fmt_unit`, plus
    ``id`` (as written), ``message`` (root-cause line first, whole text on demand), ``text``, and
    ``by_metric`` (the unit of the metric named in the row's ``metric`` column)."""

    label: str
    unit: str = "auto"


#: Columns shared by the built-in heuristics, by key.
COLUMNS: dict[str, Column] = {
    "stage": Column("Stage", "id"),
    "attempt": Column("Attempt", "id"),
    "job": Column("Job", "id"),
    "executor": Column("Executor", "id"),
    "busiest_executor": Column("Busiest executor", "id"),
    "example_stage": Column("Example stage", "id"),
    "example_task": Column("Example task", "id"),
    "top_spill_task_id": Column("Top spilling task", "id"),
    "name": Column("Name", "text"),
    "cause": Column("Cause", "text"),
    "problem": Column("Problem", "text"),
    "setting": Column("Setting", "text"),
    "value": Column("Value", "text"),
    "mode": Column("Mode", "text"),
    "base": Column("Compared with", "text"),
    "source": Column("Source", "text"),
    "metric": Column("Metric", "metric"),
    "severity": Column("Severity", "severity"),
    "recovered": Column("Recovered", "bool"),
    "tasks": Column("Tasks", "count"),
    "executors": Column("Executors", "count"),
    "failed_tasks": Column("Failed tasks", "count"),
    "failed_stages": Column("Failed stages", "count"),
    "light_group_tasks": Column("Light group tasks", "count"),
    "heavy_group_tasks": Column("Heavy group tasks", "count"),
    "suggested_partitions": Column("Suggested partitions", "count"),
    "duration_ms": Column("Duration", "ms"),
    "gc_time_ms": Column("GC time", "ms"),
    "task_time_ms": Column("Task time", "ms"),
    "base_ms": Column("Base time", "ms"),
    "run_time_ms": Column("Run time", "ms"),
    "fetch_wait_ms": Column("Fetch wait", "ms"),
    "median_task_ms": Column("Median task", "ms"),
    "max_task_ms": Column("Longest task", "ms"),
    "input_bytes": Column("Input", "bytes"),
    "shuffle_read_bytes": Column("Shuffle read", "bytes"),
    "memory_bytes_spilled": Column("Spill (memory)", "bytes"),
    "disk_bytes_spilled": Column("Spill (disk)", "bytes"),
    "processed_bytes": Column("Processed", "bytes"),
    "top_spill_task_memory_bytes_spilled": Column("Its spill (memory)", "bytes"),
    "peak_jvm_heap_bytes": Column("Peak heap", "bytes"),
    "peak_jvm_offheap_bytes": Column("Peak off-heap", "bytes"),
    "peak_total_bytes": Column("Peak total", "bytes"),
    "reserved_bytes": Column("Memory + overhead", "bytes"),
    "suggested_bytes": Column("Suggested memory", "bytes"),
    "light_group_mean": Column("Light group mean", "by_metric"),
    "heavy_group_mean": Column("Heavy group mean", "by_metric"),
    "median": Column("Median", "by_metric"),
    "max": Column("Max", "by_metric"),
    "ratio": Column("Ratio", "times"),
    "gc_ratio": Column("GC share", "fraction"),
    "input_bytes_max_over_median": Column("Input max / median", "times"),
    "shuffle_read_bytes_max_over_median": Column("Shuffle read max / median", "times"),
    "query": Column("Query", "id"),
    "node": Column("Node", "id"),
    "operator": Column("Operator", "text"),
    "finding": Column("Finding", "text"),
    "fix": Column("Fix", "text"),
    "cost": Column("Cost", "text"),
    "stages": Column("Stages", "text"),
    "failure_reason": Column("Failure reason", "message"),
    "example_error": Column("Example error", "message"),
}

#: Where one heuristic means something else by a shared key.
HEURISTIC_COLUMNS: dict[str, dict[str, Column]] = {
    "executor_memory": {"ratio": Column("Peak / reserved", "fraction")},
    "shuffle_fetch_wait": {"ratio": Column("Wait share", "fraction")},
    "disk_spill": {"ratio": Column("Spill / processed", "times")},
    "stage_skew": {"ratio": Column("Max / median task", "times")},
    "executor_load_imbalance": {"ratio": Column("Max / median", "times")},
    "data_skew_groups": {"ratio": Column("Heavy / light", "times")},
}

#: Unit of each built-in heuristic's value (the number its severity is judged on).
VALUE_UNITS: dict[str, str] = {
    "stage_skew": "times",
    "data_skew_groups": "times",
    "disk_spill": "times",
    "executor_gc": "fraction",
    "driver_gc": "fraction",
    "job_failures": "fraction",
    "task_failures": "fraction",
    "stage_failures": "number",
    "executor_load_imbalance": "times",
    "executor_memory": "fraction",
    "task_granularity": "ms",
    "shuffle_fetch_wait": "fraction",
    "config": "count",
    "sql_smj_should_broadcast": "bytes",
    "sql_large_broadcast": "bytes",
    "sql_cross_join": "count",
    "sql_small_files_read": "count",
    "sql_small_files_written": "count",
    "sql_no_partition_pruning": "count",
    "sql_python_udf": "fraction",
    "sql_row_explosion": "times",
    "sql_repeated_scan": "count",
}


def finding_value(heuristic: str, value: object) -> str:
    """A finding's value in its heuristic's unit (as a plain number when undeclared)."""
    return fmt_unit(value, VALUE_UNITS.get(heuristic, "auto"))


_SUFFIX_UNITS = (
    ("_ms", "ms"),
    ("_ns", "ns"),
    ("_bytes", "bytes"),
    ("_hours", "hours"),
    ("ratio", "times"),
)


def column(heuristic: str, key: str) -> Column:
    """The declared column of ``heuristic`` for ``key``, or one derived from the key itself."""
    own = HEURISTIC_COLUMNS.get(heuristic, {}).get(key)
    if own is not None:
        return own
    shared = COLUMNS.get(key)
    if shared is not None:
        return shared
    return Column(key.replace("_", " ").strip().capitalize(), param_unit(key))


def param_unit(key: str) -> str:
    """Unit of a heuristic parameter, from its name's suffix (``min_stage_duration_ms`` -> ms)."""
    return next((u for suffix, u in _SUFFIX_UNITS if key.endswith(suffix)), "auto")


def metric_unit(metric: object) -> str:
    """Unit of a metric named by its column key (``task_time_ms`` -> ms)."""
    return column("", str(metric)).unit if isinstance(metric, str) else "auto"


@dataclass(frozen=True)
class Cell:
    """One shown value: its text, the whole message behind a cut one, and its severity level."""

    text: str
    full: str | None = None
    level: int | None = None
    numeric: bool = False


@dataclass(frozen=True)
class Table:
    """A details table ready to show: labels and formatted cells."""

    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


def cell(value: object, unit: str, row: Mapping[str, object] | None = None) -> Cell:
    """One value of a details table in its column's unit."""
    if value is None:
        return Cell(MISSING)
    if unit == "by_metric":
        unit = metric_unit((row or {}).get("metric"))
    if unit == "severity":
        level = value if isinstance(value, int) and not isinstance(value, bool) else None
        return Cell(severity_style(level).label, level=level)
    if unit == "message":
        text = redact_text(str(value)) or ""  # masked when stored; again, for older rows
        summary = root_cause(text)
        return Cell(summary, full=text if text.strip() != summary else None)
    if unit == "metric":
        return Cell(column("", str(value)).label)
    if unit in ("id", "text"):
        return Cell(str(value))
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if unit == "auto":
        unit = "bool" if isinstance(value, bool) else "number"
    return Cell(fmt_unit(value, unit), numeric=numeric)


def details_table(heuristic: str, details: object) -> Table | None:
    """A finding's details (``heuristics.result.Details`` or its JSON form ``{"columns": [...],
    "rows": [[...]]}``) with labels and units; None when there is no row."""
    if isinstance(details, Mapping):
        columns, raw_rows = details.get("columns") or (), details.get("rows") or ()
    else:
        columns, raw_rows = getattr(details, "columns", ()), getattr(details, "rows", ())
    if not raw_rows:
        return None
    keys = [str(k) for k in columns]
    cols = [column(heuristic, k) for k in keys]
    rows = []
    for raw in raw_rows:
        values = list(raw) if isinstance(raw, Sequence) and not isinstance(raw, str) else [raw]
        named = dict(zip(keys, values, strict=False))
        rows.append(tuple(cell(v, c.unit, named) for v, c in zip(values, cols, strict=False)))
    return Table(tuple(c.label for c in cols), tuple(rows))


# ------------------------------------------------------------------------------- root cause

_PY_TRACEBACK = "Traceback (most recent call last):"
_PY_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
_JAVA_FRAME = re.compile(r"^\s+(?:at |\.\.\. \d+ more)")
SUMMARY_CHARS = 300


def root_cause(message: str | None) -> str:
    """The line of an error message that names the real error.

    A Python traceback (as PySpark wraps it into a PythonException) ends with the exception line
    (``ValueError: invalid literal…``); a Java trace's innermost ``Caused by:`` names the cause;
    anything else keeps its first line.
    """
    if not message:
        return ""
    lines = [line.rstrip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    found: str | None = None
    start = next((i for i, line in enumerate(lines) if _PY_TRACEBACK in line), None)
    if start is not None:
        for line in lines[start + 1 :]:
            if _JAVA_FRAME.match(line):
                break  # the JVM frames that wrapped the Python error
            if line[0].isspace() or line.startswith(_PY_CHAIN) or _PY_TRACEBACK in line:
                continue
            found = line  # chained tracebacks: the last exception raised is the one reported
    if found is None:
        causes = [line.strip() for line in lines if line.lstrip().startswith("Caused by:")]
        if causes:
            found = causes[-1].removeprefix("Caused by:").strip()
    if found is None:
        found = lines[0].strip()
    return found if len(found) <= SUMMARY_CHARS else found[: SUMMARY_CHARS - 1] + "…"
