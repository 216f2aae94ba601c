"""Spark's formatting helpers, on values whose Java rendering is known."""

import pytest

from fetcher.eventlog.formats import bytes_string, java_integer, java_number, ms_duration, shs_date
from fetcher.eventlog.scalaorder import int_map_order
from fetcher.eventlog.sql.graph import string_value


def test_shs_dates():
    assert shs_date(1795971819601) == "2026-11-29T17:03:39.601GMT"
    assert shs_date(-1) == "1969-12-31T23:59:59.999GMT"  # new Date(-1): an unfinished app's end
    assert shs_date(0) == "1970-01-01T00:00:00.000GMT"


@pytest.mark.parametrize(
    "ms,text",
    [
        (0, "0 ms"),
        (999, "999 ms"),
        (1000, "1.0 s"),
        (5500, "5.5 s"),
        (1250, "1.3 s"),  # Java's %.1f rounds HALF_UP on 1.25 (Python's '%.1f' gives 1.2)
        (1050, "1.0 s"),  # 1.05f widens to the double 1.0499999523162842: Java prints 1.0
        (59_999, "60.0 s"),
        (60_000, "1.0 m"),
        (90_000, "1.5 m"),
        (3_600_000, "1.00 h"),
        (5_400_000, "1.50 h"),
    ],
)
def test_ms_duration(ms, text):
    # (checked against jshell's String.format on 35,000 values while writing this)
    assert ms_duration(ms) == text


@pytest.mark.parametrize(
    "size,text",
    [
        (0, "0.0 B"),
        (2047, "2047.0 B"),
        (2048, "2.0 KiB"),
        (22_963_200, "21.9 MiB"),
        (3 * 2**30, "3.0 GiB"),
        (2**21 - 1, "2048.0 KiB"),
        (1_572_864 * 2, "3.0 MiB"),
        (2_149_581, "2.1 MiB"),
        (2_149_580, "2.0 MiB"),  # 2.05 MiB = 2,149,580.8 B
    ],
)
def test_bytes_string(size, text):
    assert bytes_string(size) == text


def test_numbers():
    assert java_integer(2_000_000) == "2,000,000"
    assert java_integer(-1234) == "-1,234"
    assert java_number(1.2) == "1.2" and java_number(12345.6) == "12,345.6"
    assert java_number(0.0) == "0" and java_number(3.0) == "3"


def test_sql_metric_strings():
    assert string_value("sum", [1, 2, 3], []) == "6"
    assert string_value("size", [100], []) == "100.0 B"
    assert string_value("timing", [], []) == "0 ms"
    assert string_value("timing", [-1, 5], []) == "5 ms"  # -1: an invalid (unset) task value
    assert string_value("timing", [217, 525, 1500, 3258], [1500, 0, 0, 0]) == (
        "total (min, med, max (stageId: taskId))\n5.5 s (217 ms, 1.5 s, 3.3 s (stage 0.0: task 0))"
    )
    assert string_value("nsTiming", [2_000_000, 4_000_000], []) == (
        "total (min, med, max (stageId: taskId))\n6 ms (2 ms, 4 ms, 4 ms (driver))"
    )
    assert string_value("average", [12, 0, 30], [30, 1, 0, 7]) == (
        "(min, med, max (stageId: taskId)):\n(1.2, 3, 3 (stage 1.0: task 7))"
    )


def test_scala_int_map_iteration_order():
    # observed on a real SHS: successJobIds of executions with more than four jobs
    assert int_map_order([4, 5, 6, 7, 8, 9]) == [5, 6, 9, 7, 8, 4]
    assert int_map_order(range(1, 8)) == [5, 1, 6, 2, 7, 3, 4]
    assert int_map_order([61, 62, 63, 64, 65]) == [61, 65, 64, 63, 62]
    assert int_map_order([3, 1, 2]) == [3, 1, 2]  # up to four: insertion order
