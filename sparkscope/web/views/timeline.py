"""Timeline page: an application's allocated and busy task slots over its life, with its jobs and
stage attempts on the same time axis, and the idle capacity, serial tail and longest gap."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from sparkscope.accounting.timeline import TAIL_SHARE, TAIL_SLOTS
from sparkscope.present.timeline_view import method_sentence, summary_sentences, timeline_figure
from sparkscope.queries.timeline import stage_start_ms, timeline_detail
from sparkscope.web.params import text
from sparkscope.web.request import get_session, lookup, stage_links

bp = Blueprint("timeline", __name__)


@bp.route("/apps/<app_id:app_id>/timeline", merge_slashes=False)
def timeline_page(app_id: str) -> str:
    """The timeline of one application."""
    return render_timeline(app_id)


def render_timeline(app_id: str) -> str:
    """The timeline page of ``app_id`` (server and attempt pinned by the query string), or 404."""
    app = lookup(app_id, text(request.args, "server", 200), text(request.args, "attempt", 64))
    d = timeline_detail(get_session(), app)
    href = stage_links(app.app_id, d.server.name, app.attempt_id or "")
    return render_template(
        "timeline/index.html",
        d=d,
        sentences=summary_sentences(d.slots, TAIL_SLOTS, TAIL_SHARE),
        method=method_sentence(d.slots),
        figure=timeline_figure(d.slots, d.jobs, d.stages, stage_start_ms, href),
    )
