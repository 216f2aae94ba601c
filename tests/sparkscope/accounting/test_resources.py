"""Resource accounting on hand-built applications: allocated, used and wasted core- and GB-hours,
local mode, unknown memory, explicit overheads, the JSON form and the cost (the waits:
test_resources_wait.py)."""

from __future__ import annotations

import json

import pytest

from heuristics.appdata import AppData, ExecutorSummary
from sparkscope.accounting.resources import FORMULAS, Resources, compute_resources, cost
from tests.sparkscope.accounting.conftest import (
    DRIVER_ONLY,
    GIB,
    HOUR,
    MIB,
    MIN,
    app,
    driver,
    executor,
    stage,
)

# Spark's default container size for 1g of heap: 1 GiB + max(384 MiB, 10%).
DEFAULT_CONTAINER_GB = (GIB + 384 * MIB) / GIB


def peaks(heap_mib: int = 512, offheap_mib: int = 128) -> dict[str, int]:
    """Peak JVM memory keyword arguments for executor()."""
    return {"heap_bytes": heap_mib * MIB, "offheap_bytes": offheap_mib * MIB}


STATIC = app(
    (driver(**peaks()), executor("1", **peaks()), executor("2", **peaks())),
    stages=(stage(0, run_ms=2 * HOUR, cpu_ns=HOUR * 10**6), stage(1, run_ms=HOUR)),
)
# e1 0-30 min, e2 15-45 min, e3 40 min-end, e4 added before start and removed after the end.
DYNAMIC = app(
    (
        driver(),
        executor("1", cores=2, add_ms=0, remove_ms=30 * MIN),
        executor("2", cores=2, add_ms=15 * MIN, remove_ms=45 * MIN),
        executor("3", cores=2, add_ms=40 * MIN),
        executor("4", cores=2, add_ms=-10 * MIN, remove_ms=2 * HOUR),
    ),
    stages=(stage(0, run_ms=HOUR),),
    props={"spark.executor.memory": "2g", "spark.dynamicAllocation.enabled": "true"},
)
LOCAL = app(
    (driver(cores=2, add_ms=500, tasks=10, **peaks()),),
    stages=(stage(0, run_ms=HOUR),),
    # Cluster-only settings are present in local mode but took no effect.
    props={"spark.master": "local[2]", "spark.executor.memory": "8g", "spark.driver.cores": "4"},
)


@pytest.mark.parametrize(
    ("data", "allocated_core_hours", "used_core_hours", "allocated_gb_hours", "executors"),
    [
        pytest.param(STATIC, 2 * 4 + 1, 3.0, 3 * DEFAULT_CONTAINER_GB, 2, id="static"),
        pytest.param(
            DYNAMIC,
            2 * (0.5 + 0.5 + 1 / 3 + 1) + 1,
            1.0,
            (2 + 0.375) * (0.5 + 0.5 + 1 / 3 + 1) + DEFAULT_CONTAINER_GB,
            4,
            id="dynamic",
        ),
        pytest.param(
            LOCAL,
            2 * (HOUR - 500) / HOUR,
            1.0,
            DEFAULT_CONTAINER_GB * (HOUR - 500) / HOUR,
            1,
            id="local",
        ),
        pytest.param(DRIVER_ONLY, 1 / 6, 0.0, DEFAULT_CONTAINER_GB / 6, 0, id="driver-only"),
    ],
)
def test_allocated_and_used(
    data: AppData,
    allocated_core_hours: float,
    used_core_hours: float,
    allocated_gb_hours: float,
    executors: int,
) -> None:
    r = compute_resources(data)
    assert r.allocated_core_hours == pytest.approx(allocated_core_hours)
    assert r.used_core_hours == pytest.approx(used_core_hours)
    assert r.wasted_core_hours == pytest.approx(allocated_core_hours - used_core_hours)
    assert r.allocated_gb_hours == pytest.approx(allocated_gb_hours)
    assert r.executors == executors
    assert r.used_core_hours <= r.allocated_core_hours


def test_static_efficiency_cpu_and_memory_used() -> None:
    r = compute_resources(STATIC)
    assert r.core_efficiency == pytest.approx(3 / 9)
    assert r.cpu_core_hours == pytest.approx(1.0)
    # Three JVMs at 640 MiB peak for one hour each.
    assert r.used_gb_hours == pytest.approx(3 * 0.625)
    assert r.wasted_gb_hours == pytest.approx(3 * DEFAULT_CONTAINER_GB - 3 * 0.625)
    assert r.memory_efficiency == pytest.approx(0.625 / DEFAULT_CONTAINER_GB)
    assert r.notes == ()


def test_local_mode_counts_the_driver_once() -> None:
    r = compute_resources(LOCAL)
    assert r.local_mode
    assert r.used_gb_hours == pytest.approx(0.625 * (HOUR - 500) / HOUR)
    assert r.wait.to_first_executor_s == pytest.approx(0.5)


def test_local_mode_is_recognised_without_master_when_the_driver_ran_tasks() -> None:
    data = app((driver(cores=3, tasks=5),), props={"spark.master": ""})
    r = compute_resources(data)
    assert r.local_mode
    assert r.allocated_core_hours == pytest.approx(3.0)


@pytest.mark.parametrize(
    "executors",
    [
        pytest.param((driver(), executor("1"), executor("2")), id="no-peaks"),
        pytest.param(
            (driver(**peaks()), executor("1", **peaks()), executor("2")), id="one-executor-missing"
        ),
        pytest.param(
            (driver(**peaks()), executor("1", **peaks()), executor("2", heap_bytes=GIB)),
            id="off-heap-missing",
        ),
        pytest.param(
            (driver(), executor("1", **peaks()), executor("2", **peaks())), id="driver-missing"
        ),
        pytest.param((executor("1", **peaks()),), id="no-driver-entry"),
        # The SHS reports all-zero peaks when no metrics sample arrived.
        pytest.param(
            (driver(**peaks()), executor("1", **peaks()), executor("2", **peaks(0, 0))),
            id="zero-peaks",
        ),
    ],
)
def test_memory_used_is_unknown_unless_every_jvm_reported_peaks(
    executors: tuple[ExecutorSummary, ...],
) -> None:
    r = compute_resources(app(executors))
    assert r.used_gb_hours is None
    assert r.wasted_gb_hours is None
    assert r.memory_efficiency is None
    assert r.allocated_gb_hours > 0
    assert any("unknown" in note for note in r.notes)


def test_overhead_set_explicitly_is_used() -> None:
    data = app(
        (driver(), executor("1", cores=1)),
        props={
            "spark.executor.memory": "3g",
            "spark.executor.memoryOverhead": "1g",
            "spark.driver.memory": "2g",
            "spark.driver.memoryOverhead": "2048",
            "spark.driver.cores": "2",
        },
    )
    r = compute_resources(data)
    assert r.allocated_gb_hours == pytest.approx(4 + 4)
    assert r.allocated_core_hours == pytest.approx(1 + 2)


def test_used_above_allocated_is_clamped_and_noted() -> None:
    data = app(
        (
            driver(heap_bytes=4 * GIB, offheap_bytes=GIB),
            executor("1", cores=1, heap_bytes=4 * GIB, offheap_bytes=GIB),
        ),
        stages=(stage(0, run_ms=10 * HOUR),),
    )
    r = compute_resources(data)
    assert r.wasted_core_hours == 0
    assert r.wasted_gb_hours == 0
    assert r.used_core_hours == pytest.approx(10)
    assert r.core_efficiency == pytest.approx(10 / 2)
    assert len(r.notes) == 2


def test_to_dict_is_json_and_explains_every_figure() -> None:
    r = compute_resources(STATIC)
    data = json.loads(json.dumps(r.to_dict()))
    for key in (
        "allocated_core_hours",
        "used_core_hours",
        "wasted_core_hours",
        "allocated_gb_hours",
        "used_gb_hours",
        "wasted_gb_hours",
    ):
        assert data[key] == pytest.approx(getattr(r, key))
        assert key in data["formulas"]
    assert set(data["wait"]) == {
        "to_first_executor_s",
        "driver_only_s",
        "stage_scheduling_delay_s",
        "per_stage",
    }
    assert data["wait"]["per_stage"][0] == {"stage_id": 0, "attempt_id": 0, "wait_s": 0.0}
    unknown = json.loads(json.dumps(compute_resources(DRIVER_ONLY).to_dict()))
    assert unknown["used_gb_hours"] is None
    assert set(FORMULAS) >= {k for k, v in data.items() if isinstance(v, float)}


def _resources(wasted_gb_hours: float | None) -> Resources:
    return Resources(
        allocated_core_hours=10.0,
        used_core_hours=4.0,
        cpu_core_hours=3.0,
        wasted_core_hours=6.0,
        core_efficiency=0.4,
        allocated_gb_hours=20.0,
        used_gb_hours=None if wasted_gb_hours is None else 20.0 - wasted_gb_hours,
        wasted_gb_hours=wasted_gb_hours,
        memory_efficiency=None,
        executors=2,
        local_mode=False,
        wait=compute_resources(DRIVER_ONLY).wait,
    )


@pytest.mark.parametrize(
    ("prices", "wasted_gb_hours", "expected"),
    [
        pytest.param((None, None), 5.0, None, id="unset"),
        pytest.param(
            (2.0, None),
            None,
            {"allocated_cost": 20.0, "wasted_core_cost": 12.0, "wasted_cost": 12.0},
            id="core-only",
        ),
        pytest.param(
            (2.0, 0.5),
            5.0,
            {"allocated_cost": 30.0, "wasted_memory_cost": 2.5, "wasted_cost": 14.5},
            id="both",
        ),
        pytest.param(
            (2.0, 0.5),
            None,
            {"allocated_cost": 30.0, "wasted_memory_cost": None, "wasted_cost": None},
            id="memory-used-unknown",
        ),
        pytest.param(
            (None, 0.5), 5.0, {"allocated_core_cost": 0.0, "wasted_cost": 2.5}, id="memory-only"
        ),
    ],
)
def test_cost(
    prices: tuple[float | None, float | None],
    wasted_gb_hours: float | None,
    expected: dict[str, float | None] | None,
) -> None:
    result = cost(_resources(wasted_gb_hours), *prices)
    if expected is None:
        assert result is None
        return
    assert result is not None
    for key, value in expected.items():
        assert result[key] == (None if value is None else pytest.approx(value))
