"""Application page: metrics, findings, configuration, stages and executors."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from sparkscope.prediction_views import app_prediction, prediction_line
from sparkscope.queries import app_detail, app_metrics
from sparkscope.views.common import currency, lookup, prices, redaction_regex, registry
from sparkscope.views.params import parse_choice, text
from sparkscope.web import get_session

bp = Blueprint("detail", __name__)

# A few hundred rows is what a person reads; thousands of stages stay one click away (?stages=all).
STAGE_LIMIT = 200


@bp.route("/apps/<path:app_id>")
def app_page(app_id: str) -> str:
    """One application, analysed with the heuristics config in force."""
    server = text(request.args, "server", 200)
    attempt = text(request.args, "attempt", 64)
    all_stages = parse_choice(request.args, "stages", ("longest", "all"), "longest") == "all"
    findings_sort = parse_choice(request.args, "findings_sort", ("severity", "impact"), "severity")
    app = lookup(app_id, server, attempt)
    reg, config_error = registry()
    detail = app_detail(
        get_session(),
        app,
        reg,
        redaction_regex(),
        findings_sort=findings_sort,
        prices=prices(),
        stage_limit=None if all_stages else STAGE_LIMIT,
    )
    return render_template(
        "detail/app.html",
        d=detail,
        config_error=config_error,
        currency=currency(),
        findings_sort=findings_sort,
        metrics=app_metrics(app),
        titles={e.name: e.module.TITLE for e in reg.entries},
        prediction=prediction_line(app_prediction(get_session(), app.id)),
    )
