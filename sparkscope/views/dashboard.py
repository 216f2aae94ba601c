"""Dashboard: what is stored, how it went, and what wasted the most."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from sparkscope.app import get_session
from sparkscope.db import now_ms
from sparkscope.queries import dashboard
from sparkscope.views.params import parse_int

bp = Blueprint("dashboard", __name__)


@bp.route("/")
def index() -> str:
    """The landing page."""
    days = parse_int(request.args, "days", 7, 1, 3650)
    data = dashboard(get_session(), now_ms(), days=days)
    return render_template("dashboard/index.html", d=data, app_count=data.totals["applications"])
