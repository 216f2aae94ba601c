"""A key's own spread from its training runs: leave-one-out residuals of the serving model.

A measured form of the interval (``Options.jackknife``; docs/dev/models.md gives its figures and
why it is off). A key with fewer than ``conformal.MIN_RESIDUALS`` out-of-sample residuals of its
own borrows those of the server's other keys, whose spread may be far from its own, and on a
fresh server has nothing to borrow. The jackknife (leave-one-out; Barber, Candes, Ramdas and
Tibshirani, "Predictive inference with the jackknife+", 2021) gives the key residuals of its own
at once: each training run predicted by the serving model from the other training runs, divided
by that run's difficulty among the others, as the out-of-sample residuals are (normalised
conformal), so a run left out at the edge of the range counts for what it is.

Only the models that are functions of the key's own runs have them (the baselines, the lines,
the neighbours); the class-aware model and the Amdahl prior, fitted across keys, have none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sparkscope.advisor.predict import candidates
from sparkscope.advisor.predict.baselines import MODELS as BASELINES
from sparkscope.advisor.predict.knn import MODELS as KNN
from sparkscope.advisor.predict.regimes import EXTRAPOLATION, difficulty
from sparkscope.advisor.predict.selection import SWITCH_ALPHA

#: Fewer training runs than this: no residuals (one run left out of two predicts from one).
MIN_RUNS = 2


def _predictor(model: str) -> Callable[[Any, Any, Any], float] | None:
    if model in BASELINES:
        return BASELINES[model]
    if model in KNN:
        return KNN[model]
    if model in candidates.LINE_MODELS:
        options = candidates.OPTIONS

        def line(Xt: Any, yt: Any, x: Any) -> float:
            return candidates.line_candidates(Xt, yt, x, SWITCH_ALPHA, options).predictions[model]

        return line
    return None


def residuals(model: str, Xt: Any, yt: Any) -> list[float]:
    """``log(actual / predicted)`` of each training run predicted by ``model`` from the others,
    divided by its difficulty among them; empty for a model fitted across keys or too few runs."""
    import numpy as np

    predict = _predictor(model)
    n = len(yt)
    if predict is None or n < MIN_RUNS:
        return []
    normalise = candidates.OPTIONS.normalise
    out: list[float] = []
    for j in range(n):
        keep = np.arange(n) != j
        Xo, yo, x = Xt[keep], yt[keep], Xt[j]
        with np.errstate(all="ignore"):
            value = float(predict(Xo, yo, x))
        actual = float(yt[j])
        if not (math.isfinite(value) and value > 0 and actual > 0):
            continue
        scale = difficulty(Xo, x) if normalise else 1.0
        out.append(math.log(actual / value) / scale)
    return out


def wanted(options: candidates.Options, kind: str) -> bool:
    """Whether a run of regime ``kind`` adds the leave-one-out residuals (``Options.jackknife``,
    outside the range only with ``Options.jackknife_outside``)."""
    return bool(options.jackknife) and (kind != EXTRAPOLATION or options.jackknife_outside)


class Lazy:
    """The leave-one-out residuals of the training runs, per model, computed when first asked
    (most intervals have residuals enough of their own and never ask)."""

    def __init__(self, Xt: Any, yt: Any, enabled: bool) -> None:
        self._Xt, self._yt, self._enabled = Xt, yt, enabled
        self._cache: dict[str, list[float]] = {}

    def __call__(self, model: str) -> list[float]:
        if not self._enabled:
            return []
        if model not in self._cache:
            self._cache[model] = residuals(model, self._Xt, self._yt)
        return self._cache[model]
