"""Search: filters in the URL, one compact table of results a page, sortable by impact, waste,
duration, severity and time; every filter in force shown above the results."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Blueprint, current_app, render_template, request, url_for
from sqlalchemy import select

from sparkscope.db import now_ms
from sparkscope.models.fetch import HistoryServer
from sparkscope.queries.search import SearchFilters, search_apps
from sparkscope.web.params import SEARCH_PARAMS, SINCE_MS, VERDICTS, parse_search
from sparkscope.web.request import get_session, registry

bp = Blueprint("search", __name__)

#: How each search parameter reads in the list of filters in force.
FILTER_LABELS = {
    "app_id": "application id",
    "name": "name contains",
    "user": "user",
    "queue": "queue",
    "server": "server",
    "start_from": "started from",
    "start_to": "started until",
    "end_from": "ended from",
    "end_to": "ended until",
    "since": "started in the last",
    "severity": "severity",
    "heuristic": "finding",
    "verdict": "verdict",
}
SINCE_WORDS = {"1h": "hour", "1d": "day", "7d": "week", "30d": "month"}
VERDICT_WORDS = {
    "regression": "regression (slower than expected)",
    "improvement": "improvement (faster than expected)",
    "normal": "normal",
    "insufficient_history": "no verdict yet (too few earlier runs)",
}
assert set(VERDICT_WORDS) == set(VERDICTS)


def active_filters(
    args: Mapping[str, str], filters: SearchFilters, titles: Mapping[str, str]
) -> list[tuple[str, str, str]]:
    """(label, value, URL without it) of every filter in force, in the form's order."""
    kept = {k: v for k, v in args.items() if k in SEARCH_PARAMS and v and k != "page"}
    out = []
    for key, label in FILTER_LABELS.items():
        value = (kept.get(key) or "").strip()
        if not value:
            continue
        shown = value
        if key == "since":
            shown = SINCE_WORDS.get(value, value)
        elif key == "severity":
            exact = filters.exact_severity is not None
            shown = f"{'exactly' if exact else 'at least'} {value.lower()}"
        elif key == "heuristic":
            shown = titles.get(value, value)
        elif key == "verdict":
            shown = VERDICT_WORDS.get(value, value)
        rest = {k: v for k, v in kept.items() if k != key}
        if key == "severity":
            rest.pop("severity_mode", None)
        out.append((label, shown, url_for("search.search", **rest)))  # type: ignore[arg-type]
    return out


@bp.route("/search")
def search() -> str:
    """The search form, the filters in force and one page of results."""
    reg = registry()[0]
    names = tuple(e.name for e in reg.entries)
    titles = {e.name: e.title for e in reg.entries}
    per_page = current_app.config.get("PAGE_SIZE", 50)
    filters = parse_search(request.args, now_ms(), names, per_page)
    session = get_session()
    page = search_apps(session, filters, per_page)
    # Current query minus paging and quick range, to build the paging, sort and quick-range links.
    base_args = {k: v for k, v in request.args.items() if k in SEARCH_PARAMS and v and k != "page"}
    servers = session.scalars(select(HistoryServer.name).order_by(HistoryServer.name)).all()
    return render_template(
        "search/index.html",
        filters=filters,
        page=page,
        args=request.args,
        base_args=base_args,
        heuristic_names=names,
        titles=titles,
        servers=servers,
        verdicts=VERDICT_WORDS,
        active=active_filters(request.args, filters, titles),
        since_options=tuple(SINCE_MS),
    )
