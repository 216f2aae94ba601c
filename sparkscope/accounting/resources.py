"""Resource accounting: what an application was given, what it used, and how long it waited.

Pure functions over `heuristics.appdata.AppData` (no DB, no Flask), so the fetcher, analysis and the web
views all get the same figures. Every figure comes with a one-line formula for the UI.

Decisions (also in docs/resources.md):

- Used core time is the sum of the stages' executorRunTime, the SHS's own stage totals, which equal
  the sum of the tasks' run times. Executors' totalDuration is not used: on the recorded Spark 4.0.1
  applications it differs from the summed task durations by up to ±50%, in both directions.
- An executor holds its cores and memory from its add time until its remove time, or the end of the
  application when it was never removed, clipped to the application's window. This is the same for
  static and dynamic allocation.
- Outside local mode the driver holds spark.driver.cores and driver memory + overhead for the whole
  application. In local mode the single "driver" entry is the executor: its total_cores are the
  task slots and its memory is driver memory + overhead (the overhead stands for the JVM's native
  memory, which the off-heap peak counts as used), counted once.
- Memory used is peak JVM heap + peak JVM off-heap over each lifetime, and only when every counted
  JVM reported peaks; otherwise it is None (unknown), never an estimate. A zero peak counts as not
  reported: the SHS shows zeros when no metrics sample reached it (short apps), and a live JVM
  never has an empty heap.
- GB means GiB (2^30 bytes), the unit Spark and YARN size memory in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from heuristics.appdata import AppData, ExecutorSummary
from sparkscope.accounting.waits import Wait, wait_time

MS_PER_HOUR = 3_600_000
BYTES_PER_GB = 1024**3

FORMULAS: dict[str, str] = {
    "allocated_core_hours": (
        "Σ over executors of cores × (remove time or app end − add time)"
        " + driver cores × app duration (not in local mode)"
    ),
    "used_core_hours": "Σ over stage attempts of executor run time",
    "cpu_core_hours": "Σ over stage attempts of executor CPU time",
    "wasted_core_hours": "max(0, allocated core-hours − used core-hours)",
    "core_efficiency": "used core-hours ÷ allocated core-hours",
    "allocated_gb_hours": (
        "Σ over executors of (executor memory + overhead) × lifetime"
        " + (driver memory + overhead) × app duration (local mode: driver only, over its lifetime);"
        " overhead = max(384 MiB, 10% of memory)"
        " unless set; GB = 2^30 bytes"
    ),
    "used_gb_hours": (
        "Σ over executors and driver of (peak JVM heap + peak JVM off-heap) × lifetime;"
        " unknown unless every one reported non-zero peaks"
    ),
    "wasted_gb_hours": "max(0, allocated GB-hours − used GB-hours); unknown when used is unknown",
    "memory_efficiency": "used GB-hours ÷ allocated GB-hours",
    "executors": "executors that ran tasks (the driver itself in local mode)",
    "to_first_executor_s": (
        "first executor add time − app start (local mode: driver add time − app start)"
    ),
    "driver_only_s": "app duration − time covered by the union of jobs' [submission, completion]",
    "stage_scheduling_delay_s": "Σ over stage attempts of (first task launch − submission)",
}


@dataclass(frozen=True)
class Resources:
    """Allocated, used and wasted core and memory hours of one application, and its wait time."""

    allocated_core_hours: float
    used_core_hours: float
    cpu_core_hours: float
    wasted_core_hours: float
    core_efficiency: float | None
    allocated_gb_hours: float
    used_gb_hours: float | None
    wasted_gb_hours: float | None
    memory_efficiency: float | None
    executors: int
    local_mode: bool
    wait: Wait
    notes: tuple[str, ...] = ()
    formulas: dict[str, str] = field(default_factory=lambda: dict(FORMULAS))

    def to_dict(self) -> dict[str, object]:
        """JSON-able form, the `resources` object of the JSON API."""
        return {
            "allocated_core_hours": self.allocated_core_hours,
            "used_core_hours": self.used_core_hours,
            "cpu_core_hours": self.cpu_core_hours,
            "wasted_core_hours": self.wasted_core_hours,
            "core_efficiency": self.core_efficiency,
            "allocated_gb_hours": self.allocated_gb_hours,
            "used_gb_hours": self.used_gb_hours,
            "wasted_gb_hours": self.wasted_gb_hours,
            "memory_efficiency": self.memory_efficiency,
            "executors": self.executors,
            "local_mode": self.local_mode,
            "wait": self.wait.to_dict(),
            "notes": list(self.notes),
            "formulas": dict(self.formulas),
        }


@dataclass(frozen=True)
class _Holder:
    # One JVM that holds cores and memory for an interval: an executor, or the driver.
    cores: int
    memory_bytes: int
    start_ms: int
    end_ms: int
    peak_bytes: int | None

    @property
    def lifetime_ms(self) -> int:
        return max(0, self.end_ms - self.start_ms)


@dataclass(frozen=True)
class _Allocation:
    start_ms: int
    end_ms: int
    local: bool
    non_driver: list[ExecutorSummary]
    drivers: list[ExecutorSummary]
    holders: list[_Holder]
    allocated_core_hours: float
    used_core_hours: float


def _allocation(app: AppData) -> _Allocation:
    start_ms, end_ms = _app_window(app)
    non_driver = [e for e in app.executors if not e.is_driver]
    drivers = [e for e in app.executors if e.is_driver]
    local = app.conf.local or (not non_driver and any(d.total_tasks > 0 for d in drivers))
    holders = _holders(app, local, non_driver, drivers, start_ms, end_ms)
    return _Allocation(
        start_ms=start_ms,
        end_ms=end_ms,
        local=local,
        non_driver=non_driver,
        drivers=drivers,
        holders=holders,
        allocated_core_hours=sum(h.cores * h.lifetime_ms for h in holders) / MS_PER_HOUR,
        used_core_hours=sum(max(0, s.executor_run_time_ms) for s in app.stages) / MS_PER_HOUR,
    )


def core_hours(app: AppData) -> tuple[float, float]:
    """(allocated, wasted) core-hours: the figures stored per application for ranking, as
    :func:`compute_resources` computes them, without the rest of the accounting."""
    a = _allocation(app)
    return a.allocated_core_hours, max(0.0, a.allocated_core_hours - a.used_core_hours)


def compute_resources(app: AppData) -> Resources:
    """Resource accounting and wait time of one application from its SHS data."""
    a = _allocation(app)
    start_ms, end_ms, local = a.start_ms, a.end_ms, a.local
    non_driver, drivers, holders = a.non_driver, a.drivers, a.holders
    notes: list[str] = []

    allocated_core_hours = a.allocated_core_hours
    used_core_hours = a.used_core_hours
    cpu_core_hours = sum(max(0, s.executor_cpu_time_ns) for s in app.stages) / 1e6 / MS_PER_HOUR
    wasted_core_hours = allocated_core_hours - used_core_hours
    if wasted_core_hours < 0:
        notes.append(
            f"used core-hours exceed allocated by {-wasted_core_hours:.4g}; "
            "wasted core-hours clamped to 0 (executor lifetimes or cores under-reported)"
        )
        wasted_core_hours = 0.0

    allocated_gb_hours = (
        sum(h.memory_bytes * h.lifetime_ms for h in holders) / BYTES_PER_GB / MS_PER_HOUR
    )
    used_gb_hours: float | None = None
    wasted_gb_hours: float | None = None
    if holders and all(h.peak_bytes is not None for h in holders):
        used_gb_hours = (
            sum((h.peak_bytes or 0) * h.lifetime_ms for h in holders) / BYTES_PER_GB / MS_PER_HOUR
        )
        wasted_gb_hours = allocated_gb_hours - used_gb_hours
        if wasted_gb_hours < 0:
            notes.append(
                f"peak memory exceeds allocated by {-wasted_gb_hours:.4g} GB-hours; "
                "wasted GB-hours clamped to 0"
            )
            wasted_gb_hours = 0.0
    else:
        notes.append(
            "memory used is unknown: the SHS has no peak JVM memory sample for every executor"
        )

    return Resources(
        allocated_core_hours=allocated_core_hours,
        used_core_hours=used_core_hours,
        cpu_core_hours=cpu_core_hours,
        wasted_core_hours=wasted_core_hours,
        core_efficiency=_ratio(used_core_hours, allocated_core_hours),
        allocated_gb_hours=allocated_gb_hours,
        used_gb_hours=used_gb_hours,
        wasted_gb_hours=wasted_gb_hours,
        memory_efficiency=None
        if used_gb_hours is None
        else _ratio(used_gb_hours, allocated_gb_hours),
        executors=len(drivers[:1]) if local else len(non_driver),
        local_mode=local,
        wait=wait_time(app, local, non_driver, drivers, start_ms, end_ms),
        notes=tuple(notes),
    )


def cost(
    resources: Resources, core_hour_price: float | None, gb_hour_price: float | None
) -> dict[str, float | None] | None:
    """Money for allocated and wasted hours; None when neither price is set.

    An unset price means that resource is not charged. A wasted figure is None when it
    depends on memory used and memory used is unknown.
    """
    if core_hour_price is None and gb_hour_price is None:
        return None
    gb_price = gb_hour_price or 0.0
    allocated_core = price_of(resources.allocated_core_hours, core_hour_price) or 0.0
    allocated_memory = price_of(resources.allocated_gb_hours, gb_hour_price) or 0.0
    wasted_core = price_of(resources.wasted_core_hours, core_hour_price) or 0.0
    wasted_memory: float | None
    if gb_price == 0:
        wasted_memory = 0.0
    else:
        wasted_memory = price_of(resources.wasted_gb_hours, gb_price)
    return {
        "core_hour_price": core_hour_price,
        "gb_hour_price": gb_hour_price,
        "allocated_core_cost": allocated_core,
        "allocated_memory_cost": allocated_memory,
        "allocated_cost": allocated_core + allocated_memory,
        "wasted_core_cost": wasted_core,
        "wasted_memory_cost": wasted_memory,
        "wasted_cost": None if wasted_memory is None else wasted_core + wasted_memory,
    }


def price_of(hours: float | None, price: float | None) -> float | None:
    """Money for ``hours`` of a resource at ``price`` per hour; None when either is unknown."""
    if hours is None or price is None:
        return None
    return hours * price


def _app_window(app: AppData) -> tuple[int, int]:
    # The SHS always has a start for a finished app; the fallbacks keep odd inputs total.
    duration_ms = max(0, app.duration_ms)
    if app.start_time_ms is not None:
        start_ms = app.start_time_ms
        end_ms = app.end_time_ms if app.end_time_ms is not None else start_ms + duration_ms
    elif app.end_time_ms is not None:
        end_ms = app.end_time_ms
        start_ms = end_ms - duration_ms
    else:
        adds = [e.add_time_ms for e in app.executors if e.add_time_ms is not None]
        start_ms = min(adds, default=0)
        end_ms = start_ms + duration_ms
    return start_ms, max(start_ms, end_ms)


def _lifetime(e: ExecutorSummary, start_ms: int, end_ms: int) -> tuple[int, int]:
    add_ms = start_ms if e.add_time_ms is None else min(max(e.add_time_ms, start_ms), end_ms)
    remove_ms = end_ms if e.remove_time_ms is None else min(max(e.remove_time_ms, add_ms), end_ms)
    return add_ms, remove_ms


def _peak_bytes(e: ExecutorSummary) -> int | None:
    # Zeros are what the SHS shows when no metrics sample arrived, not a measurement.
    if not e.peak_jvm_heap_bytes or not e.peak_jvm_offheap_bytes:
        return None
    return e.peak_jvm_heap_bytes + e.peak_jvm_offheap_bytes


def _holders(
    app: AppData,
    local: bool,
    non_driver: list[ExecutorSummary],
    drivers: list[ExecutorSummary],
    start_ms: int,
    end_ms: int,
) -> list[_Holder]:
    conf = app.conf
    driver_memory_bytes = conf.driver_memory_bytes + conf.driver_overhead_bytes
    driver = drivers[0] if drivers else None
    if local:
        if driver is None:
            return []
        add_ms, remove_ms = _lifetime(driver, start_ms, end_ms)
        # The driver JVM is the executor, so it is counted once, with the task slots as cores.
        return [
            _Holder(
                cores=max(0, driver.total_cores),
                memory_bytes=driver_memory_bytes,
                start_ms=add_ms,
                end_ms=remove_ms,
                peak_bytes=_peak_bytes(driver),
            )
        ]
    executor_memory_bytes = conf.executor_memory_bytes + conf.executor_overhead_bytes
    holders = []
    for e in non_driver:
        add_ms, remove_ms = _lifetime(e, start_ms, end_ms)
        holders.append(
            _Holder(
                cores=max(0, e.total_cores),
                memory_bytes=executor_memory_bytes,
                start_ms=add_ms,
                end_ms=remove_ms,
                peak_bytes=_peak_bytes(e),
            )
        )
    # The resource manager holds the driver's container for the whole application.
    holders.append(
        _Holder(
            cores=conf.driver_cores,
            memory_bytes=driver_memory_bytes,
            start_ms=start_ms,
            end_ms=end_ms,
            peak_bytes=None if driver is None else _peak_bytes(driver),
        )
    )
    return holders


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None
