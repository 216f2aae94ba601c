"""Help pages: one per heuristic, with its current thresholds."""

from __future__ import annotations

from flask import Blueprint, abort, render_template

from sparkscope.present.display import one_line
from sparkscope.web.request import registry

bp = Blueprint("help", __name__)


@bp.route("/help")
@bp.route("/help/")
def index() -> str:
    """Every heuristic with its one-line title."""
    reg = registry()[0]
    items = [
        {**item, "summary": one_line(str(item["doc"]), str(item["title"]))}
        for item in reg.describe()
    ]
    return render_template("help/index.html", items=items)


@bp.route("/help/<heuristic>")
def heuristic_page(heuristic: str) -> str:
    """What the heuristic measures, why it matters, how to fix it, and its thresholds now."""
    reg = registry()[0]
    for item in reg.describe():
        if item["name"] == heuristic:
            return render_template("help/heuristic.html", h=item)
    abort(404, description=f"no heuristic named {heuristic!r}")
