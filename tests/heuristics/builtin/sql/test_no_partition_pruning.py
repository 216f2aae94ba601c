"""sql_no_partition_pruning: partitions read against a filter that should have pruned them."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import no_partition_pruning as check
from heuristics.result import Severity
from tests.heuristics.builtin.sql.plans import execution, filtered_scan, judge, node, sql_app

ON_TS = "((isnotnull(event_ts#11) AND (event_ts#11 >= 2024-06-15 00:00:00)) AND (event_ts#11 < 2024-06-16 00:00:00))"
PUSHED_TS = "[IsNotNull(event_ts), GreaterThanOrEqual(event_ts,2024-06-15 00:00:00.0)]"


@pytest.mark.parametrize(
    ("partitions", "severity"),
    [
        (1, Severity.NONE),
        (2, Severity.LOW),
        (10, Severity.MODERATE),
        (100, Severity.SEVERE),
        (1000, Severity.CRITICAL),
    ],
)
def test_a_time_filter_on_data_partitioned_by_date(partitions: float, severity: Severity) -> None:
    result = judge(check, sql_app([filtered_scan(partitions, ON_TS, PUSHED_TS)]))
    assert result.severity == severity
    if severity:
        assert "event_date" in result.advice or severity == Severity.LOW
        assert "follow event_date" in result.title


@pytest.mark.parametrize(
    "condition",
    [
        "((event_date#13 = 2024-06-15) OR (spend#10 > 100.0))",
        "(event_date#13 = cast(event_ts#11 as date))",
    ],
)
def test_a_partition_column_mixed_with_data_columns_did_not_prune(condition: str) -> None:
    result = judge(check, sql_app([filtered_scan(45, condition)]))
    assert result.severity == Severity.MODERATE
    assert "expression" in result.title and "event_date" in result.advice


def test_a_python_udf_over_the_partition_column_did_not_prune() -> None:
    ex = filtered_scan(45, "pythonUDF0#40: boolean")
    # Filter <- BatchEvalPython(is_june(event_date)) <- ColumnarToRow <- Scan
    nodes = list(ex.nodes)
    nodes[2] = nodes[2]._replace(children=(5,), detail={"Condition": "pythonUDF0#40: boolean"})
    udf = node(
        5,
        "BatchEvalPython",
        (3,),
        {"number of output rows": 1e6},
        {"Arguments": "[is_june(event_date#13)#39], [pythonUDF0#40]"},
    )
    ex = execution(0, [n._replace(parents=()) for n in nodes] + [udf], "june")
    result = judge(check, sql_app([ex]))
    assert result.severity == Severity.MODERATE and "Python" in result.advice


def test_pruned_scans_and_other_filters_are_left_alone() -> None:
    pruned = filtered_scan(
        1,
        "(spend#10 > 1.0)",
        partition_filters="[isnotnull(event_date#13), (event_date#13 = 2024-06-15)]",
    )
    dynamic = filtered_scan(
        45,
        ON_TS,
        PUSHED_TS,
        partition_filters="[dynamicpruningexpression(event_date#13 IN dynamicpruning#50)]",
    )
    data_only = filtered_scan(45, "(spend#10 > 100.0)", "[GreaterThan(spend,100.0)]")
    for ex in (pruned, dynamic, data_only):
        assert judge(check, sql_app([ex])).severity == Severity.NONE
