"""data_skew_groups: Dr. Elephant's two-group split of reconstructed task values, capped by the
heavy group's extra task time."""

from __future__ import annotations

import pytest

from heuristics.appdata import TaskDistribution
from heuristics.builtin.parallelism import data_skew_groups
from heuristics.result import Severity
from tests.heuristics.builders import (
    AROUND_2_4_8_16,
    MIB,
    make_app,
    make_distribution,
    make_stage,
    run,
)

P = data_skew_groups.Params()
LIGHT = 100 * MIB


def step_curve(light: float, heavy: float, heavy_points: int = 5) -> tuple[float, ...]:
    """21 quantile points: the last `heavy_points` at `heavy`, the rest at `light`."""
    return tuple([light] * (21 - heavy_points) + [heavy] * heavy_points)


def groups_app(ratio: float, num_tasks: int = 400, metric: str = "input_bytes") -> object:
    dist = make_distribution({metric: step_curve(LIGHT, LIGHT * ratio)})
    return make_app(stages=[make_stage(2, num_tasks=num_tasks, distribution=dist)])


def test_two_groups_splits_around_the_mean() -> None:
    low, high = data_skew_groups.two_groups([1, 1, 1, 1, 2, 2, 10, 10])
    assert high == [10, 10]
    assert low == [1, 1, 1, 1, 2, 2]


def test_two_groups_on_equal_values_leaves_one_group_empty() -> None:
    low, high = data_skew_groups.two_groups([5.0, 5.0, 5.0])
    assert low == [] and high == [5.0, 5.0, 5.0]


def sharp_app(ratio: float) -> object:
    """Half the tasks at LIGHT, half at LIGHT × ratio, with a sharp step between them."""
    dist = TaskDistribution(
        quantiles=(0.0, 0.5, 0.5 + 1e-9, 1.0),
        metrics={"input_bytes": (LIGHT, LIGHT, LIGHT * ratio, LIGHT * ratio)},
    )
    return make_app(stages=[make_stage(2, num_tasks=400, distribution=dist)])


@pytest.mark.parametrize(
    ("ratio", "expected"),
    AROUND_2_4_8_16,
)
def test_severity_by_group_mean_ratio(ratio: float, expected: Severity) -> None:
    result = run(data_skew_groups, sharp_app(ratio), P, caps=None)
    assert result.severity == expected
    if expected > Severity.NONE:
        assert result.value == pytest.approx(ratio)
    assert result.stages == (((2, 0),) if expected > Severity.NONE else ())


@pytest.mark.parametrize(
    ("num_tasks", "expected"),
    [
        (9, Severity.NONE),
        (10, Severity.LOW),
        (49, Severity.LOW),
        (50, Severity.MODERATE),
        (100, Severity.SEVERE),
        (200, Severity.CRITICAL),
    ],
)
def test_task_count_caps_severity(num_tasks: int, expected: Severity) -> None:
    assert run(data_skew_groups, groups_app(32, num_tasks), P, caps=None).severity == expected


def test_a_none_title_says_there_is_no_concern() -> None:
    result = data_skew_groups.evaluate(groups_app(32, 9), P)  # too few tasks to matter
    assert result.severity == Severity.NONE
    assert result.title.startswith("No group skew of concern; largest: stage 2")
    assert data_skew_groups.evaluate(groups_app(32), P).title.startswith("Stage 2")


def test_titles_name_the_metric_in_words_not_its_key() -> None:
    assert data_skew_groups.evaluate(groups_app(32), P).title.startswith("Stage 2 input: ")
    shuffle = data_skew_groups.evaluate(groups_app(32, metric="shuffle_read_bytes"), P)
    assert shuffle.title.startswith("Stage 2 shuffle read: ")
    dist = make_distribution({"executor_run_time_ms": step_curve(60_000, 600_000)})
    timed = data_skew_groups.evaluate(
        make_app(stages=[make_stage(num_tasks=400, distribution=dist)]), P
    )
    assert ": heavy group mean" in timed.title and "task run time:" in timed.title
    assert not any(key in r.title for r in (shuffle, timed) for key in data_skew_groups.METRICS)


def test_shuffle_read_and_time_are_measured() -> None:
    result = run(data_skew_groups, groups_app(10, metric="shuffle_read_bytes"), P, caps=None)
    assert result.severity == Severity.SEVERE
    assert result.details is not None and result.details.rows[0][1] == "shuffle_read_bytes"
    dist = make_distribution({"executor_run_time_ms": step_curve(60_000, 600_000)})
    app = make_app(stages=[make_stage(num_tasks=400, distribution=dist)])
    timed = run(data_skew_groups, app, P)
    assert timed.severity == Severity.SEVERE
    assert timed.impact is not None and timed.impact.core_hours is not None
    assert timed.impact.core_hours > 0


@pytest.mark.parametrize(
    ("light_ms", "severity"),
    [
        (None, Severity.LOW),  # skewed bytes, no task time measured: costs nothing, still shown
        (10, Severity.LOW),  # 90 ms extra per heavy task
        (30_000, Severity.MODERATE),  # 270 s of wall time, 100 heavy tasks: 7.5 core-hours
        (120_000, Severity.SEVERE),  # 18 min
        (400_000, Severity.CRITICAL),  # 1 h of wall time
    ],
)
def test_small_skew_is_reported_and_capped_by_its_time(
    light_ms: float | None, severity: Severity
) -> None:
    metrics = {"input_bytes": step_curve(MIB, 60 * MIB)}
    if light_ms is not None:
        metrics["executor_run_time_ms"] = step_curve(light_ms, 10 * light_ms)
    app = make_app(stages=[make_stage(num_tasks=400, distribution=make_distribution(metrics))])
    result = run(data_skew_groups, app, P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity


def test_skewed_shuffle_read_gets_aqe_settings() -> None:
    dist = make_distribution({"shuffle_read_bytes": step_curve(MIB, 100 * MIB)})
    app = make_app(stages=[make_stage(num_tasks=400, distribution=dist)])
    result = run(data_skew_groups, app, P)
    conf = dict(result.conf)
    # 100 MiB is below the 256 MiB default threshold and two 64 MiB advisory pieces
    assert conf["spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"] == "50m"
    assert "spark.sql.adaptive.skewJoin.enabled" not in conf  # on by default
    assert "skewedPartitionThresholdInBytes" in result.advice


def test_missing_distribution() -> None:
    result = run(data_skew_groups, make_app(stages=[make_stage()]), P)
    assert (result.severity, result.title) == (Severity.NONE, "No task distributions available")


def test_many_tasks_are_sampled() -> None:
    result = run(data_skew_groups, groups_app(10, num_tasks=200_000), P, caps=None)
    assert result.severity == Severity.SEVERE
    assert result.details is not None
    row = dict(zip(result.details.columns, result.details.rows[0], strict=True))
    assert row["light_group_tasks"] + row["heavy_group_tasks"] == 200_000
