"""The rolling origin: each run predicted from the runs that started before it, models competing.

For run ``i`` of a key (runs in start order):

1. training runs: the successful runs among the ``WINDOW`` before ``i`` (failed or killed runs
   never train, but are predicted and get a verdict);
2. every candidate model predicts run ``i`` from them (out of sample by construction);
3. the default model is the I/O line, or the slot line when the key's training runs ran on
   different slot counts and the slot line's per-slot term explains significantly more of them
   (partial F-test of the nested lines at ``SWITCH_ALPHA``); the default serves unless another
   candidate's absolute log errors over the latest ``SELECT_RUNS`` earlier origins of this key
   (at least ``MIN_SCORED``) are smaller by a one-sided paired t-test, Bonferroni-corrected for
   the number of challengers; a key with fewer than ``FEW_RUNS`` training runs is served by the
   class-aware model when there is one (what similar runs of other keys took);
4. the interval is split-conformal on the serving model's own earlier out-of-sample residuals
   (those of the class, or of every key, when the key has fewer than ``MIN_RESIDUALS``).

The same function serves at fetch time (one new run, earlier predictions read from storage) and in
the backtest (every run in turn).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor import conformal
from sparkscope.advisor.predict import forecast
from sparkscope.advisor.predict.baselines import MODELS as BASELINES
from sparkscope.advisor.predict.baselines import lines
from sparkscope.advisor.predict.knn import MODELS as KNN

WINDOW = 200
SELECT_RUNS = 20
RESIDUAL_RUNS = 60
MIN_SCORED = 5
SWITCH_ALPHA = 0.025
DEFAULT_MODEL = "io_line"
#: The default instead when the key's slot counts vary and the per-slot term is significant.
SLOT_MODEL = "slot_line"
DEFAULT_FORECAST = "size_trend"
CLASS_MODEL = "class_gbdt"
#: Below this many training runs a key's own lines are not fitted (see baselines).
FEW_RUNS = 4


@dataclass
class PredictedRun:
    """The outcome for one run: every candidate's prediction and what serves."""

    predictions: dict[str, float]
    model: str = ""
    expected: float | None = None
    low: float | None = None
    high: float | None = None
    n_train: int = 0
    forecasts: dict[str, float] = field(default_factory=dict)
    forecast_model: str = ""
    #: log(actual / prediction) per model, once the run's duration is known (a cache).
    errors: dict[str, float] | None = None
    forecast_errors: dict[str, float] | None = None
    #: The forecast log errors of the earlier runs it was served on (newest first; transient).
    recent_forecast_errors: list[dict[str, float]] | None = field(default=None, repr=False)

    def errors_for(self, actual: float, forecast_: bool) -> dict[str, float]:
        """Log errors of every candidate (predictions, or forecasts) against ``actual``."""
        cached = self.forecast_errors if forecast_ else self.errors
        if cached is None:
            preds = self.forecasts if forecast_ else self.predictions
            cached = {}
            if actual > 0:
                for name, value in preds.items():
                    if value is not None and value > 0:
                        cached[name] = math.log(actual / value)
            if forecast_:
                self.forecast_errors = cached
            else:
                self.errors = cached
        return cached


def log_error(actual: float | None, predicted: float | None) -> float | None:
    if actual is None or predicted is None or actual <= 0 or predicted <= 0:
        return None
    return math.log(actual / predicted)


def _recent(
    points: Sequence[PredictedRun | None], y: Any, ok: Any, i: int, runs: int, forecast_: bool
) -> list[dict[str, float]]:
    """Log errors of the latest ``runs`` successful runs before ``i`` that have a point."""
    out: list[dict[str, float]] = []
    j = i - 1
    while j >= 0 and len(out) < runs:
        p = points[j]
        if p is not None and ok[j]:
            out.append(p.errors_for(float(y[j]), forecast_))
        j -= 1
    return out


@functools.lru_cache(maxsize=1024)
def _t_quantile(df: int, tests: int = 1) -> float:
    """The one-sided critical value of Student's t at ``SWITCH_ALPHA / tests`` (Bonferroni)."""
    from scipy.stats import t

    return float(t.ppf(1 - SWITCH_ALPHA / max(1, tests), df))


def choose(
    names: Sequence[str], recent: Sequence[dict[str, float]], incumbent: str | None
) -> str | None:
    """The candidate with the smallest mean absolute log error over the latest origins (``recent``:
    log errors per candidate of the latest runs, newest first; the first ``SELECT_RUNS`` count).

    Only origins where every candidate predicted count, so all are judged on the same runs. A
    challenger replaces the ``incumbent`` (the default model) only when a one-sided paired t-test
    on those runs says it is better at level ``SWITCH_ALPHA``: with a handful of scored runs small
    differences are noise, and switching on noise costs more than it gains. Every challenger is
    tested, so each test runs at ``SWITCH_ALPHA`` divided by their number (Bonferroni): the chance
    that *some* challenger replaces an incumbent that is in truth as good stays at most
    ``SWITCH_ALPHA`` however many candidates compete.
    """
    recent = recent[:SELECT_RUNS]
    wanted = set(names)
    common = [e for e in recent if wanted <= e.keys()]
    n = len(common)
    if n < MIN_SCORED:
        return None
    totals = dict.fromkeys(names, 0.0)
    for e in common:
        for m in names:
            totals[m] += abs(e[m])
    errs = {m: totals[m] / n for m in names}
    if incumbent not in errs:
        return min(names, key=lambda m: errs[m])
    best, best_err = incumbent, errs[incumbent]
    critical = _t_quantile(n - 1, len(errs) - 1)
    for m in names:
        if m == incumbent or errs[m] >= best_err:
            continue
        diffs = [abs(e[incumbent]) - abs(e[m]) for e in common]
        mean = sum(diffs) / n
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        if mean > critical * sd / math.sqrt(n):
            best, best_err = m, errs[m]
    return best


def _training(ok: Any, i: int) -> Any:
    """Indices of the training runs of run ``i``: the successful ones among the ``WINDOW`` before
    it."""
    import numpy as np

    lo = max(0, i - WINDOW)
    return np.flatnonzero(ok[lo:i]) + lo


def predict_run(
    X: Any,
    y: Any,
    ok: Any,
    t: Any,
    i: int,
    points: Sequence[PredictedRun | None],
    level: float,
    pooled: Sequence[float] = (),
    pooled_forecast: Sequence[float] = (),
    extra: Mapping[str, float] | None = None,
) -> PredictedRun:
    """Predict run ``i`` (and forecast it as the next run) from the runs before it."""
    idx = _training(ok, i)
    point = PredictedRun(predictions={}, n_train=len(idx))
    if len(idx) == 0:
        return point
    Xt, yt = X[idx], y[idx]
    for name, fn in BASELINES.items():
        point.predictions[name] = fn(Xt, yt, X[i])
    io, slot, slots_matter = lines(Xt, yt, X[i], SWITCH_ALPHA)
    point.predictions[DEFAULT_MODEL], point.predictions[SLOT_MODEL] = io, slot
    for name, fn in KNN.items():
        point.predictions[name] = fn(Xt, yt, X[i])
    if extra:
        point.predictions.update({k: v for k, v in extra.items() if v and v > 0})
    point.forecasts = forecast.candidates(Xt, yt, t[idx])
    default = SLOT_MODEL if slots_matter else DEFAULT_MODEL
    _serve(point, points, y, ok, i, level, pooled, pooled_forecast, default)
    return point


def _serve(
    point: PredictedRun,
    points: Sequence[PredictedRun | None],
    y: Any,
    ok: Any,
    i: int,
    level: float,
    pooled: Sequence[float],
    pooled_forecast: Sequence[float],
    default: str = DEFAULT_MODEL,
) -> None:
    recent = _recent(points, y, ok, i, RESIDUAL_RUNS, False)
    model = choose(list(point.predictions), recent, default)
    if model is None and point.n_train < FEW_RUNS and CLASS_MODEL in point.predictions:
        # Too little history of its own for a line: what runs like it took, across keys.
        model = CLASS_MODEL
    if model is None:
        model = default if default in point.predictions else next(iter(point.predictions))
    point.model = model
    point.expected = point.predictions[model]
    point.low, point.high = _interval(point.expected, model, recent, pooled, level)
    point.forecast_model = _forecast_model(point, points, y, ok, i)


def _forecast_model(
    point: PredictedRun, points: Sequence[PredictedRun | None], y: Any, ok: Any, i: int
) -> str:
    default = DEFAULT_FORECAST if DEFAULT_FORECAST in point.forecasts else "ewma"
    point.recent_forecast_errors = _recent(points, y, ok, i, RESIDUAL_RUNS, True)
    return choose(list(point.forecasts), point.recent_forecast_errors, default) or default


def forecast_interval(
    point: PredictedRun,
    points: Sequence[PredictedRun | None],
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
    recent = point.recent_forecast_errors
    if recent is None:
        recent = _recent(points, y, ok, i, RESIDUAL_RUNS, True)
    low, high = _interval(value, point.forecast_model, recent, pooled, level)
    return value, low, high


def _interval(
    value: float,
    model: str,
    recent: Sequence[dict[str, float]],
    pooled: Sequence[float],
    level: float,
) -> tuple[float, float]:
    """The split-conformal interval of ``model``'s ``value`` on that model's own residuals among
    ``recent``, with the ``pooled`` ones added when it has fewer than ``MIN_RESIDUALS``."""
    res = [e[model] for e in recent if model in e]
    if len(res) < conformal.MIN_RESIDUALS:
        res = res + list(pooled)
    return conformal.interval(value, res, level)


def next_forecast(
    X: Any,
    y: Any,
    ok: Any,
    t: Any,
    points: Sequence[PredictedRun | None],
    level: float,
    pooled: Sequence[float] = (),
) -> tuple[float, float, float, str] | None:
    """(expected, low, high, model) for the run after the last one of ``X``."""
    n = len(y)
    idx = _training(ok, n)
    if len(idx) == 0:
        return None
    point = PredictedRun(predictions={}, forecasts=forecast.candidates(X[idx], y[idx], t[idx]))
    point.forecast_model = _forecast_model(point, points, y, ok, n)
    out = forecast_interval(point, points, y, ok, n, level, pooled)
    return None if out is None else (*out, point.forecast_model)
