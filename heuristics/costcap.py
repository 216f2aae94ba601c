"""Severity capped by cost: the most severe level a finding may take for what it costs.

A heuristic rates how bad a pattern is (its own thresholds on its measured value, whatever the
size of the application); the registry then caps that severity by the finding's cost, its
:class:`~heuristics.result.Impact` in wall time and core-hours. The same straggler is LOW when it
costs 35 seconds and CRITICAL when it costs an hour. A finding is as important as the larger of
its two costs, so the cap is the higher of the levels its wall time and its core-hours reach.
A finding without a known cost (no impact, or an impact without numbers) keeps its own severity.

The caps are thresholds in ``config/heuristics.yaml``: a shared ``cost_caps`` section and, per
heuristic, a ``cost_caps`` key overriding some of its levels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from heuristics.params import HeuristicsConfigError, coerce_thresholds
from heuristics.result import Impact, Severity
from heuristics.thresholds import Thresholds

#: The config key of the caps, at the top of the file and inside a heuristic's section.
COST_CAPS_KEY = "cost_caps"


@dataclass(frozen=True)
class CostCaps:
    """Cost thresholds: a finding whose cost reaches a level may be rated up to that level.

    Below ``low`` a finding is not reported at all (NONE); the defaults put ``low`` at 0 so that
    every detected pattern is reported.
    """

    wall_seconds: Thresholds
    core_hours: Thresholds

    def __post_init__(self) -> None:
        for field in ("wall_seconds", "core_hours"):
            thresholds: Thresholds = getattr(self, field)
            if min(thresholds.values()) < 0:
                raise ValueError(f"{field}: cost thresholds must be ≥ 0")

    def allowed(self, impact: Impact | None) -> Severity | None:
        """The most severe level the impact's cost allows; None when the cost is unknown."""
        if impact is None:
            return None
        # (the two costs written out: this runs for every finding with an impact)
        wall, core = impact.wall_seconds, impact.core_hours
        if wall is not None and not math.isnan(wall):
            by_wall = self.wall_seconds.severity_of(max(0.0, float(wall)))
            if core is None or math.isnan(core):
                return by_wall
            return max(by_wall, self.core_hours.severity_of(max(0.0, float(core))))
        if core is not None and not math.isnan(core):
            return self.core_hours.severity_of(max(0.0, float(core)))
        return None

    def to_dict(self) -> dict[str, object]:
        """JSON-able form (each dimension's thresholds with their direction)."""
        return {
            "wall_seconds": self.wall_seconds.to_dict(),
            "core_hours": self.core_hours.to_dict(),
        }


#: Production defaults. A finding costing under 5 minutes of wall time and under 2 core-hours is
#: at most LOW; MODERATE from 5 min or 2 core-hours, SEVERE from 15 min or 8 core-hours,
#: CRITICAL from 1 hour or 32 core-hours (docs/heuristics.md gives the reasoning).
DEFAULT_COST_CAPS = CostCaps(
    wall_seconds=Thresholds(0, 300, 900, 3600),
    core_hours=Thresholds(0, 2, 8, 32),
)

#: What each dimension means, for the help page.
COST_CAP_DOCS = {
    "wall_seconds": (
        "cap by wall-time cost: the most severe level a finding costing this many seconds may "
        "take; below low it is not reported (s; ascending)"
    ),
    "core_hours": (
        "cap by core-hours cost: the most severe level a finding costing this many core-hours "
        "may take; below low it is not reported (core-hours; ascending)"
    ),
}


def cost_caps_from_mapping(base: CostCaps, raw: object, path: str) -> CostCaps:
    """``base`` with the levels given in ``raw`` (a ``cost_caps`` section) changed; the result
    is validated: known keys, finite numbers ≥ 0, levels in order."""
    if raw is None:
        return base
    if not isinstance(raw, Mapping):
        raise HeuristicsConfigError(
            path, f"expected a mapping of wall_seconds, core_hours, got {raw!r}"
        )
    values = {"wall_seconds": base.wall_seconds, "core_hours": base.core_hours}
    for key, levels in raw.items():
        key_path = f"{path}.{key}"
        if key not in values:
            raise HeuristicsConfigError(key_path, "unknown cost (known: core_hours, wall_seconds)")
        values[key] = coerce_thresholds(values[key], levels, key_path, minimum=0.0)
    return CostCaps(**values)
