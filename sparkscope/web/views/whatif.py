"""What-if and sizing API: /api/apps/<app_id>/whatif and /api/advise.

Both read stored data and the calibration stored at fetch time; they simulate on request
(no model is fitted here). Missing data answers 422 with the reason, bad parameters 400 naming
the parameter -- also a size or input beyond what the stored runs support
(:mod:`sparkscope.advisor.whatif.limits`) -- and a simulation that outlives the request's time
budget (``WHATIF_BUDGET_SECONDS``, 2 s) 503.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, abort, current_app, jsonify, request

from sparkscope.advisor.whatif.limits import (
    DEFAULT_BUDGET_S,
    BudgetExceeded,
    LimitExceeded,
    time_budget,
)
from sparkscope.advisor.whatif.sizing import parse_counts, parse_deadline, parse_positive
from sparkscope.queries.cache import cached, db_key
from sparkscope.web.params import bad, text
from sparkscope.web.request import get_session, lookup, prices, raw_path
from sparkscope.whatif.answers import NoHistory, advise, app_whatif
from sparkscope.whatif.inputs import WhatIfUnavailable

bp = Blueprint("whatif", __name__, url_prefix="/api")

DEFAULT_EXECUTORS = "1,2,3,4,6,8,12,16"


def _param(name: str, parse: Any, *args: Any) -> Any:
    try:
        return parse(*args)
    except ValueError as exc:
        raise bad(name, str(exc)) from None


def _unavailable(exc: Exception) -> Response:
    resp = jsonify(error="Unprocessable Entity", message=str(exc), status=422)
    resp.status_code = 422
    return resp


def _bounded(compute: Callable[[], Any]) -> Any:
    """Run a what-if under the request's time budget; a limit passed answers 400 naming the
    parameter, a budget run out 503."""
    seconds = float(current_app.config.get("WHATIF_BUDGET_SECONDS", DEFAULT_BUDGET_S))
    try:
        with time_budget(seconds):
            return compute()
    except LimitExceeded as exc:
        raise bad(exc.param, str(exc)) from None
    except BudgetExceeded as exc:
        abort(503, description=str(exc))


@bp.route("/whatif", defaults={"app_id": None})
@bp.route("/apps/<app_id:app_id>/whatif", merge_slashes=False)
def whatif(app_id: str | None) -> Response:
    """Predicted duration, band and cost of an application at other executor counts (any id
    also as ``/api/whatif?app_id=``)."""
    if app_id is None:
        app_id = text(request.args, "app_id", 255)
        if app_id is None:
            abort(404, description="no application id given")
    else:
        raw = raw_path()
        if raw is not None and not raw.endswith("/whatif"):
            # The client asked /api/apps/x%2Fwhatif: the JSON of the application "x/whatif".
            from sparkscope.web.views.api import app as app_json

            return app_json(f"{app_id}/whatif")
    executors = _param(
        "executors", parse_counts, text(request.args, "executors", 2000) or DEFAULT_EXECUTORS
    )
    cores = _param("cores", parse_positive, request.args.get("cores"), "core count", True)
    if cores is not None and cores > 1024:
        raise bad("cores", "at most 1024")
    scale = _param("input_scale", parse_positive, request.args.get("input_scale"), "scale")
    if scale is not None and scale > 1000:
        raise bad("input_scale", "at most 1000")
    app = lookup(app_id, text(request.args, "server", 200), text(request.args, "attempt", 64))
    session = get_session()
    patterns = current_app.config["SPARKSCOPE"].predictions.key_patterns
    key = ("whatif", db_key(session), app.id, app.fetched_at_ms, tuple(executors), cores, scale)
    try:
        body = cached(
            key,
            float(current_app.config.get("WHATIF_CACHE_SECONDS", 60)),
            lambda: _bounded(
                lambda: app_whatif(session, app, executors, cores, scale, prices(), patterns)
            ),
        )
    except WhatIfUnavailable as exc:
        return _unavailable(exc)
    return jsonify(body)


@bp.route("/advise")
def advise_route() -> Response:
    """The cheapest executor count whose predicted upper bound meets a deadline."""
    name = text(request.args, "name")
    if name is None:
        abort(400, description="invalid parameter 'name': required")
    deadline = _param("deadline", parse_deadline, request.args.get("deadline"))
    input_bytes = _param(
        "input_bytes", parse_positive, request.args.get("input_bytes"), "byte count", True
    )
    raw_sizes = text(request.args, "executors", 2000)
    sizes = _param("executors", parse_counts, raw_sizes) if raw_sizes else None
    raw_cores = text(request.args, "cores", 2000)
    core_counts = _param("cores", parse_counts, raw_cores, "core count") if raw_cores else None
    if core_counts is not None and (len(core_counts) > 8 or core_counts[-1] > 1024):
        raise bad("cores", "at most 8 core counts, each at most 1024")
    server = text(request.args, "server", 200)
    try:
        patterns = current_app.config["SPARKSCOPE"].predictions.key_patterns
        body = _bounded(
            lambda: advise(
                get_session(),
                name,
                deadline,
                input_bytes,
                sizes,
                server,
                prices(),
                core_counts,
                patterns,
            )
        )
    except NoHistory as exc:
        abort(404, description=str(exc))
    except WhatIfUnavailable as exc:
        return _unavailable(exc)
    return jsonify(body)
