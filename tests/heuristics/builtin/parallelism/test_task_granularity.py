"""task_granularity: many tiny tasks, or a single wave of tasks taking much of the application."""

from __future__ import annotations

import pytest

from heuristics.appdata import AppData
from heuristics.builtin.parallelism import task_granularity
from heuristics.result import Severity
from tests.heuristics.builders import MIB, MIN_MS, make_app, make_distribution, make_stage, run

P = task_granularity.Params()
SLOTS = 8  # make_app: two executors of 4 cores


def tiny_app(
    median_ms: float, num_tasks: int = 2000, props: dict | None = None, **kw: object
) -> AppData:
    delay = kw.pop("scheduler_delay_ms", None)
    dist = {"executor_run_time_ms": median_ms}
    if delay is not None:
        dist["scheduler_delay_ms"] = delay  # type: ignore[assignment]
    stage = make_stage(
        7,
        num_tasks=num_tasks,
        executor_run_time_ms=round(median_ms * num_tasks),
        distribution=make_distribution(**dist),
        **kw,
    )
    return make_app(stages=[stage], props=props)


@pytest.mark.parametrize(
    ("median_ms", "expected"),
    [
        (201, Severity.NONE),
        (200, Severity.LOW),  # Spark runs tasks "as short as 200 ms" efficiently
        (101, Severity.LOW),
        (100, Severity.MODERATE),
        (51, Severity.MODERATE),
        (50, Severity.SEVERE),
        (21, Severity.SEVERE),
        (20, Severity.CRITICAL),
    ],
)
def test_tiny_tasks(median_ms: float, expected: Severity) -> None:
    result = run(task_granularity, tiny_app(median_ms), P, caps=None)
    assert result.severity == expected
    if expected > Severity.NONE:
        assert result.value == median_ms
        assert result.stages == ((7, 0),)


@pytest.mark.parametrize(
    ("num_tasks", "judged"),
    [(3 * SLOTS, False), (3 * SLOTS + 1, True), (2000, True)],
)
def test_tiny_needs_more_than_three_tasks_per_slot(num_tasks: int, judged: bool) -> None:
    result = run(task_granularity, tiny_app(10, num_tasks=num_tasks), P, caps=None)
    assert (result.pattern_severity == Severity.CRITICAL) == judged


def test_tiny_tasks_suggestion_and_impact() -> None:
    result = run(task_granularity, tiny_app(50, scheduler_delay_ms=20), P)
    # 2000 tasks x 50 ms = 100 s of work; at 60 s per task that is 2 tasks, but keep 8 slots busy
    assert "suggest 8 partitions" in result.title
    assert result.details is not None and result.details.rows[0][1] == "tiny tasks"
    assert result.impact is not None
    assert result.impact.core_hours == pytest.approx((2000 - 8) * 20 / 3_600_000)
    assert "fewer, larger partitions" in result.advice
    # 40 s of overhead: a SEVERE pattern capped to LOW by its cost
    assert (result.pattern_severity, result.severity) == (Severity.SEVERE, Severity.LOW)


@pytest.mark.parametrize(
    ("num_tasks", "severity"),
    [
        (20_000, Severity.LOW),  # 20,000 × 10 ms = 200 s of overhead, 25 s of wall
        (300_000, Severity.MODERATE),  # 0.8 core-hours, 6 min of wall
        (4_000_000, Severity.CRITICAL),  # 11 core-hours, 83 min of wall
    ],
)
def test_tiny_task_overhead_caps_the_severity(num_tasks: int, severity: Severity) -> None:
    result = run(task_granularity, tiny_app(5, num_tasks=num_tasks), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity


@pytest.mark.parametrize(
    ("stage_kw", "props", "conf"),
    [
        # a shuffle of spark.sql.shuffle.partitions tasks: 20 GiB at 64 MiB a partition = 320
        (
            {"shuffle_read_bytes": 20 * 1024 * MIB, "name": "collect at job.py:7"},
            {"spark.sql.shuffle.partitions": "2000"},
            {"spark.sql.shuffle.partitions": "320"},
        ),
        # the same with AQE coalescing switched off: switch it on as well
        (
            {"shuffle_read_bytes": 20 * 1024 * MIB},
            {
                "spark.sql.shuffle.partitions": "2000",
                "spark.sql.adaptive.coalescePartitions.enabled": "false",
            },
            {
                "spark.sql.shuffle.partitions": "320",
                "spark.sql.adaptive.coalescePartitions.enabled": "true",
            },
        ),
        # partitions AQE coalesced to the advisory size: a larger advisory size
        (
            {"shuffle_read_bytes": 20 * 1024 * MIB},
            {},
            {"spark.sql.adaptive.advisoryPartitionSizeInBytes": "64m"},
        ),
        # a file scan: larger splits
        ({"input_bytes": 40 * 1024 * MIB}, {}, {"spark.sql.files.maxPartitionBytes": "64m"}),
        # RDD code fixed the count: no setting
        ({"input_bytes": 40 * 1024 * MIB, "name": "map at job.py:7"}, {}, {}),
        # parallelize / range with an explicit count: no setting
        ({}, {}, {}),
    ],
)
def test_tiny_tasks_name_the_setting_that_controls_the_stage(
    stage_kw: dict, props: dict, conf: dict
) -> None:
    result = run(task_granularity, tiny_app(5, props=props, **stage_kw), P)
    assert dict(result.conf) == conf
    if not conf:
        assert "no setting controls it" in result.advice


def long_app(
    median_ms: float, num_tasks: int = 2, app_ms: float | None = None, **kw: object
) -> AppData:
    stage = make_stage(
        8,
        num_tasks=num_tasks,
        executor_run_time_ms=round(median_ms * num_tasks),
        completion_time_ms=round(median_ms),
        distribution=make_distribution(executor_run_time_ms=median_ms),
        **kw,
    )
    return make_app(stages=[stage], duration_ms=int(app_ms or median_ms))


@pytest.mark.parametrize(
    ("share", "expected"),
    [
        (0.249, Severity.NONE),
        (0.25, Severity.LOW),
        (0.499, Severity.LOW),
        (0.5, Severity.MODERATE),
        (0.75, Severity.SEVERE),
        (0.899, Severity.SEVERE),
        (0.9, Severity.CRITICAL),
    ],
)
def test_few_long_tasks_by_share_of_the_application(share: float, expected: Severity) -> None:
    app = long_app(10 * MIN_MS, app_ms=10 * MIN_MS / share)
    result = run(task_granularity, app, P, caps=None)
    assert result.severity == expected


def test_few_long_tasks_suggestion_and_impact() -> None:
    result = run(task_granularity, long_app(60 * MIN_MS), P)
    # 2 tasks x 60 min = 120 min of work: 120 one-minute tasks, at least 2 x 8 slots
    assert "suggest 120 partitions" in result.title
    assert result.impact is not None
    assert result.impact.core_hours == pytest.approx(6 * 1.0)  # 6 idle slots for an hour
    assert "more partitions" in result.advice
    # CRITICAL pattern; 6 idle core-hours allow MODERATE, 45 min of wall time SEVERE
    assert result.severity == Severity.SEVERE
    # 2 partitions of generated data, not spark.default.parallelism (8): the code set them
    assert result.conf == ()
    assert "numSlices=120" in result.advice


def test_few_long_tasks_of_default_parallelism_suggest_it() -> None:
    app = long_app(60 * MIN_MS, num_tasks=SLOTS)
    result = run(task_granularity, app, P)
    # 8 tasks x 60 min of work: 480 one-minute tasks
    assert dict(result.conf) == {"spark.default.parallelism": "480"}


def test_few_long_shuffle_tasks_suggest_shuffle_partitions_from_bytes() -> None:
    app = long_app(
        60 * MIN_MS,
        num_tasks=4,
        shuffle_read_bytes=64 * 1024 * MIB,
        name="collect at job.py:8",
    )
    app = AppData(
        **{
            **app.__dict__,
            "spark_properties": {**app.spark_properties, "spark.sql.shuffle.partitions": "4"},
        }
    )
    result = run(task_granularity, app, P)
    # 64 GiB at 64 MiB a partition: 1024 partitions, more than 240 one-minute tasks
    assert dict(result.conf) == {"spark.sql.shuffle.partitions": "1024"}


def test_as_many_tasks_as_slots_is_one_wave() -> None:
    result = run(task_granularity, long_app(60 * MIN_MS, num_tasks=8), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.impact is not None and result.impact.core_hours == 0
    assert result.severity == Severity.LOW  # nothing idle on this cluster: costs ~nothing


def test_a_none_title_does_not_read_like_a_problem() -> None:
    # One wave taking a tenth of the application: judged but below the share threshold.
    result = task_granularity.evaluate(long_app(1 * MIN_MS, num_tasks=8, app_ms=10 * MIN_MS), P)
    assert result.severity == Severity.NONE
    assert "suggest" not in result.title and "within limits" in result.title
    assert "in the 1 stage judged (" in result.title and "task slots)" in result.title


def test_counts_in_titles_agree_with_their_nouns() -> None:
    from heuristics.stats import fmt_count

    assert [fmt_count(n, "task slot") for n in (0, 1, 2)] == [
        "0 task slots",
        "1 task slot",
        "2 task slots",
    ]
    result = task_granularity.evaluate(tiny_app(3), P)
    assert "(tiny tasks, " in result.title and "(s)" not in result.title
    one = task_granularity.evaluate(long_app(MIN_MS, num_tasks=1), P)
    assert "1 task with median" in one.title


def test_within_the_recommended_tasks_per_slot_is_not_judged() -> None:
    result = run(task_granularity, long_app(60 * MIN_MS, num_tasks=9), P)
    assert result.severity == Severity.NONE
    assert result.title.startswith("No stage with")


def test_missing_distribution() -> None:
    result = run(task_granularity, make_app(stages=[make_stage()]), P)
    assert (result.severity, result.title) == (Severity.NONE, "No task distributions available")
