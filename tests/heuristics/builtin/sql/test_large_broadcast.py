"""sql_large_broadcast: a broadcast's size, absolute and against the heap, pages discounted."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import large_broadcast as check
from heuristics.result import Severity
from tests.heuristics.builtin.sql.plans import GIB, MIB, broadcast, judge, sql_app

# the test application's heap: 4 GiB driver, 8 GiB executors -> 4 GiB; 5 % of it is 204.8 MiB


@pytest.mark.parametrize(
    ("nbytes", "severity"),
    [
        (64 * MIB - 1, Severity.NONE),
        (64 * MIB, Severity.LOW),
        (200 * MIB, Severity.LOW),
        (256 * MIB, Severity.MODERATE),  # also 6 % of the heap
        (1 * GIB, Severity.SEVERE),  # 25 % of the heap
        (2 * GIB, Severity.CRITICAL),  # 50 % of the heap
        (9 * GIB, Severity.CRITICAL),
    ],
)
def test_severity_is_the_higher_of_size_and_heap_share(nbytes: float, severity: Severity) -> None:
    result = judge(check, sql_app([broadcast(nbytes, rows=10_000_000)]))
    assert result.severity == severity


def test_the_heap_share_raises_a_broadcast_on_a_small_driver() -> None:
    app = sql_app([broadcast(100 * MIB, rows=1e6)], props={"spark.driver.memory": "512m"})
    result = judge(check, app)
    assert result.severity == Severity.MODERATE  # 20 % of 512 MiB
    assert "512.0 MiB heap" in result.title


def test_a_few_hundred_rows_in_one_memory_page_are_not_large() -> None:
    # 300 string-keyed rows report a 32 MiB page; 300 x 4 KiB is 1.2 MiB
    assert judge(check, sql_app([broadcast(32 * MIB, rows=300)])).severity == Severity.NONE
    # beyond one page the reported size counts as it is
    assert judge(check, sql_app([broadcast(100 * MIB, rows=300)])).severity == Severity.LOW


def test_more_rows_than_spark_can_hold_are_critical() -> None:
    assert (
        judge(check, sql_app([broadcast(100 * MIB, rows=400_000_000)])).severity
        == Severity.CRITICAL
    )


def test_the_fix_says_a_hint_forced_it_and_the_cost_is_the_driver_time() -> None:
    result = judge(check, sql_app([broadcast(300 * MIB, rows=1e6)]))
    assert "a hint forced it" in result.advice and "catalog" in result.advice
    assert result.impact is not None and result.impact.core_hours == pytest.approx(3000 / 3.6e6)


def test_a_threshold_set_too_high_gets_a_lower_one_and_a_hint_gets_none() -> None:
    raised = judge(
        check,
        sql_app(
            [broadcast(300 * MIB, rows=1e6)], props={"spark.sql.autoBroadcastJoinThreshold": "1g"}
        ),
    )
    assert raised.conf == (("spark.sql.autoBroadcastJoinThreshold", "256MB"),)
    assert "a hint forced it" not in raised.advice
    hinted = judge(check, sql_app([broadcast(300 * MIB, rows=1e6)]))
    assert hinted.conf == () and "a hint forced it" in hinted.advice
