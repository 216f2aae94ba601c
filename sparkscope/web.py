"""Request helpers for the views: the request's database session, the heuristics in force, and
whether the client wants JSON. Kept apart from the app factory so views never import it."""

from __future__ import annotations

from flask import current_app, g, request
from sqlalchemy.orm import Session

from sparkscope.analysis import HeuristicsState


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
