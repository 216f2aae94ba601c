"""The forward-in-size split: each key trained on its smaller runs, scored on its larger ones.

A rolling origin in start order extrapolates only as far as a key happened to grow; this split
makes every key's larger half an extrapolation, so the extrapolation regime has figures on any
fleet. Per key (successful runs only):

1. order the runs by size (input bytes, then start time for ties);
2. the smaller half (rounded up, at least ``min_history`` runs) trains; its runs are first
   predicted in size order, each from the runs smaller than it, which gives the earlier
   out-of-sample errors that model selection and the intervals read;
3. each run of the larger half is predicted from the whole smaller half, as if it came next.

The class-aware model takes no part: this measures what a key's own runs say beyond their range.
A key with too few residuals of its own for an interval borrows those of every key's smaller
half (per regime), as the rolling origin borrows other keys' earlier ones. The size elasticity
(``Options.elasticity``) of a key's server is that of every other key, learnt from all their
runs: the server's other keys, as a refresh sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.predict import candidates, elasticity, rolling
from sparkscope.advisor.predict.backtest import Run
from sparkscope.advisor.predict.features import NUMERIC
from sparkscope.advisor.predict.regimes import REGIMES
from sparkscope.advisor.predict.rolling import PredictedRun

INPUT = NUMERIC.index("input_bytes")


@dataclass
class ForwardRun:
    """One run of a key's larger half, predicted from its smaller half."""

    key: str
    run: Run
    point: PredictedRun


def forward_split(
    runs: Iterable[Run], level: float, min_history: int = rolling.NEW_KEY_RUNS
) -> list[ForwardRun]:
    """Every larger-half run of every key with at least ``min_history + 1`` successful runs."""
    by_key: dict[str, list[Run]] = {}
    for r in runs:
        if r.ok and r.duration_ms:
            by_key.setdefault(r.key, []).append(r)
    values: dict[str, float | None] = {}
    if candidates.OPTIONS.elasticity:
        values = {k: _key_elasticity(rs) for k, rs in by_key.items()}
    halves = [
        _Half(key, by_key[key], level, min_history, _other_keys(values, key))
        for key in sorted(by_key)
    ]
    halves = [h for h in halves if h.test]
    # The residuals of every key's smaller half, per regime: what a key with too few of its own
    # borrows (as the rolling origin borrows other keys' earlier residuals).
    pool: dict[str, list[float]] = {k: [] for k in ("", *REGIMES)}
    for h in halves:
        for i, p in enumerate(h.points):
            e = rolling.log_error(float(h.y[i]), p.expected if p is not None else None)
            if p is not None and e is not None:
                pool[""].append(e / p.difficulty)
                pool[p.regime.kind].append(e / p.difficulty)
    return [f for h in halves for f in h.predict(level, pool, min_history)]


def _key_elasticity(runs: Sequence[Run]) -> float | None:
    import numpy as np

    rs = sorted(runs, key=lambda r: r.start_ms)[-elasticity.WINDOW :]
    X = np.array([r.vector for r in rs], dtype=float)
    y = np.array([float(r.duration_ms or 0) for r in rs])
    return elasticity.key_elasticity(X, y, candidates.OPTIONS.elasticity)


def _other_keys(
    values: dict[str, float | None], key: str
) -> Callable[[], elasticity.Elasticity | None]:
    return lambda: elasticity.leave_one_out(values, key)


class _Half:
    """One key's runs in size order, its smaller half predicted in that order."""

    def __init__(
        self,
        key: str,
        runs: Sequence[Run],
        level: float,
        min_history: int,
        elastic: Callable[[], Any] | None = None,
    ) -> None:
        import numpy as np

        self.key = key
        self.elastic = elastic
        self.ordered = sorted(runs, key=lambda r: (float(r.vector[INPUT]), r.start_ms))
        n = len(self.ordered)
        self.half = max(min_history, (n + 1) // 2)
        self.test = list(range(self.half, n)) if n > self.half else []
        self.X = np.array([r.vector for r in self.ordered], dtype=float)
        self.y = np.array([float(r.duration_ms or 0) for r in self.ordered])
        # Size order is the training order: positions replace the start times, so the trend
        # forecasts see a series in this order (they are not scored here).
        self.t = np.arange(n, dtype=float)
        self.ok = np.ones(n, dtype=bool)
        self.points: list[PredictedRun | None] = []
        if not self.test:
            return
        for i in range(self.half):
            self.points.append(
                rolling.predict_run(
                    self.X, self.y, self.ok, self.t, i, self.points, level,
                    min_history=min_history, elastic=elastic,
                )
            )  # fmt: skip

    def predict(
        self, level: float, pool: Mapping[str, Sequence[float]], min_history: int
    ) -> list[ForwardRun]:
        out = []
        for j in self.test:
            rows = [*range(self.half), j]
            p = rolling.predict_run(
                self.X[rows], self.y[rows], self.ok[rows], self.t[rows], self.half,
                self.points, level, pool, min_history=min_history, elastic=self.elastic,
            )  # fmt: skip
            out.append(ForwardRun(self.key, self.ordered[j], p))
        return out
