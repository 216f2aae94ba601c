"""What a view asks of its request: the database session, the heuristics in force, whether the
client wants JSON, application lookup (404 / 409 pages) and links to applications.

Kept apart from the app factory so that views never import it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache, partial
from typing import Any, NoReturn
from urllib.parse import quote, urlencode, urlsplit

from flask import abort, current_app, g, jsonify, make_response, render_template, request, url_for
from sqlalchemy.orm import Session
from werkzeug.routing import PathConverter

from heuristics.registry import Registry
from sparkscope.advisor.whatif.sizing import Prices
from sparkscope.analysis.heuristics_config import HeuristicsState
from sparkscope.models.application import Application
from sparkscope.queries.detail import find_app
from sparkscope.queries.errors import AmbiguousAppError, NotFoundError
from sparkscope.whatif.answers import prices_of


def get_session() -> Session:
    """The request's database session, opened on first use and closed at teardown."""
    if "db_session" not in g:
        g.db_session = current_app.extensions["sparkscope.sessionmaker"]()
    session: Session = g.db_session
    return session


def heuristics_state() -> HeuristicsState:
    """The heuristics config of this app (re-read when its file changes)."""
    state: HeuristicsState = current_app.extensions["sparkscope.heuristics"]
    return state


def wants_json() -> bool:
    """True for API routes, whose errors are JSON."""
    return request.path.startswith("/api/")


def registry() -> tuple[Registry, str | None]:
    """The heuristics registry in force and the config error to show as a banner, if any; read
    once per request, so a page and its banner agree even if the file changes meanwhile."""
    if "heuristics" not in g:
        g.heuristics = heuristics_state().current()
    found: tuple[Registry, str | None] = g.heuristics
    return found


def config_error_context() -> dict[str, str | None]:
    """Template context of every page: the heuristics config error its banner shows."""
    return {"config_error": registry()[1]}


def redaction_regex() -> str:
    """The secret-key pattern from the fetcher config, reused to mask values on display."""
    regex: str = current_app.config["SPARKSCOPE"].fetcher.redaction_regex
    return regex


def prices() -> Prices:
    """Configured prices per core-hour and per GB-hour (None when unset) and their currency."""
    return prices_of(current_app.config["SPARKSCOPE"].prices)


#: Path segments a browser removes from a URL even when percent-encoded (URL standard).
_DOT_SEGMENTS = (".", "..")
#: Ids whose path would read as a page under another application's (the server decodes %2F
#: before routing): linked through the query string instead.
_SUB_PAGE = re.compile(r"/(?:whatif|timeline|stages/\d+/\d+)$")


def app_link(app_id: str, server: str | None, attempt_id: str = "") -> str:
    """URL of an application's page (server and attempt pinned so the link never goes stale).

    The id is percent-encoded whole (``/``, ``..``, CR/LF included) so the browser keeps it; an id
    that is only dots goes in the query string, since browsers resolve such a segment away, and so
    does one that ends like a page of another application (``x/whatif``).
    """
    # Built by hand: the history chart needs a thousand of these and url_for costs ~70 us each.
    base = g.get("app_link_base")
    if base is None:
        base = g.app_link_base = url_for("detail.app_page", app_id="_")[:-1]
    if app_id in _DOT_SEGMENTS or _SUB_PAGE.search(app_id):
        return _by_query(base, app_id, server, attempt_id)
    return base + quote(app_id, safe="") + _pinned_query(server, attempt_id)


def app_api_link(app_id: str, server: str | None, attempt_id: str = "") -> str:
    """URL of an application's JSON (``/api/apps/<id>``); ids that are only dots, or that end in
    ``/whatif`` (a WSGI server decodes ``%2F`` before routing), go in the query string."""
    base = url_for("api.app", app_id="_")[:-1]
    if app_id in _DOT_SEGMENTS or app_id.endswith("/whatif"):
        return _by_query(base, app_id, server, attempt_id)
    return base + quote(app_id, safe="") + _pinned_query(server, attempt_id)


def whatif_api_link(app_id: str, server: str | None, attempt_id: str = "") -> str:
    """URL of an application's what-if API; for an id that is only dots, ``/api/whatif?app_id=``."""
    if app_id in _DOT_SEGMENTS:
        return _by_query(url_for("whatif.whatif"), app_id, server, attempt_id)
    return url_for("whatif.whatif", app_id=app_id) + _pinned_query(server, attempt_id)


def whatif_link(app_id: str, server: str | None, attempt_id: str = "") -> str:
    """URL of an application's what-if page (``/apps/<id>/whatif``, the id encoded as in
    :func:`app_link`; an id that is only dots goes in the query string of ``/whatif``)."""
    if app_id in _DOT_SEGMENTS:
        args = {k: v for k, v in (("server", server), ("attempt", attempt_id)) if v}
        return f"{url_for('sizing.chooser')}?{urlencode({'app_id': app_id, **args})}"
    return _sub_page(app_id, "/whatif") + _pinned_query(server, attempt_id)


def stage_link(
    app_id: str, server: str | None, attempt_id: str, stage_id: int, stage_attempt: int
) -> str:
    """URL of one stage attempt of an application: ``/apps/<id>/stages/<stage>/<attempt>``, the
    id encoded as in :func:`app_link`. An id that is only dots cannot be a path segment: its
    link is the application page with ``stage`` and ``stage_attempt`` in the query string."""
    if app_id in _DOT_SEGMENTS:
        args = {k: v for k, v in (("server", server), ("attempt", attempt_id)) if v}
        query = {"app_id": app_id, **args, "stage": stage_id, "stage_attempt": stage_attempt}
        return f"{url_for('detail.app_page')}?{urlencode(query)}"
    suffix = f"/stages/{int(stage_id)}/{int(stage_attempt)}"
    return _sub_page(app_id, suffix) + _pinned_query(server, attempt_id)


def stage_links(app_id: str, server: str | None, attempt_id: str) -> Callable[[int, int], str]:
    """(stage id, attempt) -> :func:`stage_link` of one application, its prefix and query built
    once (a timeline links thousands of stages)."""
    if app_id in _DOT_SEGMENTS:
        return partial(stage_link, app_id, server, attempt_id)
    prefix = _sub_page(app_id, "/stages/")
    query = _pinned_query(server, attempt_id)
    return lambda stage_id, stage_attempt: f"{prefix}{int(stage_id)}/{int(stage_attempt)}{query}"


def timeline_link(app_id: str, server: str | None, attempt_id: str = "") -> str:
    """URL of an application's timeline (``/apps/<id>/timeline``, the id encoded as in
    :func:`app_link`); for an id that is only dots, the application page with ``timeline=1``."""
    if app_id in _DOT_SEGMENTS:
        args = {k: v for k, v in (("server", server), ("attempt", attempt_id)) if v}
        query = {"app_id": app_id, **args, "timeline": 1}
        return f"{url_for('detail.app_page')}?{urlencode(query)}"
    return _sub_page(app_id, "/timeline") + _pinned_query(server, attempt_id)


def _sub_page(app_id: str, suffix: str) -> str:
    base = g.get("app_link_base")
    if base is None:
        base = g.app_link_base = url_for("detail.app_page", app_id="_")[:-1]
    return base + quote(app_id, safe="") + suffix


def _by_query(path: str, app_id: str, server: str | None, attempt_id: str) -> str:
    args = {k: v for k, v in (("server", server), ("attempt", attempt_id)) if v}
    return f"{path}?{urlencode({'app_id': app_id, **args})}"


def here(changes: Mapping[str, Any]) -> str:
    """This page's URL with its query arguments changed (a None value removes one): the path
    built again from the route, the application id percent-encoded as in :func:`app_link`
    (``request.path`` is decoded: ``/apps/a/../b`` would lead elsewhere)."""
    args = request.args.to_dict()
    for key, value in changes.items():
        if value is None:
            args.pop(key, None)
        else:
            args[key] = value
    view_args = dict(request.view_args or {})
    app_id = view_args.get("app_id")
    if isinstance(app_id, str) and app_id in _DOT_SEGMENTS:
        view_args.pop("app_id")
        args = {"app_id": app_id, **args}
    return url_for(str(request.endpoint), **view_args) + (f"?{urlencode(args)}" if args else "")


def raw_path() -> str | None:
    """The request's path as the client sent it, percent-encoding kept (``%2F`` is not ``/``),
    when the WSGI server says (werkzeug and gunicorn do); else None."""
    raw = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    return urlsplit(raw).path if isinstance(raw, str) and raw else None


@lru_cache(maxsize=256)
def _pinned_query(server: str | None, attempt_id: str) -> str:
    """ "?server=..&attempt=.." of an application link ("" when neither is set); a page links
    to many applications of a few servers."""
    args = {k: v for k, v in (("server", server), ("attempt", attempt_id)) if v}
    return f"?{urlencode(args)}" if args else ""


class AppIdConverter(PathConverter):
    """An application id in a URL path: any characters but NUL (slashes, dots and line breaks
    too), percent-encoded whole when a URL is built."""

    regex = r"[^\x00]+?"
    part_isolating = False  # matches across slashes (werkzeug would infer True from the regex)

    def to_url(self, value: object) -> str:
        """The id percent-encoded, ``/`` included."""
        return quote(str(value), safe="")


def _ambiguous(exc: AmbiguousAppError, param: str) -> NoReturn:
    if wants_json():
        resp = jsonify(
            error="Conflict",
            message=f"{exc}; add ?{param}=<server name>",
            servers=exc.servers,
            status=409,
        )
    else:
        resp = make_response(
            render_template(
                "choose_server.html", app_id=exc.app_id, servers=exc.servers, param=param
            )
        )
    resp.status_code = 409
    abort(resp)


def lookup(
    app_id: str, server: str | None, attempt: str | None = None, server_param: str = "server"
) -> Application:
    """The application or an HTTP error: 404 unknown, 409 (with a server chooser) ambiguous."""
    if "\x00" in app_id or len(app_id) > 255:
        abort(404, description="no such application")
    try:
        return find_app(get_session(), app_id, server, attempt)
    except NotFoundError as exc:
        abort(404, description=str(exc))
    except AmbiguousAppError as exc:
        _ambiguous(exc, server_param)
