"""What a heuristic returns: severities, thresholds, findings and their stored form."""

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


ASCENDING = "ascending"
DESCENDING = "descending"
#: Names of the levels a threshold sets, from the enum (the Thresholds fields carry the same names).
LEVELS: tuple[str, ...] = tuple(s.name.lower() for s in Severity if s is not Severity.NONE)


@dataclass(frozen=True)
class Thresholds:
    """Four severity boundaries; "ascending" means bad when high, "descending" bad when low."""

    low: float
    moderate: float
    severe: float
    critical: float
    direction: str = ASCENDING

    def __post_init__(self) -> None:
        if self.direction not in (ASCENDING, DESCENDING):
            raise ValueError(f"direction must be {ASCENDING!r} or {DESCENDING!r}")
        values = self.values()
        for level, value in zip(LEVELS, values, strict=True):
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
                raise ValueError(f"{level} must be a number, got {value!r}")
        # Store floats so that 2 and 2.0 give the same dict, JSON and config fingerprint.
        for level, value in zip(LEVELS, values, strict=True):
            object.__setattr__(self, level, float(value))
        bad = self.first_out_of_order()
        if bad is not None:
            word = "at least" if self.direction == ASCENDING else "at most"
            raise ValueError(f"{bad} must be {word} the previous level ({self.direction})")

    def values(self) -> tuple[float, float, float, float]:
        """The four boundaries from low to critical."""
        return (self.low, self.moderate, self.severe, self.critical)

    def first_out_of_order(self) -> str | None:
        """Name of the first level that breaks the order, or None when ordered."""
        values = self.values()
        for i in range(1, len(values)):
            prev, cur = values[i - 1], values[i]
            if (cur < prev) if self.direction == ASCENDING else (cur > prev):
                return LEVELS[i]
        return None

    def severity_of(self, value: float | None) -> Severity:
        """Severity of a measured value; None and NaN give NONE.

        The levels are ordered (checked at construction), so the first bound hit from the
        critical end down is the highest one hit.
        """
        if value is None or value != value:  # None or NaN
            return Severity.NONE
        if self.direction == ASCENDING:
            if value >= self.critical:
                return Severity.CRITICAL
            if value >= self.severe:
                return Severity.SEVERE
            if value >= self.moderate:
                return Severity.MODERATE
            return Severity.LOW if value >= self.low else Severity.NONE
        if value <= self.critical:
            return Severity.CRITICAL
        if value <= self.severe:
            return Severity.SEVERE
        if value <= self.moderate:
            return Severity.MODERATE
        return Severity.LOW if value <= self.low else Severity.NONE

    def to_dict(self) -> dict[str, object]:
        """JSON-able form including the direction."""
        return {
            "low": self.low,
            "moderate": self.moderate,
            "severe": self.severe,
            "critical": self.critical,
            "direction": self.direction,
        }


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


@dataclass(frozen=True)
class HeuristicResult:
    """The outcome of one heuristic on one application."""

    name: str
    severity: Severity
    value: float | None
    title: str
    thresholds: Mapping[str, object]
    details: Details | None
    advice: str
    impact: Impact | None

    def to_dict(self, thresholds: bool = True) -> dict[str, object]:
        """JSON-able form; inverse of from_dict. Storage leaves out the thresholds
        (``thresholds=False``): they are the params of the config the results were computed
        under, which the reader has."""
        out: dict[str, object] = {
            "name": self.name,
            "severity": int(self.severity),
            "value": _json_float(self.value),
            "title": self.title,
            "details": None
            if self.details is None
            else {
                "columns": list(self.details.columns),
                "rows": [[_json_scalar(v) for v in row] for row in self.details.rows],
            },
            "advice": self.advice,
            "impact": None if self.impact is None else self.impact.to_dict(),
        }
        if thresholds:
            out["thresholds"] = dict(self.thresholds)
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], thresholds: Mapping[str, object] | None = None
    ) -> HeuristicResult:
        """Rebuild a result stored with to_dict; ``thresholds`` when the stored form has none."""
        details = data.get("details")
        impact = data.get("impact")
        stored = data.get("thresholds")
        return cls(
            name=data["name"],
            severity=Severity(data["severity"]),
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
        )


def _json_float(value: float | None) -> float | None:
    # JSON has no inf/NaN; an unbounded ratio is stored as None rather than breaking the encoder.
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value


def _json_scalar(value: object) -> object:
    if isinstance(value, float):
        return _json_float(value)
    return value


def app_severity(results: Iterable[HeuristicResult]) -> Severity:
    """The application's severity: the worst of its results (NONE if there are none)."""
    return max((r.severity for r in results), default=Severity.NONE)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What a heuristic's ``evaluate`` returns: the finding without the parts the registry
    fills in (the heuristic's name, its params as thresholds, and the severity rules)."""

    severity: Severity
    value: float | None
    title: str
    details: Details | None = None
    advice: str = ""
    impact: Impact | None = None

    def to_result(self, name: str, thresholds: Mapping[str, object]) -> HeuristicResult:
        """The stored result, enforcing the rules: advice only above LOW, impact only above NONE."""
        severity = Severity(self.severity)
        return HeuristicResult(
            name=name,
            severity=severity,
            value=self.value,
            title=self.title,
            thresholds=thresholds,
            details=self.details,
            advice=self.advice if severity > Severity.LOW else "",
            impact=self.impact if severity > Severity.NONE else None,
        )


def make_result(
    *,
    severity: Severity,
    value: float | None,
    title: str,
    details: Details | None = None,
    advice: str = "",
    impact: Impact | None = None,
) -> Outcome:
    """A heuristic's outcome; the registry adds name and thresholds and drops advice at LOW and
    below and impact at NONE."""
    return Outcome(
        severity=severity, value=value, title=title, details=details, advice=advice, impact=impact
    )


def no_data(title: str) -> Outcome:
    """A NONE outcome whose title says what data was missing."""
    return Outcome(severity=Severity.NONE, value=None, title=title)
