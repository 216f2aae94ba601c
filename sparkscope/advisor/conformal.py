"""Split-conformal intervals on relative residuals.

A residual is ``log(actual / predicted)`` of an out-of-sample prediction. Given ``n`` residuals
and a level ``1 - alpha``, the interval of a new prediction ``p`` is
``[p * exp(q_lo), p * exp(q_hi)]`` where ``q_lo``/``q_hi`` are the ``alpha/2`` and ``1 - alpha/2``
empirical quantiles with the finite-sample correction (rank ``ceil((n + 1) * (1 - alpha/2))``),
so that the coverage is at least the level when residuals are exchangeable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Fewer residuals than this: borrow those of the class (or of every key).
MIN_RESIDUALS = 8


def quantile_bounds(residuals: Sequence[float], level: float) -> tuple[float, float]:
    """(lower, upper) log-ratio bounds at ``level``; (-inf, inf) when too few residuals."""
    r = sorted(residuals)
    n = len(r)
    alpha = 1.0 - level
    k = math.ceil((n + 1) * (1 - alpha / 2))
    if n == 0 or k > n:
        return -math.inf, math.inf
    return r[n - k], r[k - 1]


def interval(
    predicted: float,
    residuals: Sequence[float],
    level: float,
    floor: float = 0.02,
    scale: float = 1.0,
) -> tuple[float, float]:
    """The interval around ``predicted`` (ms); at least ``floor`` (relative) on each side.

    With too few residuals for the level the interval is the widest the residuals allow: the
    largest ratio seen either way, on both sides (or +-floor when there are none). ``scale``: the residuals
    were divided by their runs' difficulty; the bounds are multiplied by this run's (normalised
    conformal: the coverage argument holds for the scaled residuals).
    """
    lo, hi = quantile_bounds(residuals, level)
    if not math.isfinite(lo):
        # Too few residuals for the level: the largest miss seen, on either side (one side's
        # extreme of a handful says little about where the next miss falls).
        widest = max((abs(r) for r in residuals), default=0.0)
        lo, hi = -widest, widest
    lo, hi = min(lo * scale, -floor), max(hi * scale, floor)
    return predicted * math.exp(lo), predicted * math.exp(hi)
