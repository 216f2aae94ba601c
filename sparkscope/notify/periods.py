"""Digest periods: every day or every week at a local time in a time zone, DST-safe.

A period ends at a *boundary*: the configured local time on a local date (every day, or every
given weekday). Boundaries are computed from local dates, never by adding 24 hours to an instant,
so a 07:00 Europe/Prague digest stays at 07:00 across the DST switches (its periods are 23 or 25
hours long then). A local time that does not exist on a spring-forward day (02:30) is taken as the
instant after the gap (03:30 summer time); an ambiguous one on the fall-back day as its first
occurrence (PEP 495, fold=0): one boundary per date either way.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sparkscope.config.notifications.model import DigestSpec, Scope

DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class Period:
    """A digest's period: [start, end), both UTC."""

    start: dt.datetime  # UTC, inclusive
    end: dt.datetime  # UTC, exclusive


def boundary(spec: DigestSpec, day: dt.date) -> dt.datetime:
    """The instant (UTC) of the configured local time on ``day``."""
    local = dt.datetime.combine(day, spec.at, tzinfo=spec.timezone)  # fold=0
    return local.astimezone(dt.UTC)


def _is_boundary_date(spec: DigestSpec, day: dt.date) -> bool:
    return spec.every == "day" or day.weekday() == spec.weekday


def _step(spec: DigestSpec) -> dt.timedelta:
    return DAY if spec.every == "day" else 7 * DAY


def last_boundary_date(spec: DigestSpec, now: dt.datetime) -> dt.date:
    """The local date of the latest boundary at or before ``now``."""
    day = now.astimezone(spec.timezone).date() + DAY
    for _ in range(16):
        if _is_boundary_date(spec, day) and boundary(spec, day) <= now:
            return day
        day -= DAY
    raise AssertionError("no boundary within 16 days")  # pragma: no cover


def period_ending(spec: DigestSpec, end_date: dt.date) -> Period:
    """The period that ends at the boundary of ``end_date``."""
    return Period(boundary(spec, end_date - _step(spec)), boundary(spec, end_date))


def latest_period(spec: DigestSpec, now: dt.datetime) -> Period:
    """The latest period that has ended by ``now``."""
    return period_ending(spec, last_boundary_date(spec, now))


def previous_period(spec: DigestSpec, period: Period) -> Period:
    """The period before ``period`` (for "cost vs previous period")."""
    end_date = period.start.astimezone(spec.timezone).date()
    return period_ending(spec, end_date)


def due_period(spec: DigestSpec, now: dt.datetime, last_start: dt.datetime | None) -> Period | None:
    """The period to send now, if any: the latest ended one unless it (or a later one) was sent
    already (``last_start``: start of the newest period in the outbox). Periods missed while
    nothing ran are not sent late: only the latest counts."""
    period = latest_period(spec, now)
    if last_start is not None and last_start >= period.start:
        return None
    return period


def next_boundary(spec: DigestSpec, now: dt.datetime) -> dt.datetime:
    """When the next period ends (for ``--check`` and the schedule's log)."""
    day = last_boundary_date(spec, now) + DAY
    while not _is_boundary_date(spec, day):
        day += DAY
    return boundary(spec, day)


def scope_text(scope: Scope) -> str:
    """``queue analytics, user etl`` or ``all applications``."""
    parts = []
    for key in ("user", "queue", "server"):
        values = getattr(scope, key)
        if values:
            parts.append(f"{key} {', '.join(sorted(values))}")
    if scope.name is not None:
        parts.append(f"name ~ {scope.name.pattern}")
    return "; ".join(parts) or "all applications"
