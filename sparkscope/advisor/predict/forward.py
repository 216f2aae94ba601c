"""The forward-in-size split: each key trained on its smaller runs, scored on its larger ones.

A rolling origin in start order extrapolates only as far as a key happened to grow; this split
makes every key's larger half an extrapolation, so the extrapolation regime has figures on any
fleet. Per key (successful runs only):

1. order the runs by size (input bytes, then start time for ties);
2. the smaller half (rounded up, at least ``min_history`` runs) trains; its runs are first
   predicted in size order, each from the runs smaller than it, which gives the earlier
   out-of-sample errors that model selection and the intervals read;
3. each run of the larger half is predicted from the whole smaller half, as if it came next.

The class-aware model and the pooled residuals of other keys take no part: this measures what a
key's own runs say beyond their range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.predict import rolling
from sparkscope.advisor.predict.backtest import Run
from sparkscope.advisor.predict.features import NUMERIC
from sparkscope.advisor.predict.rolling import Point

INPUT = NUMERIC.index("input_bytes")


@dataclass
class ForwardRun:
    """One run of a key's larger half, predicted from its smaller half."""

    key: str
    run: Run
    point: Point


def forward_split(
    runs: Iterable[Run], level: float, min_history: int = rolling.NEW_KEY_RUNS
) -> list[ForwardRun]:
    """Every larger-half run of every key with at least ``min_history + 1`` successful runs."""
    by_key: dict[str, list[Run]] = {}
    for r in runs:
        if r.ok and r.duration_ms:
            by_key.setdefault(r.key, []).append(r)
    out: list[ForwardRun] = []
    for key in sorted(by_key):
        out.extend(_key_split(key, by_key[key], level, min_history))
    return out


def _key_split(key: str, runs: Sequence[Run], level: float, min_history: int) -> list[ForwardRun]:
    import numpy as np

    ordered = sorted(runs, key=lambda r: (float(r.vector[INPUT]), r.start_ms))
    n = len(ordered)
    half = max(min_history, (n + 1) // 2)
    if n <= half:
        return []
    X = np.array([r.vector for r in ordered], dtype=float)
    y = np.array([float(r.duration_ms or 0) for r in ordered])
    # Size order is the training order: the start times are replaced by positions, so the trend
    # forecasts see a series in this order (they are not scored here).
    t = np.arange(n, dtype=float)
    ok = np.ones(n, dtype=bool)
    points: list[Point | None] = []
    for i in range(half):
        points.append(rolling.predict_run(X, y, ok, t, i, points, level, min_history=min_history))
    out = []
    for j in range(half, n):
        rows = [*range(half), j]
        Xj: Any = X[rows]
        p = rolling.predict_run(
            Xj, y[rows], ok[rows], t[rows], half, points, level, min_history=min_history
        )
        out.append(ForwardRun(key, ordered[j], p))
    return out
