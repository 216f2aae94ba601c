"""Spark size parsing and defaults."""

from __future__ import annotations

import pytest

from heuristics.sparkconf import (
    GIB,
    MIB,
    driver_memory_bytes,
    driver_overhead_bytes,
    executor_cores,
    executor_memory_bytes,
    executor_overhead_bytes,
    is_local_mode,
    parse_size_bytes,
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
