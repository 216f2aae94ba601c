"""sql_smj_should_broadcast: the shuffled size of the large side, when the small one fits a broadcast."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import smj_should_broadcast as check
from heuristics.result import Severity
from tests.heuristics.builders import make_app
from tests.heuristics.builtin.sql.plans import GIB, MIB, judge, smj, sql_app


@pytest.mark.parametrize(
    ("large", "severity"),
    [
        (1 * MIB - 1, Severity.NONE),
        (1 * MIB, Severity.LOW),
        (1 * GIB - 1, Severity.LOW),
        (1 * GIB, Severity.MODERATE),
        (10 * GIB, Severity.SEVERE),
        (100 * GIB - 1, Severity.SEVERE),
        (100 * GIB, Severity.CRITICAL),
    ],
)
def test_severity_follows_the_bytes_a_broadcast_would_not_shuffle(
    large: float, severity: Severity
) -> None:
    result = judge(check, sql_app([smj(large, 0.5 * MIB)]))
    assert result.severity == severity
    if severity:
        assert result.value == large
        assert result.impact is not None and result.impact.core_hours


def test_the_fix_names_the_small_table_and_a_threshold_above_it() -> None:
    result = judge(check, sql_app([smj(20 * GIB, 3.1 * MIB)]))
    assert result.severity == Severity.SEVERE
    assert "BROADCAST(customers)" in result.advice
    assert "spark.sql.autoBroadcastJoinThreshold=10MB" in result.advice  # 10 MB >= 1.25 x 3.1 MiB
    assert result.details is not None and result.details.rows[0][2] == "SortMergeJoin"


def test_above_the_default_threshold_it_is_a_choice_of_settings_at_most_moderate() -> None:
    result = judge(check, sql_app([smj(500 * GIB, 40 * MIB)]))
    assert result.severity == Severity.MODERATE
    assert "spark.sql.autoBroadcastJoinThreshold=64MB" in result.advice


def test_a_side_too_big_for_the_heap_is_not_a_candidate() -> None:
    # 300 MiB is above the 256 MiB bound; 200 MiB is above 10 % of a 1 GiB driver heap
    assert judge(check, sql_app([smj(50 * GIB, 300 * MIB)])).severity == Severity.NONE
    small_driver = sql_app([smj(50 * GIB, 200 * MIB)], props={"spark.driver.memory": "1g"})
    assert judge(check, small_driver).severity == Severity.NONE


@pytest.mark.parametrize(
    ("join_type", "left", "right", "found"),
    [
        ("LeftOuter", 3 * MIB, 20 * GIB, False),  # a left outer join cannot build from the left
        ("LeftOuter", 20 * GIB, 3 * MIB, True),
        ("RightOuter", 3 * MIB, 20 * GIB, True),
        ("RightOuter", 20 * GIB, 3 * MIB, False),
        ("LeftAnti", 20 * GIB, 3 * MIB, True),
        ("FullOuter", 20 * GIB, 3 * MIB, False),
    ],
)
def test_only_a_side_spark_can_build_from_counts(
    join_type: str, left: float, right: float, found: bool
) -> None:
    result = judge(check, sql_app([smj(left, right, join_type)]))
    assert (result.severity > Severity.NONE) == found


def test_an_application_without_sql_has_nothing_to_judge() -> None:
    result = judge(check, make_app())
    assert result.severity == Severity.NONE and "SQL" in result.title


def test_the_setting_for_the_next_run_broadcasts_the_largest_small_side() -> None:
    joins = [smj(20 * GIB, 3 * MIB), smj(30 * GIB, 40 * MIB)._replace(execution_id=1)]
    result = judge(check, sql_app(joins))
    assert result.conf == (("spark.sql.autoBroadcastJoinThreshold", "64MB"),)
    with_aqe = sql_app(joins, props={"spark.sql.adaptive.autoBroadcastJoinThreshold": "-1"})
    assert (
        dict(judge(check, with_aqe).conf)["spark.sql.adaptive.autoBroadcastJoinThreshold"] == "64MB"
    )
    assert result.stages == ((0, 0),)  # the join's stage, its attempt
