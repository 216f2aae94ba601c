"""Which stages the fetcher asks the slowest tasks of (fetcher.shs.request_plan.stages_for_slowest_tasks)."""

from __future__ import annotations

from typing import Any

from fetcher.shs.request_plan import TAIL_MAX_STAGES, stages_for_slowest_tasks


def st(stage_id: int, tasks: int, run_ms: int) -> dict[str, Any]:
    return {
        "stage_id": stage_id,
        "attempt_id": 0,
        "num_tasks": tasks,
        "executor_run_time_ms": run_ms,
    }


def ids(stages: list[dict[str, Any]]) -> list[int]:
    return [s["stage_id"] for s in stages]


def test_top_k_plus_every_big_stage_whose_tail_quantiles_miss() -> None:
    stages = [
        st(0, 10, 50_000),  # long but small: its 21 quantiles pin every task
        st(1, 200, 30_000),
        st(2, 21, 20_000),
        st(3, 500, 900),  # big but under 1% of the run time
        st(4, 0, 0),  # skipped
        st(5, 64, 5_000),
    ]
    assert ids(stages_for_slowest_tasks(stages, 2)) == [0, 1, 2, 5]
    assert ids(stages_for_slowest_tasks(stages, 0)) == [1, 2, 5]


def test_small_applications_ask_nothing_more_than_before() -> None:
    stages = [st(i, 8, 1000 * (i + 1)) for i in range(10)]
    assert ids(stages_for_slowest_tasks(stages, 5)) == [9, 8, 7, 6, 5]


def test_the_tail_stages_are_capped() -> None:
    stages = [st(i, 100, 1000) for i in range(80)]
    assert len(stages_for_slowest_tasks(stages, 5)) == TAIL_MAX_STAGES
