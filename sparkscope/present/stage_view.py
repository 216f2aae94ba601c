"""The stage page's task distributions: units of the stored metric names, the table of values and
the Plotly figures (plain data in, JSON-able dicts out; no database, no Flask)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.present.display import (
    axis_scale,
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_duration_ns,
)

#: The metrics drawn first and their labels; other stored metrics follow by name.
LABELS: dict[str, str] = {
    "duration_ms": "duration",
    "executor_run_time_ms": "run time",
    "executor_cpu_time_ns": "CPU time",
    "jvm_gc_time_ms": "GC",
    "scheduler_delay_ms": "scheduler delay",
    "shuffle_fetch_wait_ms": "shuffle fetch wait",
    "executor_deserialize_time_ms": "deserialize",
    "input_bytes": "input",
    "shuffle_read_bytes": "shuffle read",
    "shuffle_write_bytes": "shuffle write",
    "memory_bytes_spilled": "spill (memory)",
    "disk_bytes_spilled": "spill (disk)",
    "peak_execution_memory_bytes": "peak execution memory",
    "input_records": "input records",
    "shuffle_read_records": "shuffle records read",
}
#: Quantiles the table shows as columns (of the 21-point grid); the chart draws all.
TABLE_QUANTILES = (0.0, 0.25, 0.5, 0.75, 0.95, 1.0)


def metric_unit(name: str) -> str:
    """The unit a stored distribution name carries: ``ms``, ``ns``, ``bytes`` or ``count``."""
    if name.endswith("_ms"):
        return "ms"
    if name.endswith("_ns"):
        return "ns"
    if name.endswith("_bytes") or name.endswith("_spilled"):
        return "bytes"
    return "count"


def fmt_metric_value(name: str, value: float | None) -> str:
    """One distribution value written in its unit."""
    unit = metric_unit(name)
    if unit == "ms":
        return fmt_duration_ms(value)
    if unit == "ns":
        return fmt_duration_ns(value)
    if unit == "bytes":
        return fmt_bytes(value)
    return fmt_count(value)


def label_of(name: str) -> str:
    """A metric's label (its stored name spaced, without its unit, when it has none)."""
    if name in LABELS:
        return LABELS[name]
    for suffix in ("_ms", "_ns", "_bytes"):
        name = name.removesuffix(suffix)
    return name.replace("_", " ")


@dataclass(frozen=True)
class DistributionRow:
    """One metric of the table: its name, label and values at :data:`TABLE_QUANTILES`."""

    name: str
    label: str
    cells: tuple[str, ...]
    #: max / median (None when the median is 0): how lopsided the tasks were.
    spread: float | None


def ordered(metrics: Mapping[str, Sequence[float]]) -> list[str]:
    """Metric names, the labelled ones first in :data:`LABELS` order, then the rest by name;
    metrics that are zero at every quantile left out."""
    names = [n for n in metrics if any(v for v in metrics[n])]
    known = [n for n in LABELS if n in names]
    return known + sorted(n for n in names if n not in LABELS)


def table_columns(quantiles: Sequence[float]) -> list[tuple[int, str]]:
    """(index in the grid, header) of the quantiles the table shows that the grid has."""
    out = []
    for q in TABLE_QUANTILES:
        idx = next((i for i, g in enumerate(quantiles) if abs(g - q) < 1e-9), None)
        if idx is not None:
            header = {0.0: "min", 0.5: "median", 1.0: "max"}.get(q, f"p{round(q * 100)}")
            out.append((idx, header))
    return out


def distribution_rows(
    quantiles: Sequence[float], metrics: Mapping[str, Sequence[float]]
) -> list[DistributionRow]:
    """The table of the stored distributions, one row per metric."""
    columns = table_columns(quantiles)
    mid = next((i for i, g in enumerate(quantiles) if abs(g - 0.5) < 1e-9), None)
    rows = []
    for name in ordered(metrics):
        values = list(metrics[name])
        if len(values) != len(quantiles):
            continue
        cells = tuple(fmt_metric_value(name, values[i]) for i, _ in columns)
        median = values[mid] if mid is not None else 0.0
        spread = values[-1] / median if median else None
        rows.append(DistributionRow(name, label_of(name), cells, spread))
    return rows


def distribution_figures(
    quantiles: Sequence[float], metrics: Mapping[str, Sequence[float]]
) -> list[dict[str, Any]]:
    """One line chart per unit (times, then bytes, then counts): value at each quantile of the
    stage's tasks, one trace per metric."""
    xs = [round(q * 100, 2) for q in quantiles]
    figures = []
    for unit, title in (("ms", "time"), ("bytes", "size"), ("count", "records")):
        names = [
            n
            for n in ordered(metrics)
            if len(metrics[n]) == len(quantiles)
            and (metric_unit(n) == unit or (unit == "ms" and metric_unit(n) == "ns"))
        ]
        if not names:
            continue
        as_ms = [[v / 1e6 if metric_unit(n) == "ns" else v for v in metrics[n]] for n in names]
        scale, label = axis_scale(
            "ms" if unit == "ms" else unit, [v for series in as_ms for v in series]
        )
        data = [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label_of(n),
                "x": xs,
                "y": [v / scale for v in series],
                "text": [fmt_metric_value(n, v) for v in metrics[n]],
                "hovertemplate": f"{label_of(n)} p%{{x}}: %{{text}}<extra></extra>",
            }
            for n, series in zip(names, as_ms, strict=True)
        ]
        layout = {
            "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
            "height": 340,
            "xaxis": {"title": {"text": "tasks at or below (percentile)"}, "range": [0, 100]},
            "yaxis": {
                "title": {"text": f"{title} ({label})" if label else title},
                "rangemode": "tozero",
                "gridcolor": "#eceff1",
            },
            "hovermode": "closest",
            "plot_bgcolor": "#fff",
            "paper_bgcolor": "#fff",
        }
        figures.append({"id": unit, "data": data, "layout": layout})
    return figures


#: Task status codes of the event-log task times (sparkscope.models.eventlog.STATUS_CODES).
STATUS_NAMES = {0: "success", 1: "failed", 2: "killed", 3: "other"}
STATUS_COLORS = {0: "#546e7a", 1: "#c62828", 2: "#ef6c00", 3: "#8e24aa"}


def _task_text(columns: Mapping[str, Sequence[int]], executors: Sequence[str], i: int) -> str:
    ex = columns["executor"][i]
    # Plotly reads a few HTML tags in hover text: another person's executor id is escaped.
    name = html.escape(executors[ex]) if 0 <= ex < len(executors) else "?"
    task, part = columns["task_id"][i], columns["index"][i]
    return f"task {task} (partition {part}) on executor {name}: {fmt_duration_ms(columns['duration_ms'][i])}"


def task_times_figure(
    columns: Mapping[str, Sequence[int]], executors: Sequence[str]
) -> dict[str, Any]:
    """Every task of a stage attempt (from its event log): launch (seconds after the first task)
    against duration, one trace per status; a task's executor in its hover text."""
    launch = columns["launch_offset_ms"]
    duration = columns["duration_ms"]
    status = columns["status"]
    scale, label = axis_scale("ms", [float(d) for d in duration if d >= 0])
    data = []
    for code, name in STATUS_NAMES.items():
        idx = [i for i, s in enumerate(status) if s == code]
        if not idx:
            continue
        data.append(
            {
                "type": "scattergl" if len(idx) > 2000 else "scatter",
                "mode": "markers",
                "name": name,
                "x": [launch[i] / 1000 for i in idx],
                "y": [max(duration[i], 0) / scale for i in idx],
                "marker": {"color": STATUS_COLORS[code], "size": 5},
                "text": [_task_text(columns, executors, i) for i in idx],
                "hovertemplate": "%{text}<extra></extra>",
            }
        )
    layout = {
        "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
        "height": 340,
        "xaxis": {
            "title": {"text": "launched (seconds after the first task)"},
            "rangemode": "tozero",
        },
        "yaxis": {
            "title": {"text": f"duration ({label})"},
            "rangemode": "tozero",
            "gridcolor": "#eceff1",
        },
        "hovermode": "closest",
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
    }
    return {"id": "tasks", "data": data, "layout": layout}
