"""Stage page: one stage attempt of an application, its task distributions, slowest and failed
tasks, per-executor summary, findings and SQL queries."""

from __future__ import annotations

from flask import Blueprint, abort, render_template, request

from sparkscope.present.stage_view import (
    distribution_figures,
    distribution_rows,
    table_columns,
    task_times_figure,
)
from sparkscope.queries.errors import NotFoundError
from sparkscope.queries.stage import stage_detail
from sparkscope.web.params import text
from sparkscope.web.request import get_session, lookup, registry

bp = Blueprint("stage", __name__)

#: Stage and attempt ids are Spark's ints; anything larger is no stage of ours.
MAX_ID = 2**31 - 1


@bp.route("/apps/<app_id:app_id>/stages/<int:stage_id>/<int:attempt_id>", merge_slashes=False)
def stage_page(app_id: str, stage_id: int, attempt_id: int) -> str:
    """One stage attempt of one application."""
    return render_stage(app_id, stage_id, attempt_id)


def render_stage(app_id: str, stage_id: int, attempt_id: int) -> str:
    """The stage page of ``app_id`` (server and attempt pinned by the query string), or 404."""
    if stage_id > MAX_ID or attempt_id > MAX_ID:
        abort(404, description="no such stage")
    app = lookup(app_id, text(request.args, "server", 200), text(request.args, "attempt", 64))
    reg, _error = registry()
    try:
        d = stage_detail(get_session(), app, reg, stage_id, attempt_id)
    except NotFoundError as exc:
        abort(404, description=str(exc))
    times = d.task_times
    return render_template(
        "stage/index.html",
        d=d,
        columns=[h for _i, h in table_columns(d.quantiles)],
        rows=distribution_rows(d.quantiles, d.metrics),
        figures=distribution_figures(d.quantiles, d.metrics),
        times_figure=task_times_figure(times.tasks.columns, times.tasks.executors)
        if times is not None and len(times.tasks)
        else None,
        titles={e.name: e.title for e in reg.entries},
    )
