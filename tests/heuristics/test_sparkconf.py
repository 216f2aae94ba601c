"""Spark size parsing and defaults."""

from __future__ import annotations

import pytest

from heuristics.sparkconf import (
    GIB,
    MIB,
    default_value,
    driver_memory_bytes,
    driver_overhead_bytes,
    effective_bool,
    effective_bytes,
    effective_float,
    executor_cores,
    executor_memory_bytes,
    executor_overhead_bytes,
    fmt_size_setting,
    is_local_mode,
    parse_size_bytes,
    version_tuple,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512m", 512 * MIB),
        ("4g", 4 * GIB),
        ("4G", 4 * GIB),
        ("1t", 1024 * GIB),
        ("2048", 2048 * MIB),
        ("100k", 100 * 1024),
        ("1gb", GIB),
        ("1.5g", int(1.5 * GIB)),
        ("lots", None),
        ("4x", None),
        (None, None),
    ],
)
def test_parse_size_bytes(text: str | None, expected: int | None) -> None:
    assert parse_size_bytes(text) == expected


def test_bare_number_uses_default_unit() -> None:
    assert parse_size_bytes("2048", default_unit="b") == 2048


def test_memory_defaults_and_overhead() -> None:
    assert executor_memory_bytes({}) == GIB
    assert driver_memory_bytes({"spark.driver.memory": "2g"}) == 2 * GIB
    assert executor_overhead_bytes({}) == 384 * MIB
    assert executor_overhead_bytes({"spark.executor.memory": "10g"}) == GIB
    assert executor_overhead_bytes({"spark.executor.memoryOverhead": "3g"}) == 3 * GIB
    assert driver_overhead_bytes({"spark.driver.memory": "8g"}) == int(0.8 * GIB)


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"spark.executor.cores": "5"}, 5),
        ({"spark.master": "yarn"}, 1),
        ({"spark.master": "local[3]"}, 3),
        ({"spark.master": "local"}, 1),
        ({"spark.master": "spark://h:7077"}, None),
        ({"spark.master": "local-cluster[4,2,1024]"}, 2),
    ],
)
def test_executor_cores(props: dict[str, str], expected: int | None) -> None:
    assert executor_cores(props) == expected


def test_is_local_mode() -> None:
    assert is_local_mode({"spark.master": "local[*]"})
    assert not is_local_mode({"spark.master": "yarn"})
    assert not is_local_mode({})
    assert is_local_mode({"spark.master": "local"})
    assert is_local_mode({"spark.master": "local[4,2]"})
    # local-cluster runs real executor JVMs: not local mode.
    assert not is_local_mode({"spark.master": "local-cluster[2,1,1024]"})


def test_the_parsed_figures_equal_the_rules_and_are_parsed_once() -> None:
    from heuristics.sparkconf import SparkConf
    from tests.heuristics.builders import make_app

    props = {
        "spark.master": "yarn",
        "spark.executor.memory": "6g",
        "spark.executor.memoryOverheadFactor": "0.2",
        "spark.driver.memory": "2g",
        "spark.driver.memoryOverhead": "1g",
        "spark.executor.cores": "4",
        "spark.driver.cores": "2",
    }
    conf = SparkConf.of(props)
    assert conf.local is False
    assert conf.executor_memory_bytes == executor_memory_bytes(props) == 6 * GIB
    assert conf.executor_overhead_bytes == executor_overhead_bytes(props) == int(0.2 * 6 * GIB)
    assert conf.driver_memory_bytes == 2 * GIB and conf.driver_overhead_bytes == GIB
    assert conf.executor_cores == 4 and conf.driver_cores == 2
    app = make_app(props=props)
    assert app.conf == conf and app.conf is app.conf  # computed once per application


AQE = "spark.sql.adaptive.enabled"


@pytest.mark.parametrize(
    ("version", "aqe"),
    [
        ("2.4.8", "false"),  # older than the first listed version: its first default
        ("3.0.3", "false"),
        ("3.1.2", "false"),
        ("3.2.0", "true"),  # on by default since 3.2
        ("3.5.1", "true"),
        ("4.0.1", "true"),
        ("4.1.0-preview1", "true"),
        (None, "true"),  # unknown: the newest default
        ("garbage", "true"),
    ],
)
def test_defaults_follow_the_spark_version(version: str | None, aqe: str) -> None:
    assert default_value(AQE, version) == aqe
    assert effective_bool({}, AQE, version) == (aqe == "true")
    # skew-join handling has been on by default in every version that has it
    assert default_value("spark.sql.adaptive.skewJoin.enabled", version) == "true"


def test_the_application_setting_wins_and_sizes_parse_as_bytes() -> None:
    props = {AQE: "FALSE", "spark.sql.adaptive.advisoryPartitionSizeInBytes": "32m"}
    assert effective_bool(props, AQE, "4.0.1") is False
    assert (
        effective_bytes(props, "spark.sql.adaptive.advisoryPartitionSizeInBytes", None) == 32 * MIB
    )
    threshold = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
    assert effective_bytes({}, threshold, "3.3.0") == 256 * MIB
    assert effective_bytes({threshold: "1048576"}, threshold, "3.3.0") == MIB  # bare: bytes
    assert effective_bytes({threshold: "nonsense"}, threshold, "3.3.0") == 256 * MIB
    factor = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
    assert effective_float({factor: "x"}, factor, None) == 5.0
    assert default_value("spark.no.such.setting", "4.0.1") is None


@pytest.mark.parametrize(
    ("num_bytes", "text"),
    [
        (64 * MIB, "64m"),
        (64 * MIB + 1, "65m"),
        (1500 * 1024, "2m"),
        (512 * 1024, "512k"),
        (10, "10"),
    ],
)
def test_sizes_are_written_as_spark_takes_them(num_bytes: int, text: str) -> None:
    assert fmt_size_setting(num_bytes) == text


@pytest.mark.parametrize(
    ("version", "expected"),
    [("3.5.1", (3, 5)), ("4.0.0-preview", (4, 0)), ("", None), (None, None)],
)
def test_version_tuple(version: str | None, expected: tuple[int, int] | None) -> None:
    assert version_tuple(version) == expected
