"""The what-if and sizing pages: ``/apps/<id>/whatif`` (one application at other sizes) and
``/advise?name=..`` (the cheapest size of a recurring application for a deadline), in plain words.

Thin over the functions the JSON API answers with (:mod:`sparkscope.whatif.answers`): the same
parameters, parsed by the same rules, and for the what-if the same per-process cache entry. They
read stored runs and the calibration stored at fetch time and simulate a bounded set of sizes;
nothing is fitted or written.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, render_template, request
from sqlalchemy import select

from sparkscope.advisor.whatif.sizing import (
    parse_counts,
    parse_deadline,
    parse_positive,
    recommend,
)
from sparkscope.models.application import Application, EnvironmentProperty
from sparkscope.models.fetch import HistoryServer
from sparkscope.present import sizing as words
from sparkscope.present.answer import ConfLine, conf_block
from sparkscope.queries.cache import cached, db_key
from sparkscope.queries.history import app_names
from sparkscope.web.params import bad, text
from sparkscope.web.request import get_session, lookup, prices
from sparkscope.whatif.answers import NoHistory, advise, app_whatif
from sparkscope.whatif.inputs import WhatIfUnavailable

bp = Blueprint("sizing", __name__)

#: The executor counts a what-if page shows unless asked for others (as the API's default).
DEFAULT_EXECUTORS = "1,2,3,4,6,8,12,16"
#: Applications the what-if chooser lists.
RECENT = 12


def _param(name: str, parse: Any, *args: Any) -> Any:
    try:
        return parse(*args)
    except ValueError as exc:
        raise bad(name, str(exc)) from None


def _deadline(raw: str | None) -> int | None:
    return None if raw is None else _param("deadline", parse_deadline, raw)


def _conf(pairs: list[tuple[str, str]], source: str) -> tuple[list[ConfLine], str]:
    lines = [ConfLine(k, v, (source,)) for k, v in pairs]
    return lines, conf_block(lines)


def _dynamic(app: Application) -> bool:
    value = get_session().scalar(
        select(EnvironmentProperty.value).where(
            EnvironmentProperty.application_id == app.id,
            EnvironmentProperty.section == "spark",
            EnvironmentProperty.name == "spark.dynamicAllocation.enabled",
        )
    )
    return (value or "").strip().lower() == "true"


@bp.route("/whatif")
def chooser() -> str:
    """Pick an application (``?app_id=`` opens its what-if, for ids a path cannot hold)."""
    app_id = text(request.args, "app_id", 255)
    if app_id is not None:
        return _whatif_page(app_id)
    session = get_session()
    recent = session.execute(
        select(Application.app_id, Application.attempt_id, Application.name, HistoryServer.name)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.completed.is_(True), Application.start_time_ms.is_not(None))
        .order_by(Application.start_time_ms.desc())
        .limit(RECENT)
    ).all()
    return render_template("sizing/chooser.html", recent=recent)


@bp.route("/apps/<app_id:app_id>/whatif", merge_slashes=False)
def whatif_page(app_id: str) -> str:
    """One application's duration and cost at other executor counts."""
    return _whatif_page(app_id)


def _whatif_page(app_id: str) -> str:
    executors_text = text(request.args, "executors", 2000) or DEFAULT_EXECUTORS
    executors = _param("executors", parse_counts, executors_text)
    cores = _param("cores", parse_positive, request.args.get("cores"), "core count", True)
    if cores is not None and cores > 1024:
        raise bad("cores", "at most 1024")
    deadline_text = text(request.args, "deadline", 40)
    deadline_ms = _deadline(deadline_text)
    app = lookup(app_id, text(request.args, "server", 200), text(request.args, "attempt", 64))
    session = get_session()
    server = session.get(HistoryServer, app.server_id)
    patterns = current_app.config["SPARKSCOPE"].predictions.key_patterns
    # The API's cache entry: the page and /api/apps/<id>/whatif share one computation.
    key = ("whatif", db_key(session), app.id, app.fetched_at_ms, tuple(executors), cores, None)
    body: dict[str, Any] | None = None
    problem = None
    try:
        body = cached(
            key,
            float(current_app.config.get("WHATIF_CACHE_SECONDS", 60)),
            lambda: app_whatif(session, app, executors, cores, None, prices(), patterns),
        )
    except WhatIfUnavailable as exc:
        problem = str(exc)
    context: dict[str, Any] = {
        "app": app,
        "server": server.name if server else "",
        "executors_text": executors_text,
        "cores": cores,
        "deadline_text": deadline_text or "",
        "deadline_ms": deadline_ms,
        "problem": problem,
        "currency": prices().currency,
    }
    if body is not None:
        dynamic = _dynamic(app)
        points = body["points"]
        best = recommend(points, deadline_ms) if deadline_ms else None
        shown_cores = points[0]["cores"] if points else body["observed"]["cores"]
        observed = body["observed"]
        context.update(
            body=body,
            dynamic=dynamic,
            recommended=best,
            fastest=words.fastest(points),
            cheapest=words.cheapest(points),
            interval=words.has_interval(points),
            observed_conf=words.size_conf(observed["executors"], observed["cores"], dynamic),
            figure=words.duration_figure(
                [(words.cores_label(shown_cores), points, True)],
                observed=observed if observed["cores"] == shown_cores else None,
                recommended=best,
                deadline_ms=deadline_ms,
                cost_series=points,
                currency=prices().currency if any(p["cost"] is not None for p in points) else None,
                x_title=f"executors ({words.plural(shown_cores, 'core')} each)",
            ),
        )
        if best is not None:
            context["conf_lines"], context["conf_text"] = _conf(
                words.size_conf(best["executors"], best["cores"], dynamic), "what-if"
            )
    return render_template("sizing/whatif.html", **context)


@bp.route("/advise")
def advise_page() -> str | tuple[str, int]:
    """The cheapest size (executors x cores) of a recurring application for a deadline."""
    session = get_session()
    names = cached(
        ("app_names", db_key(session)),
        float(current_app.config.get("NAMES_CACHE_SECONDS", 60)),
        lambda: app_names(session),
    )
    name = text(request.args, "name")
    server = text(request.args, "server", 200)
    deadline_text = text(request.args, "deadline", 40)
    deadline_ms = _deadline(deadline_text)
    input_bytes = _param(
        "input_bytes", parse_positive, request.args.get("input_bytes") or None, "byte count", True
    )
    context: dict[str, Any] = {
        "name": name or "",
        "server": server or "",
        "names": names,
        "deadline_text": deadline_text or "",
        "input_bytes": input_bytes,
        "currency": prices().currency,
        "default_deadline": None,
    }
    if name is None:
        return render_template("sizing/advise.html", **context)
    if deadline_ms is None:
        # As long as the latest run of that name took: "could it be cheaper at the same speed?"
        query = select(Application.duration_ms).where(
            Application.name == name, Application.duration_ms > 0
        )
        if server:
            query = query.join(HistoryServer, HistoryServer.id == Application.server_id).where(
                HistoryServer.name == server
            )
        latest = session.scalar(query.order_by(Application.start_time_ms.desc()).limit(1))
        if latest is None:
            context["problem"] = f"no finished run named “{name}”: give a deadline"
            return render_template("sizing/advise.html", **context)
        deadline_ms = int(latest)
        context["default_deadline"] = deadline_ms
    patterns = current_app.config["SPARKSCOPE"].predictions.key_patterns
    try:
        body = advise(
            session, name, deadline_ms, input_bytes, None, server, prices(), None, patterns
        )
    except NoHistory as exc:
        context["problem"] = str(exc)
        return render_template("sizing/advise.html", **context), 404
    except WhatIfUnavailable as exc:
        context["problem"] = str(exc)
        return render_template("sizing/advise.html", **context), 422
    every = body["curve"] + body["other_cores"]
    best = body["recommended"]
    if best is not None:  # the whole point (its interval too), not the summary the API gives
        best = next(
            (
                p
                for p in every
                if (p["executors"], p["cores"]) == (best["executors"], best["cores"])
            ),
            best,
        )
    by_cores: dict[int, list[dict[str, Any]]] = {}
    for p in every:
        by_cores.setdefault(int(p["cores"]), []).append(p)
    # One line per core count; the band of the recommended one (else the history's own count).
    banded = best["cores"] if best is not None else body["curve"][0]["cores"]
    series = [
        (words.cores_label(c), sorted(ps, key=lambda p: p["executors"]), c == banded)
        for c, ps in sorted(by_cores.items())
    ]
    context.update(
        body=body,
        deadline_ms=deadline_ms,
        recommended=best,
        interval=words.has_interval(every),
        by_cores=sorted(by_cores.items()),
        figure=words.duration_figure(
            series,
            recommended=best,
            deadline_ms=deadline_ms,
            x_title="executors (one line per number of cores each)",
        ),
    )
    if best is not None:
        context["conf_lines"], context["conf_text"] = _conf(
            words.size_conf(best["executors"], best["cores"]), "sizing"
        )
    return render_template("sizing/advise.html", **context)
