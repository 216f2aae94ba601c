"""The plain inputs messages are built from: an alert event, a folded burst, a digest.

:mod:`sparkscope.notify.alerts` and :mod:`sparkscope.notify.digests` fill them from the database
(findings, verdicts, resources); here they are only data, with a JSON codec so that an outbox row
holds exactly what is rendered and renders the same message on every retry.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: uuid5 namespace of Sparkscope event ids (fixed: ids must be the same in every process).
NAMESPACE = uuid.UUID("5b6f2f0e-8a53-4a8e-9d3c-2f7d0c3c9a11")

KINDS = ("finding", "regression", "failure", "cost_spike", "deadline")


@dataclass(frozen=True)
class Link:
    """A labelled absolute URL into Sparkscope."""

    label: str
    url: str


@dataclass(frozen=True)
class AlertEvent:
    """Something that happened to one application run.

    ``cost_core_hours`` and ``wall_ms`` are what it cost: a finding's impact; for a failure, a cost
    spike or a deadline, the run's allocated core-hours and duration. ``baseline_core_hours`` (the
    key's recent median) is what a cost spike is measured against; ``duration_ms`` is the run's
    duration, or with ``forecast`` the next run's expected duration, for the deadline trigger.
    """

    kind: str
    app_id: str
    app_name: str
    server: str
    severity: int
    title: str
    occurred_at: dt.datetime
    user: str | None = None
    queue: str | None = None
    attempt_id: str | None = None
    heuristic: str | None = None
    recurring_key: str | None = None
    cost_core_hours: float | None = None
    wall_ms: float | None = None
    cost_money: float | None = None
    currency: str = "USD"
    cause: str | None = None
    fix: str | None = None
    #: the settings the fix suggests for the next run: (Spark property, value)
    settings: tuple[tuple[str, str], ...] = ()
    baseline_core_hours: float | None = None
    duration_ms: float | None = None
    forecast: bool = False
    links: tuple[Link, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown event kind {self.kind!r}")
        if self.occurred_at.tzinfo is None:
            raise ValueError("occurred_at must be timezone-aware")

    @property
    def occurrence_id(self) -> str:
        """Stable id of what happened: the same facts give the same id in every run (severity
        and figures are left out, so a re-analysis that rates it differently is the same
        occurrence)."""
        parts = (
            self.kind,
            self.server,
            self.app_id,
            self.attempt_id or "",
            self.heuristic or "",
            "forecast" if self.forecast else "",
        )
        return str(uuid.uuid5(NAMESPACE, "\x1f".join(parts)))


@dataclass(frozen=True)
class FoldedAlerts:
    """A burst of one rule's alerts over ``max_per_hour``, sent as one message."""

    rule: str
    window_start: dt.datetime
    window_end: dt.datetime
    max_per_hour: int
    count: int
    by_severity: Mapping[int, int]
    top: tuple[AlertEvent, ...]  # the worst few, shown in full
    occurrence_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class DigestApp:
    """One of a digest's worst applications by impact, with its top fix."""

    app_id: str
    name: str
    server: str
    severity: int
    user: str | None = None
    impact_core_hours: float | None = None
    impact_wall_ms: float | None = None
    top_fix: str | None = None
    url: str | None = None
    #: the settings the top fix suggests for the next run: (Spark property, value)
    settings: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DigestRegression:
    """A run of a digest's period judged a regression, with its causes."""

    app_id: str
    name: str
    server: str
    duration_ms: float
    expected_ms: float | None = None
    causes: tuple[str, ...] = ()
    url: str | None = None


@dataclass(frozen=True)
class DigestFailure:
    """A failed application of a digest's period, with the line that names its error."""

    app_id: str
    name: str
    server: str
    root_cause: str
    user: str | None = None
    url: str | None = None


@dataclass(frozen=True)
class Digest:
    """The figures of one digest period for one scope (severity counts: worst per application)."""

    name: str
    scope_text: str
    period_start: dt.datetime
    period_end: dt.datetime
    timezone: str
    apps_total: int
    counts: Mapping[int, int] = field(default_factory=dict)
    worst: tuple[DigestApp, ...] = ()
    regressions: tuple[DigestRegression, ...] = ()
    failures: tuple[DigestFailure, ...] = ()
    #: how many there were in all (the lists above are the first of them)
    regressions_total: int = 0
    failures_total: int = 0
    core_hours: float | None = None
    previous_core_hours: float | None = None
    money: float | None = None
    previous_money: float | None = None
    currency: str = "USD"
    links: tuple[Link, ...] = ()


# ------------------------------------------------------------------------------------ JSON codec

_TYPES: dict[str, type] = {
    c.__name__: c
    for c in (AlertEvent, FoldedAlerts, Digest, DigestApp, DigestRegression, DigestFailure, Link)
}


def to_json(obj: Any) -> Any:
    """A dataclass tree as JSON-able data (dates as ISO strings, mappings with string keys)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"_type": type(obj).__name__}
        out.update({f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
        return out
    if isinstance(obj, dt.datetime):
        return {"_dt": obj.isoformat()}
    if isinstance(obj, tuple | list):
        return [to_json(x) for x in obj]
    if isinstance(obj, Mapping):
        return {"_map": [[to_json(k), to_json(v)] for k, v in obj.items()]}
    return obj


def from_json(data: Any) -> Any:
    """The inverse of :func:`to_json`."""
    if isinstance(data, list):
        return tuple(from_json(x) for x in data)
    if isinstance(data, dict):
        if "_dt" in data:
            return dt.datetime.fromisoformat(data["_dt"])
        if "_map" in data:
            return {from_json(k): from_json(v) for k, v in data["_map"]}
        cls = _TYPES[data["_type"]]
        return cls(**{k: from_json(v) for k, v in data.items() if k != "_type"})
    return data


@dataclass(frozen=True)
class Envelope:
    """One message as the outbox holds it: what to render and for which channel.

    ``event_id`` is the delivery id: one per outbox row (event x rule x channel, or digest x period
    x channel), the same on every retry, so a receiver drops the duplicate a killed run may send.
    """

    event_id: str
    created_at: dt.datetime
    channel: str
    body: AlertEvent | FoldedAlerts | Digest
    rule: str | None = None
    digest: str | None = None
    reason: str | None = None  # why the rule fired, e.g. "cost 121% over the key's median"


_TYPES["Envelope"] = Envelope
