"""Application page: metrics, findings, configuration, stages and executors."""

from __future__ import annotations

from functools import partial

from flask import Blueprint, abort, render_template, request

from sparkscope.prediction.reads import app_prediction, prediction_line, run_changes
from sparkscope.queries.detail import app_detail, app_metrics
from sparkscope.queries.sql import app_queries
from sparkscope.web.params import parse_choice, parse_int, text
from sparkscope.web.request import (
    get_session,
    lookup,
    prices,
    redaction_regex,
    registry,
    stage_link,
)
from sparkscope.web.views.stage import MAX_ID, render_stage
from sparkscope.web.views.timeline import render_timeline

bp = Blueprint("detail", __name__)

# A few hundred rows is what a person reads; thousands of stages stay one click away (?stages=all),
# in pages by id (&stage_page=N) no longer than the default view, so that no page renders
# thousands of rows (2,000 stages on one page took 150 ms at best, most of it escaping).
STAGE_LIMIT = 200
STAGE_PAGE = STAGE_LIMIT


@bp.route("/apps/", defaults={"app_id": None})
@bp.route("/apps/<app_id:app_id>", merge_slashes=False)
def app_page(app_id: str | None) -> str:
    """One application, analysed with the heuristics config in force."""
    if app_id is None:
        # /apps/?app_id=..: ids a browser would resolve away as a path segment.
        app_id = text(request.args, "app_id", 255)
        if app_id is None:
            abort(404, description="no application id given")
        if "stage" in request.args:
            # /apps/?app_id=..&stage=N&stage_attempt=M: a stage of an id that is only dots.
            stage = parse_int(request.args, "stage", 0, 0, MAX_ID)
            return render_stage(
                app_id, stage, parse_int(request.args, "stage_attempt", 0, 0, MAX_ID)
            )
        if "timeline" in request.args:
            # /apps/?app_id=..&timeline=1: the timeline of an id that is only dots.
            return render_timeline(app_id)
    server = text(request.args, "server", 200)
    attempt = text(request.args, "attempt", 64)
    all_stages = parse_choice(request.args, "stages", ("longest", "all"), "longest") == "all"
    stage_page = parse_int(request.args, "stage_page", 1, 1, 10_000_000)
    findings_sort = parse_choice(request.args, "findings_sort", ("severity", "impact"), "severity")
    query = parse_int(request.args, "query", -1, 0, 2**62) if "query" in request.args else None
    app = lookup(app_id, server, attempt)
    reg = registry()[0]
    detail = app_detail(
        get_session(),
        app,
        reg,
        redaction_regex(),
        findings_sort=findings_sort,
        prices=prices(),
        stage_limit=STAGE_PAGE if all_stages else STAGE_LIMIT,
        stage_offset=(stage_page - 1) * STAGE_PAGE if all_stages else None,
    )
    prediction = app_prediction(get_session(), app.id)
    return render_template(
        "detail/app.html",
        d=detail,
        sql=app_queries(get_session(), app.id, detail.findings, query),
        currency=prices().currency,
        findings_sort=findings_sort,
        stage_page=stage_page if all_stages else None,
        stage_page_size=STAGE_PAGE,
        metrics=app_metrics(app),
        titles={e.name: e.title for e in reg.entries},
        prediction=prediction_line(prediction),
        prediction_verdict=prediction.verdict if prediction else None,
        changes=run_changes(get_session(), prediction),
        stage_href=partial(stage_link, app.app_id, detail.server.name, app.attempt_id or ""),
    )
