"""The history page: every run of a recurring application, and the names to choose from."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.summary import ApplicationName
from sparkscope.present.catalogs import HISTORY_METRICS


@dataclass(frozen=True)
class HistoryPoint:
    """One run of a recurring application for the history chart."""

    app_id: str
    attempt_id: str
    server: str
    start_time_ms: int
    duration_ms: int | None
    worst_severity: int | None
    value: float | None
    input_bytes: int | None = None
    executors: int | None = None


def history(
    session: Session, name: str, metric: str = "duration", server: str | None = None
) -> list[HistoryPoint]:
    """Every run with exactly this name, oldest first, with the chosen metric."""
    col = getattr(Application, HISTORY_METRICS[metric].key)
    query = (
        select(
            Application.app_id,
            Application.attempt_id,
            HistoryServer.name.label("server"),
            Application.start_time_ms,
            Application.duration_ms,
            Application.worst_severity,
            col.label("value"),
            Application.input_bytes,
            Application.num_executors,
        )
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.name == name)
        .where(Application.start_time_ms.is_not(None))
        .order_by(Application.start_time_ms)
    )
    if server:
        query = query.where(HistoryServer.name == server)
    return [
        HistoryPoint(
            app_id=r.app_id,
            attempt_id=r.attempt_id or "",
            server=r.server,
            start_time_ms=r.start_time_ms,
            duration_ms=r.duration_ms,
            worst_severity=r.worst_severity,
            value=r.value,
            input_bytes=r.input_bytes,
            executors=r.num_executors,
        )
        for r in session.execute(query)
    ]


def app_names(session: Session, limit: int = 1000) -> list[str]:
    """Distinct application names for suggestions, alphabetically (bounded)."""
    # The distinct names are a table of their own (migration 0008); names whose applications
    # were all deleted may stay there, so each is checked against the name index.
    stored = exists().where(Application.name == ApplicationName.name)
    rows = session.scalars(
        select(ApplicationName.name).where(stored).order_by(ApplicationName.name).limit(limit)
    )
    return list(rows)


def suggest_names(session: Session, typed: str, names: list[str], limit: int = 8) -> list[str]:
    """Names to offer for one with no run: the known names containing ``typed``
    (case-insensitively, from the table of distinct names), shortest first, then the closest
    spellings among ``names`` (the bounded list the page loaded), at most ``limit``."""
    needle = typed.strip()
    if not needle:
        return []
    stored = exists().where(Application.name == ApplicationName.name)
    out = list(
        session.scalars(
            select(ApplicationName.name)
            .where(ApplicationName.name.icontains(needle, autoescape=True), stored)
            .order_by(func.length(ApplicationName.name), ApplicationName.name)
            .limit(limit)
        )
    )
    if len(out) < limit:
        folded = {n.casefold(): n for n in names}
        close = difflib.get_close_matches(needle.casefold(), list(folded), n=limit, cutoff=0.6)
        out += [folded[c] for c in close if folded[c] not in out][: limit - len(out)]
    return out
