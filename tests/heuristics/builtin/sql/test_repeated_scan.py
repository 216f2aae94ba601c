"""sql_repeated_scan: the same data scanned by many queries without a cache."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import repeated_scan as check
from heuristics.result import Severity
from tests.heuristics.builtin.sql.plans import (
    MIB,
    execution,
    judge,
    kpi_queries,
    node,
    scan,
    sql_app,
)


@pytest.mark.parametrize(
    ("n", "severity"),
    [
        (2, Severity.NONE),
        (3, Severity.LOW),
        (5, Severity.MODERATE),
        (10, Severity.SEVERE),
        (25, Severity.CRITICAL),
    ],
)
def test_one_table_queries_over_the_same_data(n: int, severity: Severity) -> None:
    result = judge(check, sql_app(kpi_queries(n)))
    assert result.severity == severity
    if severity:
        assert result.value == n and ".cache()" in (
            result.details.rows[0][6] if result.details else ""
        )


def test_scans_inside_multi_table_queries_show_the_pattern_at_low() -> None:
    assert judge(check, sql_app(kpi_queries(10, with_join=True))).severity == Severity.LOW


def test_small_scans_different_partitions_and_cached_reads_do_not_count() -> None:
    assert judge(check, sql_app(kpi_queries(10, nbytes=0.5 * MIB))).severity == Severity.NONE
    days = [
        execution(
            i,
            [
                node(0, "HashAggregate", (1,)),
                scan(
                    1, extra={"PartitionFilters": f"[isnotnull(dt#1), (dt#1 = 2024-06-{i + 10})]"}
                ),
            ],
        )
        for i in range(10)
    ]
    assert judge(check, sql_app(days)).severity == Severity.NONE
    cached = [
        execution(
            i,
            [
                node(0, "InMemoryTableScan", (1,)),
                scan(1, location="file:/data/sales")._replace(in_cached_plan=True),
            ],
        )
        for i in range(10)
    ]
    assert judge(check, sql_app(cached)).severity == Severity.NONE
