"""Severity thresholds: the four levels a measured value is rated by, and their direction."""

from __future__ import annotations

import math
from dataclasses import dataclass

from heuristics.result import Severity

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
