"""History of a recurring application: one metric over every run with the same name."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, request

from sparkscope.prediction.reads import history_band
from sparkscope.present.catalogs import HISTORY_METRICS, HISTORY_X
from sparkscope.present.charts import RunPoint, history_figure
from sparkscope.present.display import fmt_duration_ms, fmt_time_ms, severity_name
from sparkscope.queries.cache import cached, db_key
from sparkscope.queries.history import HistoryPoint, app_names, history, suggest_names
from sparkscope.web.filters import fmt_metric
from sparkscope.web.params import parse_choice, text
from sparkscope.web.request import app_link, get_session

bp = Blueprint("history", __name__)


def run_points(points: list[HistoryPoint], metric: str) -> list[RunPoint]:
    """History rows -> chart points with links and display text."""
    m = HISTORY_METRICS[metric]
    return [
        RunPoint(
            url=app_link(p.app_id, p.server, p.attempt_id),
            app_id=p.app_id,
            start_ms=p.start_time_ms,
            start_iso=fmt_time_ms(p.start_time_ms),
            duration_text=fmt_duration_ms(p.duration_ms),
            severity=severity_name(p.worst_severity),
            value=p.value,
            value_text=fmt_metric(p.value, m),
            input_bytes=p.input_bytes,
            executors=p.executors,
        )
        for p in points
    ]


@bp.route("/history")
def history_page() -> str:
    """Name chooser with suggestions, the chart against the chosen x, and the runs as a table;
    names like the one asked for when it has no run."""
    name = text(request.args, "name")
    server = text(request.args, "server", 200)
    metric = parse_choice(request.args, "metric", tuple(HISTORY_METRICS), "duration")
    x = parse_choice(request.args, "x", tuple(HISTORY_X), "start")
    session = get_session()
    points = history(session, name, metric, server) if name else []
    names = cached(
        ("app_names", db_key(session)),
        float(current_app.config.get("NAMES_CACHE_SECONDS", 60)),
        lambda: app_names(session),
    )
    figure = None
    if points:
        m = HISTORY_METRICS[metric]
        x_label, x_unit = HISTORY_X[x]
        figure = history_figure(run_points(points, metric), m.label, m.unit, x, x_label, x_unit)
    return render_template(
        "history/index.html",
        name=name or "",
        server=server or "",
        metric=metric,
        metrics=HISTORY_METRICS,
        points=points,
        figure=figure,
        x=x,
        x_choices=HISTORY_X,
        band=history_band(session, name, server, app_link) if points and name else None,
        names=names,
        suggestions=suggest_names(session, name, names) if name and not points else [],
    )
