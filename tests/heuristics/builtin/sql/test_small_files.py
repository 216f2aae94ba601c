"""sql_small_files_read and sql_small_files_written: files beyond what the bytes need."""

from __future__ import annotations

import pytest

from heuristics.builtin.sql import small_files_read, small_files_written
from heuristics.result import Severity
from tests.heuristics.builtin.sql.plans import (
    GIB,
    MIB,
    execution,
    judge,
    node,
    scan,
    sql_app,
    write,
)


@pytest.mark.parametrize(
    ("files", "severity"),
    [
        (100, Severity.NONE),
        (101, Severity.LOW),
        (1001, Severity.MODERATE),
        (10_001, Severity.SEVERE),
        (100_001, Severity.CRITICAL),
    ],
)
def test_read_severity_follows_the_excess_files(files: int, severity: Severity) -> None:
    ex = execution(0, [node(0, "HashAggregate", (1,)), scan(1, files=files, nbytes=5.8 * MIB)])
    result = judge(small_files_read, sql_app([ex]))
    assert result.severity == severity
    if severity:
        assert result.value == files - 1
        assert ".coalesce(1)" in (result.details.rows[0][6] if result.details else "")


def test_big_files_and_one_file_per_partition_are_not_small_files() -> None:
    big = execution(0, [node(0, "Project", (1,)), scan(1, files=5000, nbytes=5000 * 20 * MIB)])
    assert judge(small_files_read, sql_app([big])).severity == Severity.NONE
    per_partition = execution(
        0, [node(0, "Project", (1,)), scan(1, files=2000, nbytes=MIB, partitions=2000)]
    )
    assert judge(small_files_read, sql_app([per_partition])).severity == Severity.NONE


def test_the_target_file_size_is_the_applications_max_partition_bytes() -> None:
    # 1,100 files of 8 MiB: 69 would do at the 128 MB default, 138 at a 64 MB target
    ex = execution(0, [node(0, "Project", (1,)), scan(1, files=1100, nbytes=1100 * 8 * MIB)])
    default = judge(small_files_read, sql_app([ex]))
    assert (default.severity, default.value) == (Severity.MODERATE, 1100 - 69)
    smaller = judge(
        small_files_read, sql_app([ex], props={"spark.sql.files.maxPartitionBytes": "64m"})
    )
    assert (smaller.severity, smaller.value) == (Severity.LOW, 1100 - 138)


def test_a_write_after_repartition_gets_the_rebalance_fix() -> None:
    result = judge(small_files_written, sql_app([write(1200, 7.2 * MIB, shuffle_partitions=1200)]))
    assert result.severity == Severity.MODERATE and result.value == 1199
    assert "coalesce(1)" in result.advice and "REBALANCE" in result.advice
    assert "explicit repartition" in result.advice


def test_a_partitioned_write_needs_one_file_per_partition() -> None:
    assert (
        judge(small_files_written, sql_app([write(1000, 50 * MIB, parts=1000)])).severity
        == Severity.NONE
    )
    many = judge(small_files_written, sql_app([write(200_000, 10 * GIB, parts=1000)]))
    assert many.severity == Severity.CRITICAL and "partitionBy" in many.advice


def test_writes_into_the_same_place_add_up() -> None:
    loop = [write(60, 6 * MIB, eid=i) for i in range(10)]  # 10 appends of 60 small files
    result = judge(small_files_written, sql_app(loop))
    assert result.severity == Severity.LOW and result.value == 599
    assert "10 writes" in result.title
    apart = [write(60, 6 * MIB, target=f"file:/out/day={i}", eid=i) for i in range(10)]
    assert judge(small_files_written, sql_app(apart)).severity == Severity.NONE
