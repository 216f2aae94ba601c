"""Measures shared by heuristics: executors that run tasks, quantiles, ratios, formatting."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from heuristics.appdata import AppData, ExecutorSummary, StageSummary, TaskDistribution


def task_executors(app: AppData) -> list[ExecutorSummary]:
    """Executors that run tasks: the non-driver ones, or the driver alone in local mode."""
    execs = [e for e in app.executors if not e.is_driver]
    if execs:
        return execs
    return [e for e in app.executors if e.is_driver]


def total_task_cores(app: AppData) -> int:
    """Task slots: summed cores of the executors that run tasks (at least 1)."""
    return max(1, sum(max(e.total_cores, 0) for e in task_executors(app)))


def quantile_value(dist: TaskDistribution, key: str, q: float) -> float | None:
    """Metric value at quantile q by linear interpolation, or None when the metric is absent."""
    values = dist.metrics.get(key)
    qs = dist.quantiles
    n = len(qs)
    if not values or not n or len(values) != n:
        return None
    if q <= qs[0]:
        return float(values[0])
    if q > qs[-1]:
        return float(values[-1])
    i = bisect.bisect_left(qs, q)  # qs[i - 1] < q <= qs[i]
    if q == qs[i]:
        return float(values[i])
    span = qs[i] - qs[i - 1]
    frac = 0.0 if span <= 0 else (q - qs[i - 1]) / span
    return float(values[i - 1] + frac * (values[i] - values[i - 1]))


def approximate_task_values(dist: TaskDistribution, key: str, num_tasks: int) -> list[float]:
    """Reconstruct num_tasks per-task values (sorted) by sampling the quantile curve."""
    values = dist.metrics.get(key)
    qs = dist.quantiles
    if num_tasks <= 0 or not values or not qs or len(values) != len(qs):
        return []
    if num_tasks == 1:
        single = quantile_value(dist, key, 0.5)
        return [] if single is None else [single]
    if len(qs) == 1:  # one quantile: every task at its value (as TaskCurve reads it)
        return [float(values[0])] * num_tasks
    return _sample_curve(qs, values, num_tasks)


def _sample_curve(qs: Sequence[float], values: Sequence[float], num_tasks: int) -> list[float]:
    """The loop of :func:`approximate_task_values` for a grid of two quantiles or more, the same
    values computed the same way: the stretch of the curve a sample point falls in (its ends,
    span and rise) is looked up again only when the point passes the stretch's upper end."""
    out: list[float] = []
    append = out.append
    last = len(qs) - 1
    step = 1.0 / (num_tasks - 1)
    start, first_value, last_value = qs[0], float(values[0]), float(values[-1])
    j = 1
    low, high, base = qs[0], qs[1], values[0]
    span, rise = high - low, values[1] - base
    for i in range(num_tasks):
        q = i * step
        if q <= start:
            append(first_value)
            continue
        if q > high:
            while j < last and q > qs[j]:
                j += 1
            low, high, base = qs[j - 1], qs[j], values[j - 1]
            span, rise = high - low, values[j] - base
            if q > high:
                append(last_value)
                continue
        frac = 0.0 if span <= 0 else (q - low) / span
        append(float(base + frac * rise))
    return out


class TaskCurve:
    """The ``n`` per-task values :func:`approximate_task_values` reconstructs, without building
    them: the value of one task, how many are below a value, and the sum of the first ``c``, each
    in O(log n + points of the curve) instead of O(n)."""

    def __init__(self, dist: TaskDistribution, key: str, n: int) -> None:
        self.qs = [float(q) for q in dist.quantiles]
        self.vs = [float(v) for v in dist.metrics[key]]
        self.n = n
        self.step = 1.0 / (n - 1)
        # Per quantile, how many tasks are at or before it (the end of the stretch of the curve
        # below it), worked out when first read; and the prefix sums asked for (a split asks for
        # some more than once). Both read lazily, so a curve raises where it did when unread.
        self._ends: list[int | None] = [None] * len(self.qs)
        self._sums: dict[int, float] = {}

    def value(self, i: int) -> float:
        """The i-th smallest task's value (as approximate_task_values gives it)."""
        qs, vs = self.qs, self.vs
        q = i * self.step
        if q <= qs[0]:
            return vs[0]
        j = bisect.bisect_left(qs, q)
        if j >= len(qs):
            return vs[-1]
        span = qs[j] - qs[j - 1]
        frac = 0.0 if span <= 0 else (q - qs[j - 1]) / span
        return vs[j - 1] + frac * (vs[j] - vs[j - 1])

    def count_below(self, m: float) -> int:
        """How many tasks have a value below ``m`` (the values are sorted)."""
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            if self.value(mid) < m:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _last_at_or_below(self, q: float) -> int:
        """The largest i with i × step ≤ q (-1 when none), by the comparison value() makes."""
        i = min(self.n - 1, max(-1, math.floor(q / self.step)))
        while i + 1 < self.n and (i + 1) * self.step <= q:
            i += 1
        while i >= 0 and i * self.step > q:
            i -= 1
        return i

    def prefix_sum(self, c: int) -> float:
        """The sum of the ``c`` smallest values."""
        c = max(0, min(c, self.n))
        found = self._sums.get(c)
        if found is None:
            found = self._sums[c] = self._prefix_sum(c)
        return found

    def _prefix_sum(self, c: int) -> float:
        qs, vs, step, ends = self.qs, self.vs, self.step, self._ends
        first = ends[0]
        if first is None:  # tasks at or before the first quantile
            first = ends[0] = self._last_at_or_below(qs[0]) + 1
        total = vs[0] * (first if first < c else c)
        start = first
        # One pass over the curve's stretches (min() written out: this loop is the hot part).
        for j in range(1, len(qs)):
            if start >= c:
                return total
            end = ends[j]
            if end is None:
                end = ends[j] = self._last_at_or_below(qs[j]) + 1
            if c < end:
                end = c
            count = end - start
            if count > 0:
                span = qs[j] - qs[j - 1]
                slope = 0.0 if span <= 0 else (vs[j] - vs[j - 1]) / span
                index_sum = (start + end - 1) * count / 2
                total += count * vs[j - 1] + slope * (step * index_sum - count * qs[j - 1])
                start = end
        return total + vs[-1] * max(0, c - start)


def stage_duration_ms(stage: StageSummary) -> int | None:
    """Wall time of a stage from its first task (or submission) to completion."""
    start = stage.first_task_launched_time_ms or stage.submission_time_ms
    if start is None or stage.completion_time_ms is None:
        return None
    return max(0, stage.completion_time_ms - start)


def safe_ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, with 0/0 = 0 and x/0 = inf."""
    if denominator > 0:
        return numerator / denominator
    return 0.0 if numerator <= 0 else math.inf


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence."""
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def fmt_ms(ms: float) -> str:
    """Human duration: 850 ms, 5.1 s, 3.2 min, 1.5 h."""
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def fmt_bytes(num_bytes: float) -> str:
    """Human size in binary units: 512 B, 1.5 KiB, 3.0 GiB."""
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def fmt_ratio(value: float) -> str:
    """A ratio as 8.2× (or ∞×)."""
    return "∞×" if math.isinf(value) else f"{value:.1f}×"


def fmt_count(n: int, noun: str) -> str:
    """A count with its noun in the right number: 1 stage, 2 stages, 1 task slot."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def round2(value: float) -> float:
    """Round for display tables, keeping infinities (stored as None by HeuristicResult.to_dict)."""
    return value if math.isinf(value) else round(value, 2)
