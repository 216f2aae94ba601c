"""sql_cross_join: the row pairs a nested-loop join or cartesian product compares."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import cross_join as check
from heuristics.result import Severity
from tests.heuristics.builtin.sql.plans import judge, nested_loop, sql_app


@pytest.mark.parametrize(
    ("left", "right", "severity"),
    [
        (999, 1000, Severity.NONE),
        (1000, 1000, Severity.LOW),
        (4000, 2500, Severity.LOW),
        (10_000, 10_000, Severity.MODERATE),
        (100_000, 100_000, Severity.SEVERE),
        (1_000_000, 1_000_000, Severity.CRITICAL),
    ],
)
def test_severity_follows_the_pairs_compared(left: float, right: float, severity: Severity) -> None:
    result = judge(check, sql_app([nested_loop(left, right)]))
    assert result.severity == severity
    if severity:
        assert result.value == left * right


def test_a_one_row_side_attaches_a_total_and_is_not_a_cross_join() -> None:
    assert judge(check, sql_app([nested_loop(5_000_000, 1)])).severity == Severity.NONE


def test_cartesian_products_count_too() -> None:
    result = judge(check, sql_app([nested_loop(3000, 4000, name="CartesianProduct")]))
    assert result.severity == Severity.LOW and "CartesianProduct" in result.title


def test_not_in_over_nullable_columns_gets_the_not_exists_fix() -> None:
    ex = nested_loop(
        1e5, 1e4, condition="((a#1 = b#2) OR isnull((a#1 = b#2)))", join_type="LeftAnti"
    )
    result = judge(check, sql_app([ex]))
    assert result.severity == Severity.MODERATE
    assert "NOT EXISTS" in result.advice
