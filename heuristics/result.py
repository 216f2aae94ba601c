"""What a heuristic returns: severities, findings and their stored form (the thresholds a
heuristic rates its measure by are :mod:`heuristics.thresholds`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class Severity(IntEnum):
    """How bad a finding is; an application's severity is the max over its findings."""

    NONE = 0
    LOW = 1
    MODERATE = 2
    SEVERE = 3
    CRITICAL = 4


#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes through
#: the enum metaclass's attribute hook (about ten times a plain attribute's cost).
_NONE = Severity.NONE


@dataclass(frozen=True)
class Impact:
    """Estimated cost of a finding; `formula` says in one line how it was computed."""

    wall_seconds: float | None
    core_hours: float | None
    formula: str

    def to_dict(self) -> dict[str, object]:
        """JSON-able form."""
        return {
            "wall_seconds": self.wall_seconds,
            "core_hours": self.core_hours,
            "formula": self.formula,
        }


@dataclass(frozen=True)
class Details:
    """A small table of JSON-able scalars shown under a finding."""

    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]


#: A suggested setting for the next run: (Spark property, value), e.g.
#: ("spark.sql.shuffle.partitions", "400").
Setting = tuple[str, str]
#: A stage attempt a finding is about: (stage id, attempt id).
StageRef = tuple[int, int]
#: An outcome rated by the rules (:meth:`Outcome.rate`): severity, pattern severity, cost cap,
#: settings and stages.
Rated = tuple[Severity, Severity, Severity | None, tuple[Setting, ...], tuple[StageRef, ...]]


@dataclass(frozen=True)
class HeuristicResult:
    """The outcome of one heuristic on one application.

    ``severity`` is what the finding is rated: ``pattern_severity`` (how bad the pattern is, by
    the heuristic's own thresholds) capped by ``cost_cap`` (the most severe level its cost allows,
    see :mod:`heuristics.costcap`; None when no cap applied). ``conf`` holds the settings this
    finding suggests for the next run (empty when no setting is the fix) and ``stages`` the stage
    attempts it is about, worst first.
    """

    name: str
    severity: Severity
    value: float | None
    title: str
    thresholds: Mapping[str, object]
    details: Details | None
    advice: str
    impact: Impact | None
    pattern_severity: Severity | None = None  # None: the same as severity
    cost_cap: Severity | None = None
    conf: tuple[Setting, ...] = ()
    stages: tuple[StageRef, ...] = ()

    def __post_init__(self) -> None:
        if self.pattern_severity is None:
            object.__setattr__(self, "pattern_severity", self.severity)

    @property
    def capped(self) -> bool:
        """True when the cost cap lowered the severity below the pattern's."""
        return self.cost_cap is not None and self.severity < (self.pattern_severity or 0)

    def cap_note(self) -> str:
        """ "SEVERE pattern, capped to LOW by its cost of 35 s" when the cap lowered the severity,
        else ""."""
        if not self.capped:
            return ""
        pattern = Severity(self.pattern_severity or 0).name
        return f"{pattern} pattern, capped to {self.severity.name} by its cost of {cost_text(self.impact)}"

    def to_dict(self, thresholds: bool = True) -> dict[str, object]:
        """JSON-able form; inverse of from_dict. Storage leaves out the thresholds
        (``thresholds=False``): they are the params of the config the results were computed
        under, which the reader has."""
        out = stored_form(
            self.name,
            self.severity,
            self.pattern_severity or 0,
            self.cost_cap,
            self.value,
            self.title,
            self.details,
            self.advice,
            self.impact,
            self.conf,
            self.stages,
        )
        if thresholds:
            out["thresholds"] = dict(self.thresholds)
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], thresholds: Mapping[str, object] | None = None
    ) -> HeuristicResult:
        """Rebuild a result stored with to_dict; ``thresholds`` when the stored form has none.

        Documents stored before a field existed read with its default: the pattern severity is
        the severity, no cap, no settings and no stages.
        """
        details = data.get("details")
        impact = data.get("impact")
        stored = data.get("thresholds")
        severity = Severity(data["severity"])
        pattern = data.get("pattern_severity")
        cap = data.get("cost_cap")
        return cls(
            name=data["name"],
            severity=severity,
            value=data.get("value"),
            title=data["title"],
            thresholds=dict(stored) if stored is not None else dict(thresholds or {}),
            details=None
            if details is None
            else Details(
                columns=tuple(details["columns"]),
                rows=tuple(tuple(row) for row in details["rows"]),
            ),
            advice=data.get("advice", ""),
            impact=None
            if impact is None
            else Impact(impact["wall_seconds"], impact["core_hours"], impact["formula"]),
            pattern_severity=severity if pattern is None else Severity(pattern),
            cost_cap=None if cap is None else Severity(cap),
            conf=tuple((str(k), str(v)) for k, v in data.get("conf") or ()),
            stages=tuple((int(s), int(a)) for s, a in data.get("stages") or ()),
        )


def stored_form(
    name: str,
    severity: int,
    pattern_severity: int,
    cost_cap: int | None,
    value: float | None,
    title: str,
    details: Details | None,
    advice: str,
    impact: Impact | None,
    conf: tuple[Setting, ...],
    stages: tuple[StageRef, ...],
) -> dict[str, object]:
    """The stored (JSON-able) form of a result's fields, without the thresholds: what
    :meth:`HeuristicResult.to_dict` gives, and what the registry builds straight from an
    outcome when only the stored form is wanted (:meth:`heuristics.registry.Registry.run_stored`)."""
    return {
        "name": name,
        "severity": int(severity),
        "pattern_severity": int(pattern_severity),
        "cost_cap": None if cost_cap is None else int(cost_cap),
        "value": _json_float(value),
        "title": title,
        "details": None
        if details is None
        else {
            "columns": list(details.columns),
            # A non-finite float cell is stored as None, as _json_float does for the value.
            "rows": [
                [None if isinstance(v, float) and not math.isfinite(v) else v for v in row]
                for row in details.rows
            ],
        },
        "advice": advice,
        "impact": None if impact is None else impact.to_dict(),
        "conf": [[key, value] for key, value in conf] if conf else [],
        "stages": [[stage, attempt] for stage, attempt in stages] if stages else [],
    }


def cost_text(impact: Impact | None) -> str:
    """An impact in words: "35 s", "1.2 core-hours", "35 s and 1.2 core-hours", or "unknown"."""
    if impact is None:
        return "unknown"
    parts = []
    if impact.wall_seconds is not None and math.isfinite(impact.wall_seconds):
        parts.append(_fmt_seconds(impact.wall_seconds))
    if impact.core_hours is not None and math.isfinite(impact.core_hours):
        parts.append(f"{impact.core_hours:.2g} core-hours")
    return " and ".join(parts) or "unknown"


def _fmt_seconds(seconds: float) -> str:
    if seconds <= 0:
        return "0 s"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def rank_key(result: HeuristicResult) -> tuple[object, ...]:
    """Sort key that puts the finding most worth fixing first: by severity, then by how bad the
    pattern is (so a capped SEVERE pattern comes before a LOW one), then by wall-time cost and
    core-hours, then by name."""
    impact = result.impact
    wall = impact.wall_seconds if impact is not None else None
    core = impact.core_hours if impact is not None else None
    return (
        -int(result.severity),
        -int(result.pattern_severity or 0),
        -(wall if wall is not None and math.isfinite(wall) else 0.0),
        -(core if core is not None and math.isfinite(core) else 0.0),
        result.name,
    )


def _json_float(value: float | None) -> float | None:
    # JSON has no inf/NaN; an unbounded ratio is stored as None rather than breaking the encoder.
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value


def app_severity(results: Iterable[HeuristicResult]) -> Severity:
    """The application's severity: the worst of its results (NONE if there are none)."""
    return max((r.severity for r in results), default=Severity.NONE)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What a heuristic's ``evaluate`` returns: the finding without the parts the registry
    fills in (the heuristic's name, its params as thresholds, and the severity rules).

    ``severity`` is how bad the pattern is; the registry caps it by the cost in ``impact``
    unless ``cost_capped`` is False (a finding whose cost is not time, such as a lost result).
    """

    severity: Severity
    value: float | None
    title: str
    details: Details | None = None
    advice: str = ""
    impact: Impact | None = None
    conf: tuple[Setting, ...] = ()
    stages: tuple[StageRef, ...] = ()
    cost_capped: bool = True

    def rate(self, cost_cap: Severity | None) -> Rated:
        """The rules: the severity is the pattern's capped by ``cost_cap`` (None: no cap, nor when
        the outcome is not cost-capped), the cap kept when the pattern is above NONE, and the
        settings and stages (as str and int pairs) only when the severity is."""
        # Severity(x) of a Severity is x itself: the conversions only for plain ints.
        pattern = self.severity if type(self.severity) is Severity else Severity(self.severity)
        if cost_cap is None or not self.cost_capped:
            severity, cap = pattern, None
        else:
            cap = cost_cap if type(cost_cap) is Severity else Severity(cost_cap)
            severity = min(pattern, cap)
        if pattern == 0:
            cap = None
        if severity == 0:
            return severity, pattern, cap, (), ()
        conf = tuple((str(k), str(v)) for k, v in self.conf) if self.conf else ()
        stages = tuple((int(s), int(a)) for s, a in self.stages) if self.stages else ()
        return severity, pattern, cap, conf, stages

    def to_result(
        self,
        name: str,
        thresholds: Mapping[str, object],
        cost_cap: Severity | None = None,
    ) -> HeuristicResult:
        """The stored result, enforcing the rules: the severity is the pattern's capped by
        ``cost_cap`` (None: no cap); advice, settings, impact and stages only above NONE."""
        severity, pattern, cap, conf, stages = self.rate(cost_cap)
        reported = severity > 0
        return HeuristicResult(
            name=name,
            severity=severity,
            value=self.value,
            title=self.title,
            thresholds=thresholds,
            details=self.details,
            advice=self.advice if reported else "",
            impact=self.impact if reported else None,
            pattern_severity=pattern,
            cost_cap=cap,
            conf=conf,
            stages=stages,
        )


def make_result(
    *,
    severity: Severity,
    value: float | None,
    title: str,
    details: Details | None = None,
    advice: str = "",
    impact: Impact | None = None,
    conf: Iterable[Setting] = (),
    stages: Iterable[StageRef] = (),
    cost_capped: bool = True,
) -> Outcome:
    """A heuristic's outcome: ``severity`` is how bad the pattern is, ``conf`` the settings for
    the next run (ordered (key, value) pairs; empty when no setting is the fix), ``stages`` the
    (stage id, attempt id) pairs the finding is about, worst first. The registry adds name and
    thresholds, caps the severity by the cost in ``impact`` (unless ``cost_capped`` is False),
    and drops advice, settings, impact and stages at NONE."""
    return Outcome(
        severity=severity,
        value=value,
        title=title,
        details=details,
        advice=advice,
        impact=impact,
        conf=tuple(conf),
        stages=tuple(stages),
        cost_capped=cost_capped,
    )


def no_data(title: str) -> Outcome:
    """A NONE outcome whose title says what data was missing."""
    return Outcome(severity=_NONE, value=None, title=title)
