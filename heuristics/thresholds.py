"""Severity thresholds: the four levels a measured value is rated by, and their direction."""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import ClassVar

from heuristics.result import Severity

ASCENDING = "ascending"
DESCENDING = "descending"
#: Names of the levels a threshold sets, from the enum (the Thresholds fields carry the same names).
LEVELS: tuple[str, ...] = tuple(s.name.lower() for s in Severity if s is not Severity.NONE)
#: The severity of a value that reaches the first n levels, by n.
_BY_LEVELS: tuple[Severity, ...] = tuple(Severity)


@dataclass(frozen=True)
class Thresholds:
    """Four severity boundaries; "ascending" means bad when high, "descending" bad when low."""

    low: float
    moderate: float
    severe: float
    critical: float
    direction: str = ASCENDING
    #: (set by __post_init__; not a field)
    _bounds: ClassVar[tuple[float, float, float, float]]

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
        # The levels as severity_of searches them: ascending bounds, negated when descending.
        sign = 1.0 if self.direction == ASCENDING else -1.0
        object.__setattr__(self, "_bounds", tuple(sign * v for v in self.values()))

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

        The levels are ordered (checked at construction): the number of levels the value
        reaches (``>=`` ascending, ``<=`` descending, which is ``>=`` of the negated value and
        levels) is the highest one hit.
        """
        if value is None or value != value:  # None or NaN
            return Severity.NONE
        if self.direction == ASCENDING:
            return _BY_LEVELS[bisect_right(self._bounds, value)]
        return _BY_LEVELS[bisect_right(self._bounds, -value)]

    def to_dict(self) -> dict[str, object]:
        """JSON-able form including the direction."""
        return {
            "low": self.low,
            "moderate": self.moderate,
            "severe": self.severe,
            "critical": self.critical,
            "direction": self.direction,
        }
