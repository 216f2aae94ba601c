"""Search: filters in the URL, 50 results a page."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, request

from sparkscope.db import now_ms
from sparkscope.queries.search import search_apps
from sparkscope.web.params import SEARCH_PARAMS, SINCE_MS, parse_search
from sparkscope.web.request import get_session, registry

bp = Blueprint("search", __name__)


@bp.route("/search")
def search() -> str:
    """The search form and one page of results."""
    reg = registry()[0]
    names = tuple(e.name for e in reg.entries)
    per_page = current_app.config.get("PAGE_SIZE", 50)
    filters = parse_search(request.args, now_ms(), names, per_page)
    page = search_apps(get_session(), filters, per_page)
    # Current query minus paging and quick range, to build the paging, sort and quick-range links.
    base_args = {k: v for k, v in request.args.items() if k in SEARCH_PARAMS and v and k != "page"}
    return render_template(
        "search/index.html",
        filters=filters,
        page=page,
        args=request.args,
        base_args=base_args,
        heuristic_names=names,
        since_options=tuple(SINCE_MS),
    )
