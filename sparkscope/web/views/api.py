"""JSON API: /api/apps, /api/apps/<app_id>, /api/compare, /api/history, /api/forecast."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, current_app, jsonify, request

from heuristics.result import HeuristicResult
from sparkscope.analysis.scoring import ensure_analyzed
from sparkscope.db import now_ms
from sparkscope.prediction.forecasts import NoForecast, next_run
from sparkscope.prediction.reads import (
    app_prediction,
    forecast_json,
    history_predictions,
    prediction_json,
)
from sparkscope.present.catalogs import APP_METRICS, HISTORY_METRICS
from sparkscope.present.columns import details_table
from sparkscope.present.display import fmt_time_ms, severity_name
from sparkscope.queries.compare_stages import STAGE_FIGURES, ComparedStage, StagePair
from sparkscope.queries.detail import AppDetail
from sparkscope.queries.detail import app_detail as load_detail
from sparkscope.queries.history import history
from sparkscope.queries.search import AppRow, search_apps
from sparkscope.queries.sql_api import DEFAULT_LENGTH, MAX_LENGTH, sql_document
from sparkscope.redaction import redact_json
from sparkscope.web.params import parse_choice, parse_int, parse_search, text
from sparkscope.web.request import app_link, get_session, lookup, prices, redaction_regex, registry
from sparkscope.web.views.compare import compared

bp = Blueprint("api", __name__, url_prefix="/api")


def _time(ms: int | None) -> str | None:
    return None if ms is None else fmt_time_ms(ms)


def row_json(r: AppRow) -> dict[str, Any]:
    """A search result as JSON."""
    return {
        "app_id": r.app_id,
        "attempt_id": r.attempt_id or None,
        "server": r.server,
        "name": r.name,
        "user": r.user,
        "queue": r.queue,
        "start_time": _time(r.start_time_ms),
        "end_time": _time(r.end_time_ms),
        "start_time_ms": r.start_time_ms,
        "end_time_ms": r.end_time_ms,
        "duration_ms": r.duration_ms,
        "worst_severity": severity_name(r.worst_severity),
        "impact_core_hours": r.impact_core_hours,
        "wasted_core_hours": r.wasted_core_hours,
        "url": app_link(r.app_id, r.server, r.attempt_id),
        "findings": [
            {"heuristic": b.heuristic, "severity": severity_name(b.severity), "title": b.title}
            for b in r.badges
        ],
    }


def finding_json(f: HeuristicResult) -> dict[str, Any]:
    """A finding as JSON: the stored result with the severity as its name."""
    data = f.to_dict()
    return {
        "heuristic": f.name,
        "severity": severity_name(int(f.severity)),
        "severity_level": int(f.severity),
        "title": f.title,
        "value": data["value"],
        "details": redact_json(data["details"]),  # texts masked when stored; again, for older rows
        "details_display": _details_display(f),
        "advice": f.advice,
        "thresholds": data["thresholds"],
        "impact": data["impact"],
    }


def _details_display(f: HeuristicResult) -> dict[str, Any] | None:
    # The details as the page shows them: labels, values in their units, root-cause lines.
    table = details_table(f.name, f.details)
    if table is None:
        return None
    return {"columns": list(table.headers), "rows": [[c.text for c in row] for row in table.rows]}


def detail_json(d: AppDetail) -> dict[str, Any]:
    """One application with metrics, key config, findings and resources."""
    a = d.app
    return {
        "app_id": a.app_id,
        "attempt_id": a.attempt_id or None,
        "server": d.server.name,
        "name": a.name,
        "user": a.spark_user,
        "queue": a.queue,
        "spark_version": a.spark_version,
        "start_time": _time(a.start_time_ms),
        "end_time": _time(a.end_time_ms),
        "start_time_ms": a.start_time_ms,
        "end_time_ms": a.end_time_ms,
        "duration_ms": a.duration_ms,
        "completed": a.completed,
        "worst_severity": severity_name(a.worst_severity),
        "shs_url": d.shs_url,
        "metrics": {m.key: getattr(a, m.key) for m in APP_METRICS},
        "key_config": dict(d.key_config),
        "verdict": None
        if d.verdict is None
        else {
            "heuristic": d.verdict.heuristic,
            "severity": severity_name(d.verdict.severity),
            "title": d.verdict.title,
            "cost": d.verdict.cost,
            "fix": d.verdict.fix,
            "conf": [list(pair) for pair in d.verdict.conf],
        },
        "findings": [finding_json(f) for f in d.findings],
        "suggested_conf": [
            {"key": c.key, "value": c.value, "heuristics": list(c.heuristics)} for c in d.conf
        ],
        "resources": d.resources,
        "previous_run": None
        if d.previous is None
        else {"app_id": d.previous.app_id, "attempt_id": d.previous.attempt_id or None},
    }


@bp.route("/apps")
def apps() -> Response:
    """Search with the same parameters as /search; returns total and one page of apps."""
    reg, error = registry()
    per_page = current_app.config.get("PAGE_SIZE", 50)
    filters = parse_search(request.args, now_ms(), tuple(e.name for e in reg.entries), per_page)
    page = search_apps(get_session(), filters, per_page)
    return jsonify(
        total=page.total,
        total_exact=page.total_exact,
        page=page.page,
        per_page=page.per_page,
        pages=page.pages,
        apps=[row_json(r) for r in page.rows],
        heuristics_config_error=error,
    )


@bp.route("/apps/", defaults={"app_id": None})
@bp.route("/apps/<app_id:app_id>", merge_slashes=False)
def app(app_id: str | None) -> Response:
    """One application (use ?server= when the id exists on several servers); any id also as
    ``/api/apps/?app_id=``."""
    if app_id is None:
        app_id = text(request.args, "app_id", 255)
        if app_id is None:
            abort(404, description="no application id given")
    found = lookup(app_id, text(request.args, "server", 200), text(request.args, "attempt", 64))
    reg, error = registry()
    detail = load_detail(
        get_session(), found, reg, redaction_regex(), with_tables=False, prices=prices()
    )
    body = detail_json(detail)
    body["heuristics_config_error"] = error
    body["prediction"] = prediction_json(app_prediction(get_session(), detail.app.id))
    return jsonify(body)


@bp.route("/apps/<app_id:app_id>/sql", merge_slashes=False)
def app_sql(app_id: str) -> Response:
    """One application's SQL executions (``?offset=`` and ``?length=`` page through them): nodes
    with parsed metrics, edges, stages, plan text, and the SQL findings."""
    found = lookup(app_id, text(request.args, "server", 200), text(request.args, "attempt", 64))
    offset = parse_int(request.args, "offset", 0, 0, 10_000_000)
    length = parse_int(request.args, "length", DEFAULT_LENGTH, 1, MAX_LENGTH)
    reg, error = registry()
    findings = ensure_analyzed(get_session(), found.id, reg)
    body = sql_document(get_session(), found.id, findings, offset, length)
    sql_findings = [f for f in findings if f.name.startswith("sql_") and f.severity > 0]
    return jsonify(
        app_id=found.app_id,
        attempt_id=found.attempt_id or None,
        **body,
        findings=[finding_json(f) for f in sql_findings],
        heuristics_config_error=error,
    )


@bp.route("/compare")
def compare() -> Response:
    """Two applications with metric deltas, config differences and one-sided findings."""
    left_id = text(request.args, "left", 255)
    right_id = text(request.args, "right", 255)
    if not left_id or not right_id:
        abort(
            400, description=f"invalid parameter {'left' if not left_id else 'right'!r}: required"
        )
    reg, error = registry()
    c, per_run = compared(left_id, right_id, reg)
    return jsonify(
        left=detail_json(c.left),
        right=detail_json(c.right),
        metrics=[
            {
                "metric": m.metric.key,
                "left": m.left,
                "right": m.right,
                "delta": m.delta,
                "pct_change": m.pct,
            }
            for m in c.metrics
        ],
        config=[
            {"key": d.key, "left": d.left, "right": d.right, "status": d.status}
            for d in c.config
            if d.status != "same"
        ],
        config_per_run=[d.key for d in per_run],
        resources=[
            {"figure": key, "left": lv, "right": rv} for key, _label, _unit, lv, rv in c.resources
        ],
        findings=[
            {
                "heuristic": p.heuristic,
                "left": None if p.left is None else severity_name(int(p.left.severity)),
                "right": None if p.right is None else severity_name(int(p.right.severity)),
                "one_sided": p.one_sided,
                "change": p.change,
            }
            for p in c.findings
        ],
        plan_changes=[{"kind": ch.kind, "text": ch.text} for ch in c.plan_changes],
        stages=[stage_pair_json(p) for p in c.stages],
        verdicts={
            "left": prediction_json(c.left_prediction),
            "right": prediction_json(c.right_prediction),
        },
        heuristics_config_error=error,
    )


def _stage_side(s: ComparedStage | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"stage_id": s.stage_id, "attempt_id": s.attempt_id, "name": s.name} | {
        f: getattr(s, f) for f, _label, _unit in STAGE_FIGURES
    }


def stage_pair_json(p: StagePair) -> dict[str, Any]:
    """One line of the compare page's stages: both sides and the deltas (right - left)."""
    return {
        "name": p.name,
        "matched_by": p.by or None,
        "left": _stage_side(p.left),
        "right": _stage_side(p.right),
        "delta": {f: p.delta(f) for f, _label, _unit in STAGE_FIGURES},
    }


@bp.route("/forecast")
def forecast_api() -> Response:
    """The next run of a recurring application: the stored forecast, or the key's stored line at
    the ``input_bytes`` / ``executors`` (x ``cores``) given; it says what it assumed."""
    name = text(request.args, "name")
    if not name:
        abort(400, description="invalid parameter 'name': required")
    big = 10**18
    sizes = {
        p: parse_int(request.args, p, 0, 1, big) or None
        for p in ("input_bytes", "executors", "cores")
    }
    patterns = current_app.config["SPARKSCOPE"].predictions.key_patterns
    try:
        body = next_run(
            get_session(),
            name,
            patterns,
            text(request.args, "server", 200),
            sizes["input_bytes"],
            sizes["executors"],
            sizes["cores"],
        )
    except NoForecast as exc:
        abort(404, description=str(exc))
    return jsonify(body)


@bp.route("/history")
def history_api() -> Response:
    """Every run with this exact name, oldest first, with the chosen metric."""
    name = text(request.args, "name")
    if not name:
        abort(400, description="invalid parameter 'name': required")
    metric = parse_choice(request.args, "metric", tuple(HISTORY_METRICS), "duration")
    server = text(request.args, "server", 200)
    points = history(get_session(), name, metric, server)
    preds, forecast = history_predictions(get_session(), name, server)
    return jsonify(
        name=name,
        metric=metric,
        runs=[
            {
                "app_id": p.app_id,
                "attempt_id": p.attempt_id or None,
                "server": p.server,
                "start_time": _time(p.start_time_ms),
                "start_time_ms": p.start_time_ms,
                "duration_ms": p.duration_ms,
                "worst_severity": severity_name(p.worst_severity),
                "value": p.value,
                "input_bytes": p.input_bytes,
                "executors": p.executors,
                "url": app_link(p.app_id, p.server, p.attempt_id),
                "prediction": prediction_json(preds.get((p.server, p.app_id, p.attempt_id))),
            }
            for p in points
        ],
        forecast=forecast_json(forecast),
    )
