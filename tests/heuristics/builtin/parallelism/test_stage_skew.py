"""stage_skew: max/median task run time per stage, every stage judged, capped by its cost."""

from __future__ import annotations

import pytest

from heuristics.builtin.parallelism import stage_skew
from heuristics.result import Severity
from tests.heuristics.builders import (
    AROUND_2_4_8_16,
    MIB,
    MIN_MS,
    curve,
    make_app,
    make_distribution,
    make_stage,
    run,
)

P = stage_skew.Params()
MEDIAN_MS = 2 * MIN_MS
SQL = {"spark.sql.shuffle.partitions": "200"}


def skew_app(
    ratio: float,
    median_ms: float = MEDIAN_MS,
    props: dict | None = None,
    version: str | None = "4.0.1",
    **metrics: tuple,
) -> object:
    dist = make_distribution(
        {"executor_run_time_ms": curve(median_ms / 2, median_ms, median_ms * ratio), **metrics}
    )
    stage = make_stage(3, distribution=dist, completion_time_ms=int(median_ms * ratio))
    app = make_app(stages=[stage, make_stage(4)], props=props)
    return app.__class__(**{**app.__dict__, "spark_version": version})


@pytest.mark.parametrize(("ratio", "expected"), AROUND_2_4_8_16)
def test_pattern_severity_at_thresholds(ratio: float, expected: Severity) -> None:
    result = run(stage_skew, skew_app(ratio), P, caps=None)
    assert result.pattern_severity == expected == result.severity
    assert result.value == pytest.approx(ratio)
    assert (result.advice != "") == (expected > Severity.NONE)
    assert (result.impact is None) == (expected == Severity.NONE)
    assert result.stages == (((3, 0),) if expected > Severity.NONE else ())
    if expected == Severity.NONE:
        assert result.title.startswith("No stage skew; largest: stage 3 max task")
    else:
        assert result.title.startswith("Stage 3 max task")


@pytest.mark.parametrize(
    ("median_ms", "severity"),
    [
        # 16x: CRITICAL pattern; the straggler costs 15 × median of wall time, 7 idle slots
        (45, Severity.LOW),  # a 0.7 s straggler in a seconds-long stage: still reported
        (15_000, Severity.LOW),  # 225 s of wall time, 0.44 core-hours
        (20_000, Severity.MODERATE),  # 300 s: the moderate cap
        (60_000, Severity.SEVERE),  # 900 s
        (240_000, Severity.CRITICAL),  # 1 h of wall time
    ],
)
def test_severity_is_capped_by_the_straggler_cost(median_ms: float, severity: Severity) -> None:
    result = run(stage_skew, skew_app(16.0, median_ms=median_ms), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity
    assert result.impact is not None
    assert result.impact.wall_seconds == pytest.approx(15 * median_ms / 1000)


def test_title_and_impact() -> None:
    result = run(stage_skew, skew_app(8.0), P)
    assert result.title == "Stage 3 max task 8.0× median (16.0 min vs 2.0 min)"
    assert result.impact is not None
    straggler_s = 7 * MEDIAN_MS / 1000
    assert result.impact.wall_seconds == pytest.approx(straggler_s)
    # 2 executors x 4 cores: 7 slots idle while the straggler runs
    assert result.impact.core_hours == pytest.approx(straggler_s * 7 / 3600)


@pytest.mark.parametrize(
    ("metrics", "cause"),
    [
        ({"input_bytes": curve(1, 100, 1000)}, "data skew"),
        ({"shuffle_read_bytes": curve(1, 100, 250)}, "data skew"),
        ({"input_bytes": curve(1, 100, 150)}, "compute skew"),
        ({}, "compute skew"),
    ],
)
def test_cause(metrics: dict, cause: str) -> None:
    result = run(stage_skew, skew_app(8.0, **metrics), P)
    assert result.details is not None
    row = dict(zip(result.details.columns, result.details.rows[0], strict=True))
    assert row["cause"] == cause
    assert row["stage"] == 3


SKEW = "spark.sql.adaptive.skewJoin.enabled"
AQE = "spark.sql.adaptive.enabled"
THRESHOLD = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
FACTOR = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"


@pytest.mark.parametrize(
    ("largest_mib", "median_mib", "props", "version", "conf", "reason"),
    [
        # 4.0 defaults: AQE and skew join on; a 1 GiB partition 100x the median would be split,
        # so this stage is not a join AQE can split: no setting is the fix
        (1024, 10, {}, "4.0.1", {}, "not one it can split"),
        # skew join explicitly off
        (1024, 10, {SKEW: "false"}, "4.0.1", {SKEW: "true"}, "skew-join handling is off"),
        # Spark 3.1: AQE is off by default; skew join is on by default, so never advised
        (1024, 10, {}, "3.1.2", {AQE: "true"}, "adaptive query execution is off"),
        # below the 256 MiB threshold and below two advisory pieces
        (100, 1, {}, "4.0.1", {THRESHOLD: "50m", ADVISORY: "25m"}, "below skewedPartitionThresh"),
        # not above the factor: 4x the median, factor 5
        (1024, 256, {}, "3.5.0", {FACTOR: "2.6"}, "not above skewedPartitionFactor (5)"),
        # a lowered threshold in force is read from the application
        (100, 1, {THRESHOLD: "64m", ADVISORY: "16m"}, "4.0.1", {}, "not one it can split"),
    ],
)
def test_aqe_skew_settings_say_why_aqe_did_not_act(
    largest_mib: int, median_mib: int, props: dict, version: str, conf: dict, reason: str
) -> None:
    shuffle = curve(0, median_mib * MIB, largest_mib * MIB)
    result = run(
        stage_skew, skew_app(8.0, props=props, version=version, shuffle_read_bytes=shuffle)
    )
    assert dict(result.conf) == conf
    assert reason in result.advice
    assert "salt" in result.advice  # an aggregation is never fixed by a setting
    # never advise enabling what is already on
    for key, value in result.conf:
        assert value != props.get(key, {"4.0.1": "true", "3.5.0": "true"}.get(version))


def test_rdd_skew_has_no_setting() -> None:
    app = skew_app(8.0, shuffle_read_bytes=curve(0, MIB, 1024 * MIB))
    stage = app.stages[0]._replace(name="reduceByKey at job.scala:3")  # type: ignore[attr-defined]
    rdd = app.__class__(**{**app.__dict__, "stages": (stage,)})  # type: ignore[attr-defined]
    result = run(stage_skew, rdd, P)
    assert result.conf == ()
    assert "RDD" in result.advice and "salt" in result.advice


@pytest.mark.parametrize(
    ("metrics", "words"),
    [({}, "computation"), ({"input_bytes": curve(1, 100, 1000)}, "unsplittable")],
)
def test_compute_and_input_skew_have_no_setting(metrics: dict, words: str) -> None:
    result = run(stage_skew, skew_app(8.0, **metrics), P)
    assert result.conf == ()
    assert words in result.advice


def test_missing_distribution() -> None:
    result = run(stage_skew, make_app(stages=[make_stage()]), P)
    assert result.severity == Severity.NONE
    assert result.title == "No task distributions available"


def test_zero_median_is_safe() -> None:
    dist = make_distribution({"executor_run_time_ms": curve(0, 0, 2 * MIN_MS)})
    result = run(stage_skew, make_app(stages=[make_stage(distribution=dist)]), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.to_dict()["value"] is None  # infinity is not valid JSON


def test_falls_back_to_duration_metric() -> None:
    dist = make_distribution({"duration_ms": curve(MIN_MS, MEDIAN_MS, MEDIAN_MS * 4)})
    result = run(stage_skew, make_app(stages=[make_stage(distribution=dist)]), P)
    assert result.pattern_severity == Severity.MODERATE


def test_stages_are_listed_worst_first() -> None:
    dists = [
        make_distribution({"executor_run_time_ms": curve(1000, 2000, 2000 * r)}) for r in (3, 20, 5)
    ]
    app = make_app(stages=[make_stage(i, distribution=d) for i, d in enumerate(dists)])
    result = run(stage_skew, app, P)
    assert result.stages == ((1, 0), (2, 0), (0, 0))
