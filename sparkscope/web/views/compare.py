"""Compare two applications side by side."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from heuristics.registry import Registry
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.prediction.reads import prediction_line
from sparkscope.present.display import is_per_run_setting
from sparkscope.queries.compare import (
    Comparison,
    ConfigDiff,
    OtherRun,
    compare_apps,
    same_name_runs,
)
from sparkscope.queries.compare_stages import STAGE_FIGURES
from sparkscope.web.params import text
from sparkscope.web.request import (
    get_session,
    lookup,
    prices,
    redaction_regex,
    registry,
    stage_link,
)

bp = Blueprint("compare", __name__)


def split_per_run(config: list[ConfigDiff]) -> tuple[list[ConfigDiff], list[ConfigDiff]]:
    """The configuration rows worth reading, and the per-run settings (ids, times, ports) that
    differ on every run and are hidden."""
    kept = [d for d in config if not is_per_run_setting(d.key)]
    hidden = [d for d in config if is_per_run_setting(d.key) and d.status != "same"]
    return kept, hidden


def compared(
    left_id: str, right_id: str, reg: Registry, left: Application | None = None
) -> tuple[Comparison, list[ConfigDiff]]:
    """Both applications aligned (``left_server`` / ``right_server`` from the request; ``left``
    when the caller looked it up already), with the per-run settings split off the configuration
    rows: for the page and the API alike."""
    if left is None:
        left = lookup(left_id, text(request.args, "left_server", 200), None, "left_server")
    right = lookup(right_id, text(request.args, "right_server", 200), None, "right_server")
    comparison = compare_apps(get_session(), left, right, reg, redaction_regex(), prices())
    comparison.config, per_run = split_per_run(comparison.config)
    return comparison, per_run


#: Runs of the same name the picker offers.
PICKER_RUNS = 20
#: Stage pairs the page shows (the API gives them all).
STAGE_ROWS = 200


@bp.route("/compare")
def compare() -> str:
    """The chooser form, the runs of the left one's name to pick from, and both applications
    aligned when two ids are given."""
    left_id = text(request.args, "left", 255)
    right_id = text(request.args, "right", 255)
    reg = registry()[0]
    comparison = None
    per_run: list[ConfigDiff] = []
    others: list[OtherRun] = []
    left_app = None
    left_server = ""
    if left_id:
        left_app = lookup(left_id, text(request.args, "left_server", 200), None, "left_server")
        server_row = get_session().get(HistoryServer, left_app.server_id)
        left_server = server_row.name if server_row else ""
    if left_app is not None and right_id:
        comparison, per_run = compared(left_app.app_id, right_id, reg, left_app)
        others = same_name_runs(get_session(), left_app, PICKER_RUNS, comparison.left.previous)
    elif left_app is not None:
        others = same_name_runs(get_session(), left_app, PICKER_RUNS)
    lines = (
        (prediction_line(comparison.left_prediction), prediction_line(comparison.right_prediction))
        if comparison
        else (None, None)
    )
    return render_template(
        "compare/index.html",
        c=comparison,
        per_run=per_run,
        left_id=left_id or "",
        right_id=right_id or "",
        left_app=left_app,
        others=others,
        prediction_lines=lines,
        left_server_name=left_server,
        picker_limit=PICKER_RUNS,
        stage_href=stage_link,
        stage_figures=STAGE_FIGURES,
        stage_limit=STAGE_ROWS,
        currency=prices().currency,
    )
