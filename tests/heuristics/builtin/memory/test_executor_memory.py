"""executor_memory: peak JVM memory vs configured memory, in both directions, with the sizes to
set."""

from __future__ import annotations

import pytest

from heuristics.builtin.memory import executor_memory
from heuristics.result import Severity
from tests.heuristics.builders import GIB, MIB, make_app, make_driver, make_executor, run

P = executor_memory.Params()
CONFIGURED = 10_000 * MIB  # every tested ratio gives a whole number of bytes


def memory_app(ratio: float, offheap_share: float = 0.25) -> object:
    peak = round(CONFIGURED * ratio)
    offheap = round(peak * offheap_share)
    execs = [
        make_driver(peak_jvm_heap_bytes=GIB, peak_jvm_offheap_bytes=0),
        make_executor("1", peak_jvm_heap_bytes=peak - offheap, peak_jvm_offheap_bytes=offheap),
        make_executor("2", peak_jvm_heap_bytes=100 * MIB, peak_jvm_offheap_bytes=None),
    ]
    return make_app(
        executors=execs,
        props={"spark.executor.memory": "9000m", "spark.executor.memoryOverhead": "1000m"},
    )


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (0.79, Severity.NONE),
        (0.8, Severity.LOW),
        (0.9, Severity.MODERATE),
        (0.9499, Severity.MODERATE),
        (0.95, Severity.SEVERE),
        (1.0, Severity.CRITICAL),
        (1.3, Severity.CRITICAL),
        # over-provisioned (descending)
        (0.51, Severity.NONE),
        (0.5, Severity.LOW),
        (0.35, Severity.MODERATE),
        (0.2, Severity.SEVERE),
        (0.1, Severity.CRITICAL),
    ],
)
def test_severity_both_directions(ratio: float, expected: Severity) -> None:
    result = run(executor_memory, memory_app(ratio), P, caps=None)
    assert result.severity == expected
    assert result.value == pytest.approx(ratio, rel=1e-6)


def test_near_limit_title_settings_and_cost() -> None:
    app = memory_app(0.95)  # peak 9500 MiB: heap 7125 MiB, off-heap 2375 MiB of 1000m overhead
    result = run(executor_memory, app, P)
    assert result.title.endswith("near the limit")
    # heap: peak 7125 MiB × 1.25 rounded up to 512 MiB; off-heap 2375 MiB × 1.25
    assert dict(result.conf) == {
        "spark.executor.memory": "9g",
        "spark.executor.memoryOverhead": "2969m",
    }
    assert "spark.executor.memoryOverhead=2969m" in result.advice
    # no GC measured: running near the limit cost nothing yet, a LOW note of a SEVERE pattern
    assert result.impact is not None and result.impact.core_hours == 0
    assert (result.pattern_severity, result.severity) == (Severity.SEVERE, Severity.LOW)


def test_near_limit_with_gc_is_capped_by_the_gc_time() -> None:
    app = memory_app(0.95)
    execs = tuple(e._replace(total_gc_time_ms=5 * 3_600_000) for e in app.executors)  # type: ignore[attr-defined]
    result = run(executor_memory, app.__class__(**{**app.__dict__, "executors": execs}), P)  # type: ignore[attr-defined]
    assert result.impact is not None and result.impact.core_hours == pytest.approx(10.0)
    assert result.severity == Severity.SEVERE


def test_over_provisioned_suggests_a_size() -> None:
    result = run(executor_memory, memory_app(0.2), P)  # peak 2000 MiB x 1.25 -> 2560 MiB
    assert "over-provisioned, suggest 2.5 GiB" in result.title
    # heap peak 1500 MiB × 1.25 -> 2 GiB; off-heap 500 MiB × 1.25 < 1000m -> 625 MiB
    assert dict(result.conf) == {
        "spark.executor.memory": "2g",
        "spark.executor.memoryOverhead": "625m",
    }
    assert result.impact is not None and result.impact.core_hours is not None
    assert "GiB-hours" in result.impact.formula and "per core" in result.impact.formula
    # (10000 − 2560) MiB idle for two executors' hour: 14.5 GiB-hours ÷ (9.8 GiB ÷ 4 cores)
    assert result.impact.core_hours == pytest.approx(2 * (10000 - 2560) / 10000 * 4, rel=1e-3)


def test_python_applications_keep_their_overhead() -> None:
    app = memory_app(0.2)
    props = {**app.spark_properties, "spark.submit.pyFiles": ""}
    result = run(executor_memory, app.__class__(**{**app.__dict__, "spark_properties": props}), P)  # type: ignore[attr-defined]
    assert dict(result.conf) == {"spark.executor.memory": "2g"}


def test_local_mode_is_never_over_provisioned() -> None:
    driver = make_driver(peak_jvm_heap_bytes=100 * MIB, peak_jvm_offheap_bytes=0)
    props = {"spark.master": "local[2]", "spark.driver.memory": "16g"}
    result = run(executor_memory, make_app(executors=[driver], props=props), P)
    assert result.severity == Severity.NONE


@pytest.mark.parametrize(
    ("peak", "suggested"),
    [(1, 512 * MIB), (400 * MIB, 512 * MIB), (410 * MIB, 1024 * MIB), (4 * GIB, 5 * GIB)],
)
def test_suggested_size_rounds_up_to_512_mib(peak: int, suggested: int) -> None:
    assert executor_memory.suggested_memory_bytes(peak) == suggested


def test_small_executors_are_judged_and_capped_by_the_idle_memory() -> None:
    execs = [make_executor("1", peak_jvm_heap_bytes=100 * MIB, peak_jvm_offheap_bytes=0)]
    result = run(
        executor_memory, make_app(executors=execs, props={"spark.executor.memory": "2g"}), P
    )
    # 100 MiB of 2432 MiB: a CRITICAL pattern; 1.9 GiB idle for an hour ÷ 0.6 GiB per core
    assert result.pattern_severity == Severity.CRITICAL
    assert result.impact is not None and result.impact.core_hours == pytest.approx(3.2, rel=0.05)
    assert result.severity == Severity.MODERATE
    assert dict(result.conf)["spark.executor.memory"] == "512m"


def test_local_mode_uses_driver_memory() -> None:
    driver = make_driver(peak_jvm_heap_bytes=2335 * MIB, peak_jvm_offheap_bytes=0)
    props = {
        "spark.master": "local[2]",
        "spark.driver.memory": "2g",
        "spark.executor.memory": "120g",
    }
    result = run(executor_memory, make_app(executors=[driver], props=props), P, caps=None)
    assert result.severity == Severity.SEVERE
    assert "spark.driver.memory" in result.title
    assert dict(result.conf) == {"spark.driver.memory": "3g"}  # 2335 MiB × 1.25


def test_default_executor_memory_is_1g() -> None:
    execs = [make_executor("1", peak_jvm_heap_bytes=GIB, peak_jvm_offheap_bytes=0)]
    app = make_app(executors=execs)
    app = type(app)(**{**app.__dict__, "spark_properties": {"spark.master": "yarn"}})
    # 1g heap + 384 MiB default overhead
    assert run(executor_memory, app, P).value == pytest.approx(1024 / 1408)


@pytest.mark.parametrize("heap", [None, 0])
def test_missing_peak_metrics(heap: int | None) -> None:
    execs = [make_executor("1", peak_jvm_heap_bytes=heap, peak_jvm_offheap_bytes=0)]
    result = run(executor_memory, make_app(executors=execs), P)
    assert (result.severity, result.title) == (Severity.NONE, "No peak memory metrics")
