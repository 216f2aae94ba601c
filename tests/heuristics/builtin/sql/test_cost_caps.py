"""The SQL checks' findings are capped by their cost like every finding: the same pattern is LOW
when it costs seconds and keeps its severity when it costs hours."""

from __future__ import annotations

from heuristics.builtin.sql import python_udf
from heuristics.result import Severity
from tests.heuristics.builders import MIN_MS, run
from tests.heuristics.builtin.sql.plans import python_udf as udf_app


def test_a_cheap_critical_pattern_is_low_and_an_expensive_one_stays_critical() -> None:
    cheap = run(python_udf, udf_app(9_000, 10_000))  # 9 s of Python
    assert (cheap.pattern_severity, cheap.severity) == (Severity.CRITICAL, Severity.LOW)
    assert "capped to LOW" in cheap.cap_note()
    costly = run(python_udf, udf_app(90 * 60 * MIN_MS, 100 * 60 * MIN_MS))  # 90 core-hours
    assert costly.severity == Severity.CRITICAL and costly.impact is not None
    assert costly.impact.core_hours == 90
