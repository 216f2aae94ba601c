"""What-if and sizing answers in plain words, and their charts.

Pure: the JSON shapes of :mod:`sparkscope.whatif.answers` in, sentences and Plotly figures out.
A size reads "4 executors of 1 core" and comes with the settings that ask for it
(``spark.executor.instances=4``, ``spark.executor.cores=1``; under dynamic allocation the most
executors, ``spark.dynamicAllocation.maxExecutors``). A prediction's interval reads "likely
38–47 s" wherever the points have one, and no band is drawn where they have none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparkscope.present.display import fmt_duration_ms, fmt_hours, fmt_money

#: Nominal level of the what-if interval (sparkscope.advisor.whatif.calibrate.INTERVAL_LEVEL).
INTERVAL_WORDS = "likely"


def plural(n: int, word: str) -> str:
    """``1 executor``, ``4 executors``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def size_words(executors: int, cores: int) -> str:
    """``4 executors of 1 core``."""
    return f"{plural(int(executors), 'executor')} of {plural(int(cores), 'core')}"


def size_conf(executors: int, cores: int, dynamic: bool = False) -> list[tuple[str, str]]:
    """The settings of a size, in ``--conf`` order."""
    count = "spark.dynamicAllocation.maxExecutors" if dynamic else "spark.executor.instances"
    return [(count, str(int(executors))), ("spark.executor.cores", str(int(cores)))]


def fmt_deadline(ms: float | None) -> str:
    """A deadline as exactly as it was asked: ``90 s``, ``30 min``, ``2 h`` (not ``1.5 min``)."""
    if ms is None:
        return ""
    value = int(ms)
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if value >= size and value % size == 0:
            return f"{value // size:,} {unit}"
    return fmt_duration_ms(value) if value >= 1000 else f"{value} ms"


def has_interval(points: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any point has a band around its prediction."""
    return any(p["high_ms"] > p["low_ms"] for p in points)


def interval_words(p: Mapping[str, Any]) -> str:
    """``likely 38 s–47 s``, or "" when the point has no interval."""
    if p["high_ms"] <= p["low_ms"]:
        return ""
    return f"{INTERVAL_WORDS} {fmt_duration_ms(p['low_ms'])}–{fmt_duration_ms(p['high_ms'])}"


def cost_words(p: Mapping[str, Any], currency: str = "") -> str:
    """``0.098 core-hours`` (and the money when priced)."""
    text = f"{fmt_hours(p['core_hours'])} core-hours"
    if p.get("cost") is not None:
        text += f", {fmt_money(p['cost'], currency)}"
    return text


def point_sentence(p: Mapping[str, Any], currency: str = "") -> str:
    """``predicted 42 s (likely 38 s–47 s), 0.098 core-hours``."""
    band = interval_words(p)
    text = f"predicted {fmt_duration_ms(p['predicted_ms'])}"
    if band:
        text += f" ({band})"
    return f"{text}, {cost_words(p, currency)}"


def fastest(points: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The point predicted to finish first (the cheaper one among equals)."""
    if not points:
        return None
    return min(points, key=lambda p: (p["predicted_ms"], p["core_hours"]))


def cheapest(points: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The point that costs least (money when priced, else core-hours; the faster among equals)."""
    if not points:
        return None

    def price(p: Mapping[str, Any]) -> float:
        return float(p["cost"] if p.get("cost") is not None else p["core_hours"])

    return min(points, key=lambda p: (round(price(p), 9), p["predicted_ms"]))


def duration_figure(
    series: Sequence[tuple[str, Sequence[Mapping[str, Any]], bool]],
    observed: Mapping[str, Any] | None = None,
    recommended: Mapping[str, Any] | None = None,
    deadline_ms: float | None = None,
    cost_series: Sequence[Mapping[str, Any]] | None = None,
    currency: str | None = None,
    x_title: str = "executors",
) -> dict[str, Any]:
    """Predicted duration against the executor count, one line per core count (``series``:
    (label, points, with its band)), the band drawn where the points have one; the cost of
    ``cost_series`` on a second axis; the observed run, the recommendation and the deadline
    marked."""
    data: list[dict[str, Any]] = []
    colours = ("#1f77b4", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
    for n, (label, points, band) in enumerate(series):
        colour = colours[n % len(colours)]
        xs = [p["executors"] for p in points]
        if band and has_interval(points):
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": xs,
                    "y": [p["low_ms"] / 1000 for p in points],
                    "line": {"width": 0},
                    "hoverinfo": "skip",
                    "showlegend": False,
                }
            )
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{label}: {INTERVAL_WORDS} range",
                    "x": xs,
                    "y": [p["high_ms"] / 1000 for p in points],
                    "fill": "tonexty",
                    "fillcolor": "rgba(31,119,180,0.15)",
                    "line": {"width": 0},
                    "hoverinfo": "skip",
                }
            )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{label}: predicted",
                "x": xs,
                "y": [p["predicted_ms"] / 1000 for p in points],
                "line": {"color": colour, "width": 2.5 if band else 1.5},
                "hovertemplate": "%{x} executors: %{y:.1f} s<extra></extra>",
            }
        )
    if cost_series:
        priced = currency is not None and any(p.get("cost") is not None for p in cost_series)
        key = "cost" if priced else "core_hours"
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"cost ({currency})" if priced else "core-hours",
                "x": [p["executors"] for p in cost_series],
                "y": [p[key] for p in cost_series],
                "yaxis": "y2",
                "line": {"color": "#ff7f0e", "dash": "dot"},
            }
        )
    if observed and observed.get("duration_ms") is not None:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "this run",
                "x": [observed["executors"]],
                "y": [observed["duration_ms"] / 1000],
                "marker": {"symbol": "star", "size": 14, "color": "#2ca02c"},
            }
        )
    if recommended:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "recommended",
                "x": [recommended["executors"]],
                "y": [recommended["predicted_ms"] / 1000],
                "marker": {"symbol": "diamond", "size": 14, "color": "#d62728"},
            }
        )
    shapes = []
    if deadline_ms:
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": deadline_ms / 1000,
                "y1": deadline_ms / 1000,
                "line": {"color": "#d62728", "dash": "dash"},
            }
        )
    layout: dict[str, Any] = {
        "margin": {"t": 20, "r": 70, "b": 60, "l": 60},
        "height": 420,
        "xaxis": {"title": {"text": x_title}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "duration (s)"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.2},
        "shapes": shapes,
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
    }
    if cost_series:
        title = next((d["name"] for d in data if d.get("yaxis") == "y2"), "core-hours")
        layout["yaxis2"] = {
            "title": {"text": title},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
        }
    return {"data": data, "layout": layout}


def cores_label(cores: int) -> str:
    """``2 cores each``: the legend of one core count's line (executors on the x axis)."""
    return f"{plural(int(cores), 'core')} each"
