"""Plain data -> Plotly figures (as JSON-able dicts). No database, no Flask."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.present.display import SEVERITIES, UNKNOWN, axis_scale

#: Marker colour per severity name, from the one presentation vocabulary.
SEVERITY_COLORS: dict[str, str] = {s.name: s.color for s in (*SEVERITIES, UNKNOWN)}


@dataclass(frozen=True)
class RunPoint:
    """One run on the history chart; `url` opens it when the point is clicked."""

    url: str
    app_id: str
    start_ms: int
    start_iso: str
    duration_text: str
    severity: str
    value: float | None
    value_text: str
    input_bytes: int | None = None
    executors: int | None = None


def plotly_date(epoch_ms: float) -> str:
    # Plotly.js parses "YYYY-MM-DD HH:MM:SS.fff" as a date but not an ISO string ending in "Z".
    # Written field by field: strftime costs several times more, a thousand times a page.
    s = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.UTC)
    return (
        f"{s.year:04d}-{s.month:02d}-{s.day:02d} "
        f"{s.hour:02d}:{s.minute:02d}:{s.second:02d}.{s.microsecond // 1000:03d}"
    )


def history_figure(
    points: Sequence[RunPoint],
    metric_label: str,
    unit: str,
    x: str = "start",
    x_label: str = "start time",
    x_unit: str = "date",
) -> dict[str, Any]:
    """One metric of every run against ``x`` (``start``: a scatter+line over time; ``input`` or
    ``executors``: a scatter against that size, runs without it left out), one trace per
    severity, clickable via customdata, titled "<metric> by <x label>".

    Built as Plotly's figure JSON directly: plotly.graph_objects validates every property and
    costs ~100 ms for a thousand points, more than the rest of the page.
    """
    scale, unit_label = axis_scale(unit, [p.value for p in points if p.value is not None])

    def ys(chosen: Sequence[RunPoint]) -> list[float | None]:
        return [None if p.value is None else p.value / scale for p in chosen]

    if x == "start":
        dates = {p.start_ms: plotly_date(p.start_ms) for p in points}  # each date written once

        def xs(chosen: Sequence[RunPoint]) -> list[Any]:
            return [dates[p.start_ms] for p in chosen]

        x_axis: dict[str, Any] = {"title": {"text": "start (UTC)"}, "type": "date"}
        x_hover = ""
        # A faint line through every run keeps the trend visible across the severity traces.
        data: list[dict[str, Any]] = [
            {
                "type": "scatter",
                "mode": "lines",
                "x": xs(points),
                "y": ys(points),
                "line": {"color": "#b0bec5", "width": 1},
                "hoverinfo": "skip",
                "showlegend": False,
            }
        ]
    else:
        field = "input_bytes" if x == "input" else "executors"
        points = [p for p in points if getattr(p, field) is not None]
        x_scale, x_unit_label = axis_scale(x_unit, [float(getattr(p, field)) for p in points])

        def xs(chosen: Sequence[RunPoint]) -> list[Any]:
            return [getattr(p, field) / x_scale for p in chosen]

        named_x = x_label if not x_unit_label else f"{x_label} ({x_unit_label})"
        x_hover = f"<br>{x_label}: %{{x:,.3~f}} {x_unit_label}".rstrip()
        x_axis = {"title": {"text": named_x}, "rangemode": "tozero"}
        data = []
    x_axis["gridcolor"] = "#eceff1"
    for severity, color in SEVERITY_COLORS.items():
        chosen = [p for p in points if p.severity == severity]
        if not chosen:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": severity,
                "x": xs(chosen),
                "y": ys(chosen),
                "marker": {"color": color, "size": 9, "line": {"color": "#fff", "width": 1}},
                "customdata": [
                    [p.url, p.app_id, p.start_iso, p.duration_text, p.severity, p.value_text]
                    for p in chosen
                ],
                "hovertemplate": (
                    "<b>%{customdata[1]}</b><br>start %{customdata[2]}<br>"
                    "duration %{customdata[3]}<br>severity %{customdata[4]}<br>"
                    f"{metric_label}: %{{customdata[5]}}{x_hover}<extra></extra>"
                ),
            }
        )
    # "Wasted core-hours", not "Wasted core-hours (core-hours)".
    named = not unit_label or metric_label.endswith(unit_label)
    title = metric_label if named else f"{metric_label} ({unit_label})"
    layout = {
        "title": {"text": f"{metric_label} by {x_label}", "x": 0, "xanchor": "left"},
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "height": 420,
        "xaxis": x_axis,
        "yaxis": {"title": {"text": title}, "rangemode": "tozero", "gridcolor": "#eceff1"},
        "legend": {"title": {"text": "worst severity"}},
        "hovermode": "closest",
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
    }
    return {"data": data, "layout": layout}
