"""sql_python_udf: the share of a query's task time in row-at-a-time Python workers."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import python_udf as check
from heuristics.result import Severity
from tests.heuristics.builtin.sql.plans import judge, python_udf


@pytest.mark.parametrize(
    ("share", "severity"),
    [
        (0.09, Severity.NONE),
        (0.10, Severity.LOW),
        (0.25, Severity.MODERATE),
        (0.50, Severity.SEVERE),
        (0.75, Severity.CRITICAL),
        (1.2, Severity.CRITICAL),
    ],
)
def test_severity_follows_the_share_of_the_query(share: float, severity: Severity) -> None:
    result = judge(check, python_udf(share * 100_000, 100_000))
    assert result.severity == severity
    if severity:
        assert result.value == pytest.approx(min(1.0, share))
        assert "normalize_email" in result.title


def test_the_fix_is_built_ins_or_arrow() -> None:
    result = judge(check, python_udf(90_000, 100_000))
    assert "pandas_udf" in result.advice and "useArrow=True" in result.advice
    assert result.impact is not None and result.impact.core_hours == pytest.approx(90_000 / 3.6e6)


def test_arrow_udfs_are_the_fix_and_never_flagged() -> None:
    assert (
        judge(check, python_udf(90_000, 100_000, name="ArrowEvalPython")).severity == Severity.NONE
    )


def test_a_failed_query_and_a_server_without_python_timing_stay_low() -> None:
    assert judge(check, python_udf(90_000, 100_000, status="FAILED")).severity == Severity.LOW
    # no "time to run Python workers" (before Spark 4.0): the stage's time is an upper bound
    assert judge(check, python_udf(-1, 100_000)).severity == Severity.LOW


def test_arrow_is_a_setting_from_spark_3_5() -> None:
    import dataclasses

    app = python_udf(90_000, 100_000)
    assert judge(check, dataclasses.replace(app, spark_version="4.0.1")).conf == (
        ("spark.sql.execution.pythonUDF.arrow.enabled", "true"),
    )
    assert judge(check, dataclasses.replace(app, spark_version="3.4.2")).conf == ()
