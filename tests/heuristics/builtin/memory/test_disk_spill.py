"""disk_spill: memory bytes spilled relative to the bytes a stage processed."""

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
        (0.099, Severity.NONE),
        (0.1, Severity.LOW),
        (0.499, Severity.LOW),
        (0.5, Severity.MODERATE),
        (0.999, Severity.MODERATE),
        (1.0, Severity.SEVERE),
        (1.999, Severity.SEVERE),
        (2.0, Severity.CRITICAL),
    ],
)
def test_severity_at_thresholds(ratio: float, expected: Severity) -> None:
    result = run(disk_spill, spill_app(ratio), P)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio, rel=1e-6)
    assert result.title.startswith("Stage 4 spilled")


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
    assert run(disk_spill, make_app(stages=[stage]), P).severity == Severity.CRITICAL


def test_small_spill_is_gated() -> None:
    stage = make_stage(memory_bytes_spilled=100 * MIB, input_bytes=MIB)
    result = run(disk_spill, make_app(stages=[stage]), P)
    assert result.severity == Severity.NONE
    assert "No stage spilled at least 256.0 MiB" in result.title


@pytest.mark.parametrize(
    ("stages", "title"),
    [([], "No stages available"), ([make_stage()], "No stage spilled")],
)
def test_missing_data(stages: list, title: str) -> None:
    result = run(disk_spill, make_app(stages=stages), P)
    assert (result.severity, result.title, result.impact) == (Severity.NONE, title, None)
