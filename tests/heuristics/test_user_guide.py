"""docs/heuristics.md stays true: every heuristic, every parameter and its default, and the cost
caps in force by default are in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from heuristics.costcap import DEFAULT_COST_CAPS
from heuristics.params import params_to_dict
from heuristics.registry import build_registry, builtin_heuristics

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "heuristics.md").read_text()


def _levels(value: dict) -> str:
    return " / ".join(f"{value[level]:g}" for level in ("low", "moderate", "severe", "critical"))


@pytest.mark.parametrize("entry", build_registry({}).entries, ids=lambda e: e.name)
def test_every_parameter_is_documented_with_its_default(entry: object) -> None:
    name = entry.name  # type: ignore[attr-defined]
    sections = {s.split("\n", 1)[0]: s for s in GUIDE.split("\n### ")[1:]}
    body = next((s for head, s in sections.items() if head.endswith(f"(`{name}`)")), None)
    assert body is not None, f"no section for {name}"
    for key, value in params_to_dict(entry.params).items():  # type: ignore[attr-defined]
        shown = (
            _levels(value)
            if isinstance(value, dict)
            else f"{value:g}"
            if isinstance(value, float)
            else str(value)
        )
        assert f"| `{key}` | {shown}" in body, (name, key, shown)


def test_every_heuristic_has_a_section() -> None:
    assert {h.name for h in builtin_heuristics()} <= {
        line.rsplit("(`", 1)[1].rstrip("`)")
        for line in GUIDE.splitlines()
        if line.startswith("### ") and "(`" in line
    }


def test_the_default_cost_caps_are_the_documented_ones() -> None:
    wall, core = DEFAULT_COST_CAPS.wall_seconds, DEFAULT_COST_CAPS.core_hours
    assert (
        f"| `wall_seconds` (seconds of the run's wall time the pattern costs) | {wall.low:g} | "
        f"{wall.moderate:g} (5 min) | {wall.severe:g} (15 min) | {wall.critical:g} (1 h) |"
    ) in GUIDE
    assert (
        f"| `core_hours` (core-hours the pattern costs) | {core.low:g} | {core.moderate:g} | "
        f"{core.severe:g} | {core.critical:g} |"
    ) in GUIDE
