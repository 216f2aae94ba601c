"""Compare two applications side by side."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from sparkscope.queries.compare import compare_apps
from sparkscope.views.common import currency, lookup, prices, redaction_regex, registry
from sparkscope.views.params import text
from sparkscope.web import get_session

bp = Blueprint("compare", __name__)


@bp.route("/compare")
def compare() -> str:
    """The chooser form, and both applications aligned when two ids are given."""
    left_id = text(request.args, "left", 255)
    right_id = text(request.args, "right", 255)
    reg, config_error = registry()
    comparison = None
    if left_id and right_id:
        left = lookup(left_id, text(request.args, "left_server", 200), None, "left_server")
        right = lookup(right_id, text(request.args, "right_server", 200), None, "right_server")
        comparison = compare_apps(get_session(), left, right, reg, redaction_regex(), prices())
    return render_template(
        "compare/index.html",
        c=comparison,
        left_id=left_id or "",
        right_id=right_id or "",
        config_error=config_error,
        currency=currency(),
    )
