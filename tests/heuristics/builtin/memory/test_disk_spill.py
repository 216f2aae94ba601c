"""disk_spill: memory bytes spilled relative to the bytes a stage processed, capped by the time
spilling cost, with the partitions or memory that would avoid it."""

from __future__ import annotations

import pytest

from heuristics.builtin.memory import disk_spill
from heuristics.result import Severity
from tests.heuristics.builders import GIB, MIB, make_app, make_stage, make_task, run

P = disk_spill.Params()
PROCESSED = 10 * GIB


def spill_app(ratio: float, **stage_kw: object) -> object:
    stage = make_stage(
        4,
        shuffle_read_bytes=PROCESSED,
        input_bytes=GIB,
        memory_bytes_spilled=int(PROCESSED * ratio),
        disk_bytes_spilled=int(PROCESSED * ratio / 4),
        **stage_kw,
    )
    tasks = [
        make_task(1, stage_id=4, memory_bytes_spilled=10),
        make_task(2, stage_id=4, memory_bytes_spilled=500),
        make_task(3, stage_id=5, memory_bytes_spilled=9999),
    ]
    return make_app(stages=[stage], tasks=tasks)


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (0.0099, Severity.NONE),
        (0.0101, Severity.LOW),
        (0.499, Severity.LOW),
        (0.5, Severity.MODERATE),
        (0.999, Severity.MODERATE),
        (1.0, Severity.SEVERE),
        (1.999, Severity.SEVERE),
        (2.0, Severity.CRITICAL),
    ],
)
def test_severity_at_thresholds(ratio: float, expected: Severity) -> None:
    result = run(disk_spill, spill_app(ratio), P, caps=None)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio, rel=1e-6)
    assert "tage 4 spilled" in result.title
    assert result.stages == (((4, 0),) if expected > Severity.NONE else ())


def test_details_name_the_task_with_most_spill_and_impact_uses_throughput() -> None:
    result = run(disk_spill, spill_app(1.0), P)
    assert result.details is not None
    row = dict(zip(result.details.columns, result.details.rows[0], strict=True))
    assert row["top_spill_task_id"] == 2  # task 3 belongs to another stage
    assert row["disk_bytes_spilled"] == PROCESSED // 4
    assert result.impact is not None
    task_s = 2 * (PROCESSED / 4) / 100e6
    assert result.impact.core_hours == pytest.approx(task_s / 3600)
    assert result.impact.wall_seconds == pytest.approx(task_s / 8)
    assert "100 MB/s" in result.impact.formula


def test_spill_with_no_processed_bytes_is_critical_not_a_crash() -> None:
    stage = make_stage(memory_bytes_spilled=GIB)
    assert run(disk_spill, make_app(stages=[stage]), P).pattern_severity == Severity.CRITICAL


@pytest.mark.parametrize(
    ("disk_mib", "severity"),
    [
        (100, Severity.LOW),  # 100 MiB on disk: 2 s of task time
        (1024 * 1024, Severity.SEVERE),  # 1 TiB: 6 core-hours, 46 min of wall
        (4 * 1024 * 1024, Severity.CRITICAL),  # 4 TiB: 24 core-hours, 3 h of wall
    ],
)
def test_small_spill_is_reported_and_capped_by_its_time(disk_mib: int, severity: Severity) -> None:
    stage = make_stage(
        memory_bytes_spilled=disk_mib * MIB * 4, disk_bytes_spilled=disk_mib * MIB, input_bytes=MIB
    )
    result = run(disk_spill, make_app(stages=[stage]), P)
    assert result.pattern_severity == Severity.CRITICAL
    assert result.severity == severity


def spill_of(per_task_mib: int, props: dict, **stage_kw: object) -> object:
    stage = make_stage(
        5,
        num_tasks=100,
        memory_bytes_spilled=100 * per_task_mib * MIB,
        disk_bytes_spilled=100 * per_task_mib * MIB // 2,
        **stage_kw,
    )
    return make_app(stages=[stage], props=props)


def test_partitions_that_would_fit_are_computed_from_execution_memory() -> None:
    # 8 GiB heaps, 4 cores: (8192 − 300) MiB × 0.6 ÷ 4 = 1183 MiB per task; 1183 MiB spilled per
    # task needs twice the partitions
    per_task = int((8192 - 300) * 0.6 / 4)
    app = spill_of(
        per_task,
        {"spark.sql.shuffle.partitions": "100"},
        shuffle_read_bytes=100 * GIB,
        name="collect at job.py:5",
    )
    result = run(disk_spill, app, P)
    assert dict(result.conf) == {"spark.sql.shuffle.partitions": "200"}
    assert "about 200 partitions would fit" in result.advice
    # or twice the execution memory: (2 × 7892 + 300) MiB rounded up to 512 MiB
    assert "spark.executor.memory=16g" in result.advice


def test_local_mode_names_the_driver_memory_and_code_partitions() -> None:
    app = spill_of(32, {"spark.master": "local[2]", "spark.driver.memory": "512m"})
    result = run(disk_spill, app, P)
    assert result.conf == ()  # 100 tasks of generated data: the code set them
    assert "repartition(" in result.advice and "spark.driver.memory=" in result.advice


@pytest.mark.parametrize(
    ("stages", "title"),
    [([], "No stages available"), ([make_stage()], "No stage spilled")],
)
def test_missing_data(stages: list, title: str) -> None:
    result = run(disk_spill, make_app(stages=stages), P)
    assert (result.severity, result.title, result.impact) == (Severity.NONE, title, None)
