"""Verdict of a run against its expected duration, and the causes of a regression.

- ``insufficient_history``: fewer than ``min_history`` earlier successful runs of its key;
- ``regression``: slower than the interval's top by more than ``margin`` (relative);
- ``improvement``: faster than the interval's bottom by more than ``margin``;
- ``normal``: otherwise.

Causes compare the run with the earlier successful runs of its key (the latest one for settings
and stages, the median of the latest five for sizes); only what the stored data shows is said.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from sparkscope.advisor.predict.features import RunFeatures

INPUT_GREW = 1.25
STAGE_SLOWER = 1.5
STAGE_SHARE = 0.1
MIN_STAGE_BYTES = 1 << 20


def verdict(
    actual_ms: float | None,
    low_ms: float | None,
    high_ms: float | None,
    expected_ms: float | None,
    earlier_ok: int,
    min_history: int,
    margin: float,
) -> tuple[str, float | None]:
    """(verdict, excess over the expected duration in percent)."""
    if earlier_ok < min_history or not expected_ms or actual_ms is None or actual_ms <= 0:
        return "insufficient_history", None
    excess = 100.0 * (actual_ms - expected_ms) / expected_ms
    if high_ms is not None and actual_ms > high_ms * (1 + margin):
        return "regression", excess
    if low_ms is not None and actual_ms < low_ms * (1 - margin):
        return "improvement", excess
    return "normal", excess


def _size(v: float) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if v >= div:
            return f"{v / div:.1f} {unit}"
    return f"{v:.0f} B"


def causes(run: RunFeatures, earlier: Sequence[RunFeatures]) -> list[str]:
    """Plain-language causes of a slow run, from its features and its key's earlier runs."""
    if not earlier:
        return []
    out: list[str] = []
    last = earlier[-1]
    recent = earlier[-5:]
    base = median(r.values.get("input_bytes", 0.0) for r in recent)
    now = run.values.get("input_bytes", 0.0)
    if base > 0 and now >= INPUT_GREW * base:
        out.append(
            f"input grew {now / base:.1f}x ({_size(now)} vs {_size(base)}, "
            "median of the previous runs)"
        )
    changed = [
        f"{k} {last.settings.get(k, '(unset)')} -> {run.settings.get(k, '(unset)')}"
        for k in sorted(set(run.settings) | set(last.settings))
        if run.settings.get(k) != last.settings.get(k)
    ]
    if changed:
        out.append("setting changed: " + "; ".join(changed))
    stage = _slower_stage(run, last)
    if stage:
        out.append(stage)
    before = max(r.failed_tasks for r in recent)
    if run.failed_tasks > before or run.failed_stages > max(r.failed_stages for r in recent):
        out.append(
            f"more failures/retries: {run.failed_tasks} failed tasks, "
            f"{run.failed_stages} failed stages (previous runs at most {before} failed tasks)"
        )
    return out


def _slower_stage(run: RunFeatures, last: RunFeatures) -> str | None:
    """The stage whose time per byte read grew most (at least 1.5x, 10% of the run's stage time)."""
    prev = {w[0]: w for w in last.stage_work}
    total = sum(int(w[2]) for w in run.stage_work) or 1
    best: tuple[float, str] | None = None
    for label, nbytes, ms in run.stage_work:
        p = prev.get(label)
        if p is None or nbytes < MIN_STAGE_BYTES or p[1] < MIN_STAGE_BYTES or p[2] <= 0:
            continue
        if ms < STAGE_SHARE * total:
            continue
        ratio = (ms / nbytes) / (p[2] / p[1])
        if ratio >= STAGE_SLOWER and (best is None or ratio > best[0]):
            best = (ratio, label)
    if best is None:
        return None
    return f"stage slower per byte: {best[1]} took {best[0]:.1f}x longer per byte read"
