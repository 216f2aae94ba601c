"""Dashboard: what is stored, how it went, and what wasted the most."""

from __future__ import annotations

import datetime as dt

from flask import Blueprint, current_app, render_template, request

from sparkscope.db import now_ms
from sparkscope.prediction.reads import regressions_panel
from sparkscope.queries.cache import cached, db_key
from sparkscope.queries.dashboard import dashboard
from sparkscope.web.params import parse_int
from sparkscope.web.request import get_session, prices

bp = Blueprint("dashboard", __name__)

#: Regressions listed per period (the search links list them all).
REGRESSIONS = 20
DAY_MS = 86_400_000


def fmt_iso_ms(epoch_ms: int) -> str:
    """Epoch ms as the ISO date-time search's date parameters read (UTC, to the millisecond)."""
    stamp = dt.datetime.fromtimestamp(epoch_ms / 1000, tz=dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


@bp.route("/")
def index() -> str:
    """The landing page."""
    days = parse_int(request.args, "days", 7, 1, 3650)
    session = get_session()
    # Fleet-wide aggregates scan much of the table; a minute-old view is fine for a dashboard.
    ttl_s = float(current_app.config.get("DASHBOARD_CACHE_SECONDS", 60))
    data = cached(
        ("dashboard", db_key(session), days),
        ttl_s,
        lambda: dashboard(session, now_ms(), days=days),
    )
    return render_template(
        "dashboard/index.html",
        d=data,
        app_count=data.totals["applications"],
        core_hour_price=prices().core_hour,
        currency=prices().currency,
        regressions=regressions_panel(session, now_ms(), REGRESSIONS),
        regressions_limit=REGRESSIONS,
        # The waste tables' links list the period the figures add up (its start, to the ms).
        period_start=fmt_iso_ms(now_ms() - days * DAY_MS),
    )
