"""The rolling origin: each run predicted from the runs that started before it, models competing.

For run ``i`` of a key (runs in start order):

1. training runs: the successful runs among the ``WINDOW`` before ``i`` (failed or killed runs
   never train, but are predicted and get a verdict);
2. every candidate model predicts run ``i`` from them (out of sample by construction);
3. the serving model is the one with the smallest mean absolute log error over the latest
   ``SELECT_RUNS`` earlier origins of this key (before ``MIN_SCORED`` scored origins: the
   size-scaled baseline, which needs no history of errors);
4. the interval is split-conformal on the serving model's own earlier out-of-sample residuals
   (those of the class, or of every key, when the key has fewer than ``MIN_RESIDUALS``).

The same function serves at fetch time (one new run, earlier predictions read from storage) and in
the backtest (every run in turn).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor import conformal, forecast
from sparkscope.advisor.baselines import MODELS as BASELINES
from sparkscope.advisor.knn import MODELS as KNN

WINDOW = 200
SELECT_RUNS = 20
RESIDUAL_RUNS = 60
MIN_SCORED = 3
DEFAULT_MODEL = "size_scaled"

MODELS: dict[str, Callable[[Any, Any, Any], float]] = {**BASELINES, **KNN}


@dataclass
class Point:
    """The outcome for one run: every candidate's prediction and what serves."""

    predictions: dict[str, float]
    model: str = ""
    expected: float | None = None
    low: float | None = None
    high: float | None = None
    n_train: int = 0
    forecasts: dict[str, float] = field(default_factory=dict)
    forecast_model: str = ""


def log_error(actual: float | None, predicted: float | None) -> float | None:
    if actual is None or predicted is None or actual <= 0 or predicted <= 0:
        return None
    return math.log(actual / predicted)


def _residuals(
    model: str, points: Sequence[Point | None], y: Any, ok: Any, i: int, runs: int, forecast_: bool
) -> list[float]:
    out: list[float] = []
    j = i - 1
    while j >= 0 and len(out) < runs:
        p = points[j]
        if p is not None and ok[j]:
            preds = p.forecasts if forecast_ else p.predictions
            e = log_error(float(y[j]), preds.get(model))
            if e is not None:
                out.append(e)
        j -= 1
    return out


def select(
    names: Sequence[str], points: Sequence[Point | None], y: Any, ok: Any, i: int, forecast_: bool
) -> str | None:
    """The candidate with the smallest mean absolute log error over the latest origins."""
    best, best_err = None, math.inf
    for name in names:
        errs = _residuals(name, points, y, ok, i, SELECT_RUNS, forecast_)
        if len(errs) < MIN_SCORED:
            continue
        err = sum(abs(e) for e in errs) / len(errs)
        if err < best_err - 1e-12:
            best, best_err = name, err
    return best


def predict_run(
    X: Any,
    y: Any,
    ok: Any,
    t: Any,
    i: int,
    points: Sequence[Point | None],
    level: float,
    pooled: Sequence[float] = (),
    pooled_forecast: Sequence[float] = (),
    extra: Mapping[str, float] | None = None,
) -> Point:
    """Predict run ``i`` (and forecast it as the next run) from the runs before it."""
    import numpy as np

    lo = max(0, i - WINDOW)
    idx = np.flatnonzero(ok[lo:i]) + lo
    point = Point(predictions={}, n_train=len(idx))
    if len(idx) == 0:
        return point
    Xt, yt = X[idx], y[idx]
    for name, fn in MODELS.items():
        point.predictions[name] = fn(Xt, yt, X[i])
    if extra:
        point.predictions.update({k: v for k, v in extra.items() if v and v > 0})
    point.forecasts = forecast.candidates(Xt, yt, t[idx])
    _serve(point, points, y, ok, i, level, pooled, pooled_forecast)
    return point


def _serve(
    point: Point,
    points: Sequence[Point | None],
    y: Any,
    ok: Any,
    i: int,
    level: float,
    pooled: Sequence[float],
    pooled_forecast: Sequence[float],
) -> None:
    model = select(list(point.predictions), points, y, ok, i, False)
    if model is None:
        model = DEFAULT_MODEL if DEFAULT_MODEL in point.predictions else "median_5"
    point.model = model
    point.expected = point.predictions[model]
    res = _residuals(model, points, y, ok, i, RESIDUAL_RUNS, False)
    if len(res) < conformal.MIN_RESIDUALS:
        res = res + list(pooled)
    point.low, point.high = conformal.interval(point.expected, res, level)
    fmodel = select(list(point.forecasts), points, y, ok, i, True)
    point.forecast_model = fmodel or ("size_trend" if "size_trend" in point.forecasts else "ewma")


def forecast_interval(
    point: Point,
    points: Sequence[Point | None],
    y: Any,
    ok: Any,
    i: int,
    level: float,
    pooled: Sequence[float] = (),
) -> tuple[float, float, float] | None:
    """(expected, low, high) of the served forecast of ``point``."""
    value = point.forecasts.get(point.forecast_model)
    if value is None:
        return None
    res = _residuals(point.forecast_model, points, y, ok, i, RESIDUAL_RUNS, True)
    if len(res) < conformal.MIN_RESIDUALS:
        res = res + list(pooled)
    low, high = conformal.interval(value, res, level)
    return value, low, high


def next_forecast(
    X: Any,
    y: Any,
    ok: Any,
    t: Any,
    points: Sequence[Point | None],
    level: float,
    pooled: Sequence[float] = (),
) -> tuple[float, float, float, str] | None:
    """(expected, low, high, model) for the run after the last one of ``X``."""
    import numpy as np

    n = len(y)
    idx = np.flatnonzero(ok[max(0, n - WINDOW) : n]) + max(0, n - WINDOW)
    if len(idx) == 0:
        return None
    point = Point(predictions={}, forecasts=forecast.candidates(X[idx], y[idx], t[idx]))
    point.forecast_model = select(list(point.forecasts), points, y, ok, n, True) or (
        "size_trend" if "size_trend" in point.forecasts else "ewma"
    )
    out = forecast_interval(point, points, y, ok, n, level, pooled)
    return None if out is None else (*out, point.forecast_model)
