"""The next run of a recurring key, as `sparkscope forecast` and ``GET /api/forecast`` answer it:
the stored forecast, or, when the next run's input or executors are given, the key's stored line
at that size (evaluated, never fitted, here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from sparkscope.advisor.predict.features import NUMERIC, recurring_key
from sparkscope.advisor.predict.nextrun import at_size
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RecurringForecast

_INPUT = NUMERIC.index("input_bytes")
_SLOTS = NUMERIC.index("cores")
_EXECUTORS = NUMERIC.index("executors")

#: What each stored forecast model knows of the next run.
ASSUMES = {
    "size_trend": "input from the trend of the latest runs' inputs; task slots not modelled",
    "trend": "duration from its trend over the latest runs; input and task slots not modelled",
    "ewma": "durations of the latest runs only; input and task slots not modelled",
    "median_5": "durations of the latest runs only; input and task slots not modelled",
    "last_run": "the latest run's duration; input and task slots not modelled",
}


class NoForecast(LookupError):
    """No stored forecast for that name."""


def stored_forecast(
    session: Session, name: str, patterns: Sequence[str] = (), server: str | None = None
) -> tuple[str, RecurringForecast]:
    """(the server's name, the stored forecast) of the key of ``name``."""
    key = recurring_key(name, patterns)
    query = (
        select(RecurringForecast, HistoryServer.name)
        .join(HistoryServer, HistoryServer.id == RecurringForecast.server_id)
        .where(RecurringForecast.key.in_({key, name}))
    )
    if server is not None:
        query = query.where(HistoryServer.name == server)
    found = session.execute(query).all()
    if not found:
        where = f" on {server!r}" if server else ""
        raise NoForecast(f"no forecast for {name!r}{where} (no stored run of its key)")
    if len({srv for _f, srv in found}) > 1:
        raise NoForecast(f"{name!r} runs on several servers: name one")
    fc, srv = found[0]
    return srv, fc


def next_run(
    session: Session,
    name: str,
    patterns: Sequence[str] = (),
    server: str | None = None,
    input_bytes: float | None = None,
    executors: int | None = None,
    cores: int | None = None,
) -> dict[str, Any]:
    """The next run's expected duration: with ``input_bytes`` or ``executors`` (times ``cores``
    per executor, else the latest run's) the stored line at that size, else the stored
    forecast; either says what it assumed from the latest run."""
    srv, fc = stored_forecast(session, name, patterns, server)
    basis = fc.basis or {}
    latest = basis.get("latest")
    out: dict[str, Any] = {"key": fc.key, "server": srv, "n_runs": fc.n_runs}
    if latest:
        slots = float(latest[_SLOTS])
        execs = max(float(latest[_EXECUTORS]), 1.0)
        out["latest_run"] = {
            "input_bytes": float(latest[_INPUT]),
            "task_slots": slots,
            "executors": execs,
        }
    if input_bytes is None and executors is None:
        out.update(
            expected_ms=fc.expected_ms,
            low_ms=fc.low_ms,
            high_ms=fc.high_ms,
            level=fc.level,
            model=fc.model,
            assumes=ASSUMES.get(fc.model, ""),
            next_start_ms=fc.next_start_ms,
        )
        return out
    if not latest:
        raise NoForecast(f"no run of {name!r} to size the next one from")
    slots_asked = None
    if executors is not None:
        per = float(cores) if cores else max(1.0, round(float(latest[_SLOTS]) / execs))
        slots_asked = float(executors) * per
    answer = at_size(basis, input_bytes, slots_asked)
    assumed = answer.pop("assumed_from_latest_run")
    out.update(answer)
    out["assumes"] = (
        "the latest run's " + " and ".join(assumed) if assumed else "the input and slots given"
    )
    return out
