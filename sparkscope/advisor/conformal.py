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
    small: str = "",
) -> tuple[float, float]:
    """The interval around ``predicted`` (ms); at least ``floor`` (relative) on each side.

    With too few residuals for the level the interval is the widest the residuals allow: the
    largest ratio seen either way, on both sides (or +-floor when there are none). ``scale``: the residuals
    were divided by their runs' difficulty; the bounds are multiplied by this run's (normalised
    conformal: the coverage argument holds for the scaled residuals). ``small``: see
    :func:`small_sample_bound`.
    """
    lo, hi = quantile_bounds(residuals, level)
    t_bound = small_sample_bound(residuals, level, small) if not math.isfinite(lo) else None
    if t_bound is not None:
        lo, hi = -t_bound, t_bound
    elif not math.isfinite(lo):
        # Too few residuals for the level: the largest miss seen, on either side (one side's
        # extreme of a handful says little about where the next miss falls).
        widest = max((abs(r) for r in residuals), default=0.0)
        lo, hi = -widest, widest
    lo, hi = min(lo * scale, -floor), max(hi * scale, floor)
    return predicted * math.exp(lo), predicted * math.exp(hi)


def small_sample_bound(residuals: Sequence[float], level: float, form: str) -> float | None:
    """The half-width (log ratio) of the Student-t prediction interval on ``residuals`` too few
    for the conformal rank, or None where ``form`` leaves them to the largest miss.

    With residuals taken as normal with mean zero and an unknown spread, a new one divided by
    their root mean square follows Student's t with ``n`` degrees of freedom, so
    ``+- t(n, 1 - alpha/2) * rms`` covers the level exactly for any ``n`` (3.08 times the one
    residual at 80%, 1.40 times the rms of eight). "student": below the rank; "student3": below
    four residuals only, where the largest miss covers less than 80%."""
    n = len(residuals)
    if not form or n == 0 or (form == "student3" and n >= 4):
        return None
    from scipy.stats import t

    rms = math.sqrt(sum(r * r for r in residuals) / n)
    return float(t.ppf(1.0 - (1.0 - level) / 2.0, n)) * rms
