"""Links to Sparkscope's pages outside a request (messages, digests): the same paths the web UI
builds, with every id and name percent-encoded, joined to a configured base URL.

The application page's rule is the web UI's (``sparkscope.web.request.app_link``; a test keeps
the two equal): the id is percent-encoded whole (``/``, ``..``, CR/LF included), and an id that is
only dots goes in the query string, since browsers resolve such a path segment away.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

#: Path segments a browser removes from a URL even when percent-encoded (URL standard).
DOT_SEGMENTS = (".", "..")


def _query(pairs: tuple[tuple[str, str | None], ...]) -> str:
    args = {k: v for k, v in pairs if v}
    return f"?{urlencode(args)}" if args else ""


def app_path(app_id: str, server: str | None = None, attempt_id: str | None = None) -> str:
    """The path of an application's page, server and attempt pinned."""
    pinned = (("server", server), ("attempt", attempt_id or None))
    if app_id in DOT_SEGMENTS:
        return "/apps/" + _query((("app_id", app_id), *pinned))
    return "/apps/" + quote(app_id, safe="") + _query(pinned)


def history_path(name: str, server: str | None = None) -> str:
    """The history page of the runs called ``name``."""
    return "/history" + _query((("name", name), ("server", server)))


def search_path(**params: str | None) -> str:
    """The search page with these filters (empty ones left out)."""
    return "/search" + _query(tuple(params.items()))


def absolute(base_url: str, path: str) -> str:
    """``path`` (from the functions above) under ``base_url`` (no trailing slash needed)."""
    return base_url.rstrip("/") + path
