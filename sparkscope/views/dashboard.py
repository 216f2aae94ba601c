"""Dashboard: what is stored and how it went."""

from __future__ import annotations

from flask import Blueprint, render_template
from sqlalchemy import func, select

from sparkscope.app import get_session
from sparkscope.models import Application

bp = Blueprint("dashboard", __name__)


@bp.route("/")
def index() -> str:
    """The landing page."""
    count = get_session().scalar(select(func.count()).select_from(Application)) or 0
    return render_template("dashboard/index.html", app_count=count)
