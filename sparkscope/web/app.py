"""The Flask application factory (`flask --app sparkscope.web.app run`, gunicorn 'sparkscope.web.app:create_app()')."""

from __future__ import annotations

import gc
import logging
import secrets
import time
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, g, jsonify, make_response, render_template, request, send_file
from flask.json.provider import DefaultJSONProvider
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException

from sparkscope import assets
from sparkscope.analysis.heuristics_config import HeuristicsState
from sparkscope.config.loader import Config, load_config
from sparkscope.db import DatabaseProblem, describe_error, make_engine, make_sessionmaker, safe_url
from sparkscope.web.request import wants_json

log = logging.getLogger(__name__)

#: Plotly's JavaScript, served from the installed plotly package at the URL templates use.
PLOTLY_JS_URL = "/static/js/plotly.min.js"
#: Endpoints that never touch the database, served whatever its state.
NO_DATABASE_ENDPOINTS = frozenset({"static", "plotly_js"})

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


class StrictJSONProvider(DefaultJSONProvider):
    """JSON as every client reads it: NaN or Infinity (which JSON does not have) is an error of
    ours, answered 500 and logged, never a document a client cannot parse."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.setdefault("allow_nan", False)
        return super().dumps(obj, **kwargs)


def create_app(test_config: Mapping[str, Any] | None = None, config: Config | None = None) -> Flask:
    """Build the web app: defaults, then the Sparkscope config, then ``test_config`` over everything."""
    app = Flask(
        __name__,
        template_folder=str(assets.folder("templates")),
        static_folder=str(assets.folder("static")),
        static_url_path="/static",  # the folder is sparkscope/_static in the wheel
    )
    app.json = StrictJSONProvider(app)
    if config is None:
        config = load_config()
    app.config.from_mapping(
        SECRET_KEY=config.web.secret_key or secrets.token_hex(32),
        SPARKSCOPE=config,
        DATABASE_URL=config.database_url,
        PAGE_SIZE=config.web.page_size,
        JSON_SORT_KEYS=False,
    )
    if test_config is not None:
        app.config.from_mapping(test_config)
    # create=False: the web app never creates a database (a missing SQLite file is a 503, not a
    # new empty database).
    engine = app.config.get("ENGINE") or make_engine(app.config["DATABASE_URL"], create=False)
    app.extensions["sparkscope.engine"] = engine
    app.extensions["sparkscope.database_gate"] = DatabaseGate(app.config["DATABASE_URL"], engine)
    app.extensions["sparkscope.sessionmaker"] = make_sessionmaker(engine)
    app.extensions["sparkscope.heuristics"] = HeuristicsState(
        app.config.get("HEURISTICS_PATH") or config.heuristics_path
    )

    from sparkscope.web.views import register_blueprints

    register_blueprints(app)
    app.add_url_rule(PLOTLY_JS_URL, "plotly_js", _plotly_js)
    _register_hooks(app)
    _register_database_checks(app)
    log.info("Sparkscope web app on the database %s", safe_url(app.config["DATABASE_URL"]))
    _freeze_startup_objects(app)
    return app


def _freeze_startup_objects(app: Flask) -> None:
    """Move what start-up built (modules, the ORM's mappers and metadata, templates, the
    heuristics) out of the cyclic collector's reach: it lives as long as the process, and a full
    collection re-scans every tracked object, so a page that allocates many (a 2,000-stage
    timeline) paid 60-120 ms pauses for scanning it. Skipped under TESTING, where one process
    builds many apps."""
    if app.testing:
        return
    gc.collect()
    gc.freeze()


def _plotly_js() -> Response:
    return send_file(assets.plotly_js(), mimetype="text/javascript", max_age=86400)


class DatabaseGate:
    """Whether the database can serve pages: reachable and at this code's schema.

    Checked on the first request, then again at most every ``ttl_s`` seconds while it is fine, and on
    every request while it is not (so a `sparkscope db upgrade` or a restored file is seen at once).
    """

    def __init__(self, url: str, engine: Engine, ttl_s: float = 5.0) -> None:
        self.url = url
        self.engine = engine
        self.ttl_s = ttl_s
        self._ok_until = 0.0

    def problem(self) -> str | None:
        """None when the database is fine, else the one-line problem and its fix."""
        if time.monotonic() < self._ok_until:
            return None
        from sparkscope.migrate import database_problem

        # No lock: concurrent requests may check at the same time, which is harmless, while a
        # lock would queue every request behind one slow connection attempt.
        problem = database_problem(self.url, self.engine)
        self._ok_until = 0.0 if problem else time.monotonic() + self.ttl_s
        return problem

    def after_error(self, exc: Exception) -> str | None:
        """The problem behind a database error raised by a request, if it is one."""
        self._ok_until = 0.0
        return describe_error(self.url, exc) or self.problem()


def _unavailable(message: str) -> tuple[Any, int, dict[str, str]]:
    headers = {"Retry-After": "30"}
    title = "Database unavailable"
    if wants_json():
        return jsonify(error=title, message=message, status=503), 503, headers
    return render_template("error.html", code=503, title=title, message=message), 503, headers


def _register_database_checks(app: Flask) -> None:
    gate: DatabaseGate = app.extensions["sparkscope.database_gate"]

    @app.before_request
    def database_ready():  # type: ignore[no-untyped-def]
        if request.endpoint in NO_DATABASE_ENDPOINTS:
            return None
        problem = gate.problem()
        return _unavailable(problem) if problem else None

    @app.errorhandler(DBAPIError)
    @app.errorhandler(DatabaseProblem)
    def database_error(exc: Exception):  # type: ignore[no-untyped-def]
        problem = gate.after_error(exc)
        if problem is None:
            return _internal_error(exc)
        log.warning("database unavailable on %s: %s", request.path, problem)
        return _unavailable(problem)


def _register_hooks(app: Flask) -> None:
    @app.teardown_appcontext
    def close_session(_exc: BaseException | None) -> None:
        session = g.pop("db_session", None)
        if session is not None:
            session.close()

    @app.after_request
    def security_headers(response):  # type: ignore[no-untyped-def]
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):  # type: ignore[no-untyped-def]
        code = exc.code or 500
        if wants_json():
            response = jsonify(error=exc.name, message=exc.description, status=code)
        else:
            response = make_response(
                render_template("error.html", code=code, title=exc.name, message=exc.description)
            )
        response.status_code = code
        # Headers the error carries (405's Allow, 401's WWW-Authenticate), not its content type.
        for key, value in exc.get_headers():
            if key.lower() != "content-type":
                response.headers[key] = value
        return response

    app.register_error_handler(Exception, _internal_error)


def _internal_error(exc: BaseException):  # type: ignore[no-untyped-def]
    log.error("unhandled error on %s", request.path, exc_info=exc)
    message = "Something went wrong on our side; the error is in the server log."
    if wants_json():
        return jsonify(error="Internal Server Error", message=message, status=500), 500
    return render_template(
        "error.html", code=500, title="Internal Server Error", message=message
    ), 500
