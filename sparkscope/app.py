"""The Flask application factory (`flask --app sparkscope.app run`, gunicorn 'sparkscope.app:create_app()')."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask, g, jsonify, make_response, render_template, request
from werkzeug.exceptions import HTTPException

from sparkscope.analysis import HeuristicsState
from sparkscope.config import Config, load_config
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.web import wants_json

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger(__name__)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def create_app(test_config: Mapping[str, Any] | None = None, config: Config | None = None) -> Flask:
    """Build the web app: defaults, then the Sparkscope config, then ``test_config`` over everything."""
    app = Flask(
        __name__,
        template_folder=str(ROOT / "templates"),
        static_folder=str(ROOT / "static"),
    )
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
    engine = app.config.get("ENGINE") or make_engine(app.config["DATABASE_URL"])
    app.extensions["sparkscope.engine"] = engine
    app.extensions["sparkscope.sessionmaker"] = make_sessionmaker(engine)
    app.extensions["sparkscope.heuristics"] = HeuristicsState(
        app.config.get("HEURISTICS_PATH") or config.heuristics_path
    )

    from sparkscope.views import register_blueprints

    register_blueprints(app)
    _register_hooks(app)
    return app


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

    @app.errorhandler(Exception)
    def unexpected_error(exc: Exception):  # type: ignore[no-untyped-def]
        log.exception("unhandled error on %s", request.path)
        message = "Something went wrong on our side; the error is in the server log."
        if wants_json():
            return jsonify(error="Internal Server Error", message=message, status=500), 500
        return render_template(
            "error.html", code=500, title="Internal Server Error", message=message
        ), 500
