"""sql_row_explosion: join output rows over input rows, a hot key left to the skew checks."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import row_explosion as check
from heuristics.result import Severity
from tests.heuristics.builtin.sql.plans import join, judge, sql_app


@pytest.mark.parametrize(
    ("ratio", "severity"),
    [
        (1.99, Severity.NONE),
        (2, Severity.LOW),
        (5, Severity.MODERATE),
        (20, Severity.SEVERE),
        (100, Severity.CRITICAL),
    ],
)
def test_severity_follows_output_over_input_rows(ratio: float, severity: Severity) -> None:
    result = judge(check, sql_app([join(ratio * 110_000, 100_000, 10_000)]))
    assert result.severity == severity
    if severity:
        assert result.value == pytest.approx(ratio)
        assert "[region]" in result.title


def test_small_joins_are_not_judged() -> None:
    assert judge(check, sql_app([join(99_999, 100, 100)])).severity == Severity.NONE


def test_one_hot_key_is_skew_and_stays_low() -> None:
    hot = join(1e9, 1e6, 5e4, name="SortMergeJoin", task_med=10.0, task_max=55_000.0)
    result = judge(check, sql_app([hot]))
    assert result.severity == Severity.LOW and "hot key" in result.title
    spread = join(1e9, 1e6, 5e4, name="SortMergeJoin", task_med=900.0, task_max=1_000.0)
    assert judge(check, sql_app([spread])).severity == Severity.CRITICAL


def test_the_fix_reduces_one_side_per_key() -> None:
    result = judge(check, sql_app([join(1e7, 1e5, 1e4)]))
    assert "groupBy(region)" in result.advice and "left_semi" in result.advice
