"""Task slots over an application's life: how many were allocated and how many were busy, and the
figures read from the two curves (idle capacity, the serial tail, the longest gap between stages).

Pure functions over plain rows (no database, no Flask); numpy is imported when a timeline is built.

Decisions (also in docs/web.md, "Timeline"):

- Allocated slots are the executors' cores from their add time until their remove time, or the
  application's end when never removed, clipped to the application's window. The driver holds no
  task slot, except in local mode, where its entry is the executor.
- Busy slots come from every task's launch and finish when the event log stored them (exact
  concurrency). Otherwise each stage attempt is taken as busy at a constant rate over its span
  (first task launch, or submission, to completion): its task time ÷ its span length. Either way
  busy is capped by the allocated slots at each moment (executor times can be reported late).
- The serial tail is the final stretch of the run in which busy slots never exceed
  max(1, 10% of the allocated slots); the longest gap is the longest time with no stage attempt
  running, the application's start and end included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

MS_PER_HOUR = 3_600_000
#: A moment belongs to the serial tail when busy slots <= max(TAIL_SLOTS, TAIL_SHARE × allocated).
TAIL_SLOTS = 1.0
TAIL_SHARE = 0.10
_EPS = 1e-9


class ExecutorLife(NamedTuple):
    """One executor (or the driver) as stored: cores and add / remove times (epoch ms)."""

    executor_id: str
    is_driver: bool
    cores: int
    add_ms: int | None
    remove_ms: int | None


class StageSpan(NamedTuple):
    """One stage attempt: its span (epoch ms), its total task time, and, when the event log stored
    every one of its tasks, their (launch, finish) times in epoch ms."""

    stage_id: int
    attempt_id: int
    start_ms: int | None
    end_ms: int | None
    task_time_ms: int
    tasks: Sequence[tuple[int, int]] | None = None


@dataclass(frozen=True)
class SlotTimeline:
    """Allocated and busy task slots as step functions: on ``[times[i], times[i + 1])`` there were
    ``allocated[i]`` slots and ``busy[i]`` of them busy (numpy arrays; times in epoch ms)."""

    start_ms: int
    end_ms: int
    times: Any
    allocated: Any
    busy: Any
    #: Stage attempts whose busy slots came from every task's times, and from their span.
    exact_stages: int
    estimated_stages: int
    #: Busy slot-ms above the allocated slots, removed by the cap.
    capped_slot_ms: float
    #: The serial tail: it starts at ``tail_start_ms`` and lasts to the end.
    tail_start_ms: int
    #: The longest stretch with no stage attempt running (start, end), None for an empty run.
    longest_gap: tuple[int, int] | None

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms

    @property
    def method(self) -> str:
        """``tasks`` (every stage from its tasks), ``stages`` (from stage spans) or ``mixed``."""
        if self.exact_stages and not self.estimated_stages:
            return "tasks"
        return "mixed" if self.exact_stages else "stages"

    def _area(self, values: Any) -> float:
        import numpy as np

        return float(np.sum(values * np.diff(self.times))) if len(values) else 0.0

    @property
    def allocated_slot_ms(self) -> float:
        return self._area(self.allocated)

    @property
    def busy_slot_ms(self) -> float:
        return self._area(self.busy)

    @property
    def idle_slot_ms(self) -> float:
        return max(0.0, self.allocated_slot_ms - self.busy_slot_ms)

    @property
    def idle_fraction(self) -> float | None:
        alloc = self.allocated_slot_ms
        return self.idle_slot_ms / alloc if alloc > 0 else None

    @property
    def idle_core_hours(self) -> float:
        return self.idle_slot_ms / MS_PER_HOUR

    @property
    def peak_allocated(self) -> float:
        return float(self.allocated.max()) if len(self.allocated) else 0.0

    @property
    def tail_ms(self) -> int:
        return self.end_ms - self.tail_start_ms

    @property
    def tail_share(self) -> float | None:
        return self.tail_ms / self.duration_ms if self.duration_ms > 0 else None


def slot_holders(executors: Sequence[ExecutorLife], local: bool) -> list[ExecutorLife]:
    """The entries that hold task slots: the executors, or in local mode the driver alone."""
    if local:
        return [e for e in executors if e.is_driver][:1]
    return [e for e in executors if not e.is_driver]


def _steps(times: Any, deltas: Any) -> tuple[Any, Any]:
    """Change points (+delta at a time) -> (sorted distinct times, value from each onwards)."""
    import numpy as np

    order = np.argsort(times, kind="stable")
    t = times[order]
    v = np.cumsum(deltas[order])
    last = np.append(t[1:] != t[:-1], True) if len(t) else np.zeros(0, dtype=bool)
    return t[last], v[last]


def _at(t: Any, v: Any, grid: Any) -> Any:
    """The step function (t, v) (0 before its first time) at each point of ``grid``."""
    import numpy as np

    if not len(t):
        return np.zeros(len(grid))
    idx = np.searchsorted(t, grid, side="right") - 1
    return np.where(idx >= 0, v[np.clip(idx, 0, None)], 0.0)


def _clip(a: int | None, b: int | None, start: int, end: int) -> tuple[int, int] | None:
    if a is None or b is None:
        return None
    a, b = min(max(a, start), end), min(max(b, start), end)
    return (a, b) if b > a else None


def slot_timeline(
    start_ms: int,
    end_ms: int,
    executors: Sequence[ExecutorLife],
    stages: Sequence[StageSpan],
    local: bool,
) -> SlotTimeline:
    """Allocated and busy slots of one application over ``[start_ms, end_ms]`` and the figures read
    from them (see the module's decisions)."""
    import numpy as np

    end_ms = max(start_ms, end_ms)
    a_times: list[int] = []
    a_deltas: list[float] = []
    for e in slot_holders(executors, local):
        add = start_ms if e.add_ms is None else e.add_ms
        span = _clip(add, end_ms if e.remove_ms is None else e.remove_ms, start_ms, end_ms)
        if span is not None and e.cores > 0:
            a_times += [span[0], span[1]]
            a_deltas += [e.cores, -e.cores]
    b_times: list[Any] = []
    b_deltas: list[Any] = []
    exact = 0
    spans: list[tuple[int, int]] = []
    est_lo: list[int] = []
    est_hi: list[int] = []
    est_rate: list[float] = []
    for s in stages:
        span = _clip(s.start_ms, s.end_ms, start_ms, end_ms)
        if span is not None:
            spans.append(span)
        if s.tasks is not None:
            exact += 1
            tasks = np.asarray(s.tasks, dtype=np.int64).reshape(-1, 2)
            lo = np.clip(tasks[:, 0], start_ms, end_ms)
            hi = np.clip(tasks[:, 1], start_ms, end_ms)
            keep = hi > lo
            b_times += [lo[keep], hi[keep]]
            b_deltas += [np.ones(int(keep.sum())), -np.ones(int(keep.sum()))]
        elif span is not None and s.start_ms is not None and s.end_ms is not None:
            est_lo.append(span[0])
            est_hi.append(span[1])
            est_rate.append(max(0, s.task_time_ms) / max(1, s.end_ms - s.start_ms))
    if est_rate:
        rates = np.array(est_rate)
        b_times.append(np.array(est_lo + est_hi, dtype=np.int64))
        b_deltas.append(np.concatenate([rates, -rates]))
    estimated = len(est_rate)
    at, av = _steps(np.array(a_times, dtype=np.int64), np.array(a_deltas, dtype=float))
    if b_times:
        bt, bv = _steps(np.concatenate(b_times), np.concatenate(b_deltas))
    else:
        bt, bv = np.zeros(0, dtype=np.int64), np.zeros(0)
    grid = np.unique(np.concatenate([[start_ms, end_ms], at, bt]).astype(np.int64))
    grid = grid[(grid >= start_ms) & (grid <= end_ms)]
    left = grid[:-1]
    allocated = np.maximum(_at(at, av, left), 0.0)
    raw = np.maximum(_at(bt, bv, left), 0.0)
    raw[raw < _EPS] = 0.0
    busy = np.minimum(raw, allocated)
    capped = float(np.sum((raw - busy) * np.diff(grid))) if len(left) else 0.0
    return SlotTimeline(
        start_ms=start_ms,
        end_ms=end_ms,
        times=grid,
        allocated=allocated,
        busy=busy,
        exact_stages=exact,
        estimated_stages=estimated,
        capped_slot_ms=capped,
        tail_start_ms=_tail_start(grid, allocated, busy, start_ms),
        longest_gap=longest_gap(start_ms, end_ms, spans),
    )


def _tail_start(grid: Any, allocated: Any, busy: Any, start_ms: int) -> int:
    import numpy as np

    limit = np.maximum(TAIL_SLOTS, TAIL_SHARE * allocated)
    above = np.nonzero(busy > limit + _EPS)[0]
    return int(grid[above[-1] + 1]) if len(above) else start_ms


def longest_gap(
    start_ms: int, end_ms: int, spans: Sequence[tuple[int, int]]
) -> tuple[int, int] | None:
    """The longest stretch of ``[start_ms, end_ms]`` covered by none of ``spans`` (the first one
    when several are as long); None when there is none."""
    best: tuple[int, int] | None = None
    reached = start_ms
    for a, b in sorted(spans):
        if a > reached and (best is None or a - reached > best[1] - best[0]):
            best = (reached, a)
        reached = max(reached, b)
    if end_ms > reached and (best is None or end_ms - reached > best[1] - best[0]):
        best = (reached, end_ms)
    return best
