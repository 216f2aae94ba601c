"""Rolling-origin backtest over every key, in global start order, with its error metrics.

Runs of all keys are visited in start order so that everything a prediction uses started before
the predicted run: the key's own earlier runs, the pooled residuals of other keys (the conformal
fallback) and the class-aware model, refitted whenever the successful runs seen grew by half.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor.predict import amdahl, candidates, classaware, elasticity, rolling
from sparkscope.advisor.predict.regimes import EXTRAPOLATION, INTERPOLATION, NEW_KEY, REGIMES
from sparkscope.advisor.predict.rolling import PredictedRun

#: Residuals of other runs kept for keys with too few of their own (the conformal fallback).
POOL = 500
#: Refit the class-aware model once the runs it could learn from grew by half.
REFIT_GROWTH = 1.5


@dataclass
class Run:
    """One run of a key as the backtest needs it."""

    key: str
    start_ms: int
    duration_ms: float | None
    ok: bool
    vector: Sequence[float]
    ref: Any = None


@dataclass
class KeyResult:
    """The runs of one key (start order) and their points."""

    key: str
    runs: list[Run]
    points: list[PredictedRun | None] = field(default_factory=list)
    forecasts: list[tuple[float, float, float] | None] = field(default_factory=list)


def _arrays(runs: Sequence[Run]) -> tuple[Any, Any, Any, Any]:
    import numpy as np

    X = np.array([r.vector for r in runs], dtype=float)
    y = np.array([r.duration_ms or 0.0 for r in runs], dtype=float)
    ok = np.array([r.ok for r in runs], dtype=bool)
    t = np.array([r.start_ms for r in runs], dtype=float)
    return X, y, ok, t


def run_backtest(
    runs: Iterable[Run], level: float, class_aware: bool = True, min_history: int = 5
) -> dict[str, KeyResult]:
    """Predict every run from the runs that started before it; returns the points per key."""
    import numpy as np

    by_key: dict[str, list[Run]] = {}
    for r in runs:
        by_key.setdefault(r.key, []).append(r)
    results: dict[str, KeyResult] = {}
    arrays: dict[str, tuple[Any, Any, Any, Any]] = {}
    order: list[tuple[int, str, int]] = []
    for key, rs in by_key.items():
        rs.sort(key=lambda r: r.start_ms)
        results[key] = KeyResult(key, rs, [None] * len(rs), [None] * len(rs))
        arrays[key] = _arrays(rs)
        order.extend((r.start_ms, key, i) for i, r in enumerate(rs))
    order.sort()
    pool: dict[str, deque[float]] = {k: deque(maxlen=POOL) for k in ("", *REGIMES)}
    fpool: deque[float] = deque(maxlen=POOL)
    seen_X: list[Sequence[float]] = []
    seen_y: list[float] = []
    fitted_on = 0
    class_pred: Any = None
    class_model: Any = None
    shares = amdahl.Tracker()
    elastic = elasticity.SizeTracker(candidates.OPTIONS.elasticity)
    all_X: Any = np.array([arrays[key][0][i] for _s, key, i in order]) if order else None
    for g, (_start, key, i) in enumerate(order):
        X, y, ok, t = arrays[key]
        res = results[key]
        if class_aware and len(seen_y) >= max(classaware.MIN_TRAIN, fitted_on * REFIT_GROWTH):
            class_model = classaware.fit(np.array(seen_X), np.array(seen_y))
            fitted_on = len(seen_y)
            # Until the next refit every later run is predicted by this fit: all at once.
            class_pred = None if class_model is None else np.full(len(order), np.nan)
            if class_model is not None:
                class_pred[g:] = class_model.predict(all_X[g:])
        extra = None
        class_train = None
        if class_pred is not None:
            extra = {"class_gbdt": float(class_pred[g])}
            anchor = rolling.anchor_runs(ok, i)
            if anchor is not None:
                class_train = list(class_model.predict(X[anchor]))
        few = candidates.OPTIONS.amdahl and int(ok[:i].sum()) < amdahl.FIT_RUNS
        share = shares.share() if few else None
        p = rolling.predict_run(
            X, y, ok, t, i, res.points, level, pool, fpool, extra, min_history, class_train, share,
            elastic.elasticity,
        )  # fmt: skip
        res.points[i] = p
        res.forecasts[i] = rolling.forecast_interval(p, res.points, y, ok, i, level, fpool)
        if ok[i]:
            e = rolling.log_error(float(y[i]), p.expected)
            if e is not None:
                pool[""].append(e / p.difficulty)
                pool[p.regime.kind].append(e / p.difficulty)
            f = res.forecasts[i]
            fe = rolling.log_error(float(y[i]), f[0] if f else None)
            if fe is not None:
                fpool.append(fe)
            seen_X.append(X[i])
            seen_y.append(float(y[i]))
            shares.add(key, X[i], float(y[i]))
            if candidates.OPTIONS.elasticity:
                elastic.add(key, X[i], float(y[i]))
    return results


@dataclass
class Metrics:
    """Error figures of one set of predictions."""

    n: int
    mape: float | None
    median_ape: float | None
    p90_ape: float | None
    off_2x: float | None
    coverage: float | None
    level: float
    skill_last: float | None
    skill_median5: float | None
    forecast_mape: float | None
    forecast_coverage: float | None


def _ape(actual: float, predicted: float | None) -> float | None:
    if predicted is None or actual <= 0:
        return None
    return abs(predicted - actual) / actual


#: (actual duration, point, served forecast) of one scored run.
Scored = tuple[float, PredictedRun, "tuple[float, float, float] | None"]


def scored_runs(
    results: Iterable[KeyResult], min_history: int, new_keys: bool = False
) -> list[Scored]:
    """The successful runs with a prediction and at least ``min_history`` earlier successful
    runs of their key (with ``new_keys``: instead those with fewer)."""
    out: list[Scored] = []
    for res in results:
        earlier = 0
        for r, p, f in zip(res.runs, res.points, res.forecasts, strict=True):
            if r.ok and p is not None and p.expected and (earlier < min_history) == new_keys:
                out.append((float(r.duration_ms or 0), p, f))
            earlier += bool(r.ok)
    return out


def metrics(results: Iterable[KeyResult], level: float, min_history: int) -> Metrics:
    """Metrics over the successful runs with at least ``min_history`` earlier successful runs."""
    return score(scored_runs(results, min_history), level)


def regime_metrics(
    results: Iterable[KeyResult], level: float, min_history: int
) -> dict[str, Metrics]:
    """Metrics per regime: interpolation and extrapolation among the runs :func:`metrics`
    scores, and the new-key regime over the runs with fewer earlier runs of their key."""
    results = list(results)
    scored = scored_runs(results, min_history)
    out = {
        kind: score([s for s in scored if s[1].regime.kind == kind], level)
        for kind in (INTERPOLATION, EXTRAPOLATION)
    }
    out[NEW_KEY] = score(scored_runs(results, min_history, new_keys=True), level)
    return out


#: Bands of the distance outside the range (the ratio to the largest or smallest seen).
BANDS = ((1.0, 1.25), (1.25, 2.0), (2.0, float("inf")))


def band_metrics(scored: Sequence[Scored], level: float) -> dict[str, Metrics]:
    """Metrics of extrapolated runs per band of their distance outside the range."""
    out = {}
    for lo, hi in BANDS:
        chosen = [
            s for s in scored if s[1].regime.kind == EXTRAPOLATION and lo < s[1].regime.ratio <= hi
        ]
        label = f"{lo:g}-{hi:g}x" if hi != float("inf") else f">{lo:g}x"
        out[label] = score(chosen, level)
    return out


def score(scored: Sequence[Scored], level: float) -> Metrics:
    """The error figures of a set of scored runs."""
    import numpy as np

    ape, last, med5, fape, off2 = [], [], [], [], []
    covered = fcovered = 0
    for y, p, f in scored:
        ape.append(_ape(y, p.expected))
        last.append(_ape(y, p.predictions.get("last_run")))
        med5.append(_ape(y, p.predictions.get("median_5")))
        ratio = max((p.expected or 0) / y, y / (p.expected or 1))
        off2.append(ratio >= 2)
        covered += bool(p.low is not None and p.high and p.low <= y <= p.high)
        if f is not None:
            fape.append(_ape(y, f[0]))
            fcovered += bool(f[1] <= y <= f[2])
    n = len(ape)
    if n == 0:
        return Metrics(0, None, None, None, None, None, level, None, None, None, None)
    a = np.array(ape, dtype=float)
    mape = float(a.mean())
    mlast = _mean(last)
    mmed = _mean(med5)
    return Metrics(
        n=n,
        mape=mape,
        median_ape=float(np.median(a)),
        p90_ape=float(np.percentile(a, 90)),
        off_2x=float(np.mean(off2)),
        coverage=covered / n,
        level=level,
        skill_last=1 - mape / mlast if mlast else None,
        skill_median5=1 - mape / mmed if mmed else None,
        forecast_mape=_mean(fape),
        forecast_coverage=fcovered / len(fape) if fape else None,
    )


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None
