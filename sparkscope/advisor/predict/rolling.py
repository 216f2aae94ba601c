"""The rolling origin: each run predicted from the runs that started before it, models competing.

For run ``i`` of a key (runs in start order):

1. training runs: the successful runs among the ``WINDOW`` before ``i`` (failed or killed runs
   never train, but are predicted and get a verdict);
2. the run's regime against them (:mod:`sparkscope.advisor.predict.regimes`): inside their range,
   outside it (how far), or a new key;
3. every candidate model predicts run ``i`` from them (out of sample by construction); the key's
   lines continue from the edge of the range beyond it (:mod:`.candidates`);
4. the default is the I/O line, the slot line when its per-slot term is significant, or the work
   line when its leave-one-out error is lower (or, beyond twice the range, when it has terms);
   it serves unless a challenger's absolute log errors on the latest earlier runs *of the same
   regime* are smaller by the Bonferroni-corrected paired t-test of :mod:`.selection`;
5. the interval is split-conformal on the serving model's own earlier out-of-sample residuals,
   each divided by the difficulty of its run (normalised conformal), scaled by this run's and
   spanning the straight line's value when the line was continued; below ``MIN_RESIDUALS``
   other keys' are added (and the key's leave-one-out ones with ``Options.jackknife``, a
   measured form); with none at all there is no interval.

The same function serves at fetch time (one new run, earlier predictions read from storage) and in
the backtest (every run in turn).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkscope.advisor import conformal
from sparkscope.advisor.predict import (
    amdahl,
    candidates,
    classaware,
    elasticity,
    forecast,
    jackknife,
    nextrun,
)
from sparkscope.advisor.predict.baselines import MODELS as BASELINES
from sparkscope.advisor.predict.knn import MODELS as KNN
from sparkscope.advisor.predict.regimes import NEW_KEY, Regime, classify, difficulty
from sparkscope.advisor.predict.selection import SWITCH_ALPHA, choose

WINDOW = 200
RESIDUAL_RUNS = 60
DEFAULT_FORECAST = "size_trend"
CLASS_MODEL = "class_gbdt"
ANCHORED_MODEL = "class_anchored"
#: Below this many training runs a key's own lines are not fitted (see baselines).
FEW_RUNS = 4
#: Below this many training runs a key is new (the default of ``predictions.min_history``).
NEW_KEY_RUNS = 5


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
    regime: Regime = field(default_factory=lambda: Regime(NEW_KEY))
    #: sqrt(1 + leverage) of the run against its training runs (regimes.difficulty).
    difficulty: float = 1.0
    #: The serving line's value in the envelope's other form beyond the range (transient).
    alternative: float | None = field(default=None, repr=False)
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


#: Other runs' normalised residuals, per regime ("" for every regime), or one list for all.
Pools = Mapping[str, Sequence[float]] | Sequence[float]


def pool_for(pooled: Pools, kind: str) -> Sequence[float]:
    """The residuals of other runs an interval borrows: those of runs in the same regime (a new
    key's errors are not an established key's), or all of them when the regime has too few."""
    if not isinstance(pooled, Mapping):
        return pooled
    same = pooled.get(kind, ())
    if len(same) >= conformal.MIN_RESIDUALS:
        return same
    return pooled.get("", ())


@dataclass(frozen=True)
class EarlierRun:
    """An earlier run's log errors, its difficulty and its regime."""

    errors: dict[str, float]
    difficulty: float
    kind: str


def _recent(
    points: Sequence[PredictedRun | None], y: Any, ok: Any, i: int, runs: int, forecast_: bool
) -> list[EarlierRun]:
    """The latest ``runs`` successful runs before ``i`` that have a point, newest first."""
    out: list[EarlierRun] = []
    j = i - 1
    while j >= 0 and len(out) < runs:
        p = points[j]
        if p is not None and ok[j]:
            out.append(
                EarlierRun(p.errors_for(float(y[j]), forecast_), p.difficulty, p.regime.kind)
            )
        j -= 1
    return out


def training_runs(ok: Any, i: int) -> Any:
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
    pooled: Pools = (),
    pooled_forecast: Sequence[float] = (),
    extra: Mapping[str, float] | None = None,
    min_history: int = NEW_KEY_RUNS,
    class_train: Sequence[float] | None = None,
    share: amdahl.Share | None = None,
    elastic: Callable[[], elasticity.Elasticity | None] | None = None,
) -> PredictedRun:
    """Predict run ``i`` (and forecast it as the next run) from the runs before it; a key with
    fewer than ``min_history`` training runs is in the new-key regime. ``pooled``: other runs'
    log residuals, each divided by its run's difficulty (the conformal fallback), per regime
    (see ``pool_for``). ``class_train``: the class-aware model's durations of the training runs
    (``training_runs(ok, i)``, same order), which anchor it on the key's own runs (see
    ``anchored``). ``share``: the server's parallel share (``Options.amdahl``); ``elastic``:
    its size elasticity, asked for where a line needs it (``Options.elasticity``)."""
    idx = training_runs(ok, i)
    point = PredictedRun(predictions={}, n_train=len(idx))
    if len(idx) == 0:
        return point
    options = candidates.OPTIONS
    Xt, yt, x = X[idx], y[idx], X[i]
    point.regime = classify(Xt, x, len(idx), min_history)
    point.difficulty = difficulty(Xt, x) if options.normalise else 1.0
    for name, fn in BASELINES.items():
        point.predictions[name] = fn(Xt, yt, x)
    lines = candidates.line_candidates(Xt, yt, x, SWITCH_ALPHA, options, elastic)
    point.predictions.update(lines.predictions)
    for name, fn in KNN.items():
        point.predictions[name] = fn(Xt, yt, x)
    if extra:
        point.predictions.update({k: v for k, v in extra.items() if v and v > 0})
    value = classaware.anchored(point.predictions.get(CLASS_MODEL), yt, class_train)
    if value is not None:
        point.predictions[ANCHORED_MODEL] = value
    point.forecasts = forecast.candidates(Xt, yt, t[idx])
    recent = _recent(points, y, ok, i, RESIDUAL_RUNS, False)
    # The lines' record: the key's earlier runs past its first ones (lines of two runs say
    # nothing about lines of twenty).
    record = [s.errors for s in recent if s.kind != NEW_KEY]
    default = candidates.default_line(lines, Xt, yt, record, options, point.regime)
    scaled = None
    if options.amdahl and not lines.work_terms:
        scaled = amdahl.scaled(Xt, yt, x, share, options.amdahl)
    if scaled is not None:  # its median work, which ignores the slots, scaled to them
        point.predictions[amdahl.MODEL] = scaled[0]
        default = amdahl.MODEL
    pool = pool_for(pooled, point.regime.kind)
    loo = jackknife.Lazy(Xt, yt, jackknife.wanted(options, point.regime.kind))
    _serve(point, recent, level, pool, default, options, loo)
    if scaled is not None and point.model == amdahl.MODEL:
        for other in scaled[1:]:  # the spread of the other keys' shares
            point.alternative = other
            _widen(point, recent, level, pool, loo)
        point.alternative = None
    if point.model in lines.alternative:
        point.alternative = lines.alternative[point.model]
        _widen(point, recent, level, pool, loo)
    for other in lines.spread.get(point.model, ()):  # the elasticity's spread, and straight
        point.alternative = other
        _widen(point, recent, level, pool, loo)
    point.alternative = None
    point.forecast_model = _forecast_model(point, points, y, ok, i)
    return point


def anchor_runs(ok: Any, i: int) -> Any:
    """The training runs of run ``i`` whose class-aware durations ``predict_run`` needs as
    ``class_train`` (a new key's few runs, when the form anchors the class-aware model on
    them); None when it needs none."""
    options = candidates.OPTIONS
    if not (options.anchored and options.class_serves_new):
        return None
    idx = training_runs(ok, i)
    return idx if 0 < len(idx) < FEW_RUNS else None


def _serve(
    point: PredictedRun,
    recent: Sequence[EarlierRun],
    level: float,
    pooled: Sequence[float],
    default: str,
    options: candidates.Options,
    loo: Callable[[str], Sequence[float]],
) -> None:
    same = recent
    if options.regime_select and point.regime.kind != NEW_KEY:
        same = [s for s in recent if s.kind == point.regime.kind]
    model = choose(list(point.predictions), [s.errors for s in same], default)
    prior = options.own_prior and default == candidates.WORK_MODEL  # its slots' or rounds' term
    few = point.n_train < FEW_RUNS and options.class_serves_new
    if model is None and few and CLASS_MODEL in point.predictions and not prior:
        # Too little history of its own for a line: what runs like it took, across keys
        # (anchored on its own runs, with ``Options.anchored``).
        model = CLASS_MODEL
        if options.anchored and ANCHORED_MODEL in point.predictions:
            model = ANCHORED_MODEL
    if model is None:
        model = default if default in point.predictions else next(iter(point.predictions))
    point.model = model
    point.expected = point.predictions[model]
    low, high = _interval(
        point.expected, model, recent, pooled, level, point.difficulty, point.regime.kind, loo
    )
    point.low, point.high = (None, None) if math.isnan(low) else (low, high)


def _widen(
    point: PredictedRun,
    recent: Sequence[EarlierRun],
    level: float,
    pooled: Sequence[float],
    loo: Callable[[str], Sequence[float]],
) -> None:
    """Span the interval of the served line's other form too beyond the range (continued with
    the elasticity its history shows): the two agree inside the range and part outside it, and
    either may be right."""
    other = point.alternative
    if other is None or point.expected is None:
        return
    low, high = _interval(
        other, point.model, recent, pooled, level, point.difficulty, point.regime.kind, loo
    )
    if math.isnan(low):  # no residuals: the spread of the two forms is all there is to read
        low = high = other
        point.low, point.high = point.low or point.expected, point.high or point.expected
    point.low = min(point.low if point.low is not None else low, low)
    point.high = max(point.high if point.high is not None else high, high)


def _forecast_model(
    point: PredictedRun, points: Sequence[PredictedRun | None], y: Any, ok: Any, i: int
) -> str:
    default = DEFAULT_FORECAST if DEFAULT_FORECAST in point.forecasts else "ewma"
    point.recent_forecast_errors = [
        s.errors for s in _recent(points, y, ok, i, RESIDUAL_RUNS, True)
    ]
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
        recent = [s.errors for s in _recent(points, y, ok, i, RESIDUAL_RUNS, True)]
    scored = [EarlierRun(e, 1.0, "") for e in recent]
    low, high = _interval(value, point.forecast_model, scored, pooled, level, 1.0)
    return value, low, high


def _interval(
    value: float,
    model: str,
    recent: Sequence[EarlierRun],
    pooled: Sequence[float],
    level: float,
    scale: float,
    kind: str = "",
    loo: Callable[[str], Sequence[float]] | None = None,
) -> tuple[float, float]:
    """The split-conformal interval of ``model``'s ``value`` on that model's own residuals among
    ``recent``, each divided by its run's difficulty; the bounds are scaled by this run's
    difficulty ``scale``. For a key past its first runs (``kind`` not new_key) the residuals it
    made as a new key come last: what it missed with two runs says little about its errors with
    twenty. Below ``MIN_RESIDUALS`` the key's own leave-one-out ones (``loo``, per model) are
    added, then the ``pooled`` ones, then those first ones."""
    own = [s for s in recent if model in s.errors]
    early = kind != NEW_KEY
    first = [s for s in own if early and s.kind == NEW_KEY]
    res = [s.errors[model] / s.difficulty for s in own if not (early and s.kind == NEW_KEY)]
    before = candidates.OPTIONS.jackknife == "before"
    if len(res) < conformal.MIN_RESIDUALS and loo is not None and before:
        res += list(loo(model))
    if len(res) < conformal.MIN_RESIDUALS:
        res += list(pooled)
    if len(res) < conformal.MIN_RESIDUALS and loo is not None and not before:
        res += list(loo(model))
    if len(res) < conformal.MIN_RESIDUALS:
        res += [s.errors[model] / s.difficulty for s in first]
    if not res:  # no spread to read anywhere: no interval (a floor would claim one)
        return math.nan, math.nan
    small = candidates.OPTIONS.small_sample
    return conformal.interval(value, res, level, scale=scale, small=small)


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
    idx = training_runs(ok, n)
    if len(idx) == 0:
        return None
    point = PredictedRun(predictions={}, forecasts=forecast.candidates(X[idx], y[idx], t[idx]))
    point.forecast_model = _forecast_model(point, points, y, ok, n)
    out = forecast_interval(point, points, y, ok, n, level, pooled)
    return None if out is None else (*out, point.forecast_model)


def next_basis(
    X: Any,
    y: Any,
    ok: Any,
    points: Sequence[PredictedRun | None],
    level: float,
    pooled: Pools = (),
    min_history: int = NEW_KEY_RUNS,
) -> dict[str, Any] | None:
    """What the key's forecast stores to answer for a next run of a given size
    (:func:`sparkscope.advisor.predict.nextrun.basis`): the line that served the latest run (the
    I/O line when another model did) and its residuals."""
    n = len(y)
    idx = training_runs(ok, n)
    if len(idx) == 0:
        return None
    last = next((p for p in reversed(points) if p is not None and p.model), None)
    model = last.model if last is not None and last.model in candidates.LINE_MODELS else "io_line"
    recent = _recent(points, y, ok, n, RESIDUAL_RUNS, False)
    res = [s.errors[model] / s.difficulty for s in recent if model in s.errors]
    if len(res) < conformal.MIN_RESIDUALS:
        res += list(pool_for(pooled, ""))
    return nextrun.basis(X[idx], y[idx], model, res, level, min_history)
