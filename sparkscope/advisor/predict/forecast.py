"""Forecast of the next run's duration, before any of its features are known.

Candidates, each from the earlier successful runs only:

- ``last_run``, ``median_5``, ``ewma``: the duration series alone;
- ``trend``: a robust trend of the duration over the run's day (the date argument when the runs
  carry one, else the start time), times a weekday factor when every weekday seen has two runs;
- ``size_trend``: the same trend and weekday factor on the run's size (input bytes, ...), turned
  into a duration through the key's fixed-cost-plus-per-byte line.

They compete on the key's own rolling-origin backtest like the expected-duration models.
"""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime
from typing import Any

from sparkscope.advisor.predict.baselines import FLOOR, line_fit, size_column
from sparkscope.advisor.predict.baselines import MODELS as BASELINES
from sparkscope.advisor.predict.features import NUMERIC

DAY_COL = NUMERIC.index("arg_day")
WEEKDAY_COL = NUMERIC.index("weekday")
TREND_RUNS = 28
#: Baselines that read only the duration series.
SERIES_MODELS = ("last_run", "median_5", "ewma")
DAY_MS = 86_400_000


def _median(values: Any) -> float:
    """Median of a small array (numpy's costs tens of microseconds in checks at this size)."""
    import numpy as np

    a = np.sort(np.asarray(values, dtype=float), axis=None)
    n = len(a)
    if n == 0:
        return float("nan")
    return float(a[n // 2]) if n % 2 else float(a[n // 2 - 1] + a[n // 2]) / 2


@functools.lru_cache(maxsize=64)
def _pairs(n: int) -> tuple[Any, Any]:
    """Index pairs (i < j) of ``n`` values, for the Theil-Sen slope."""
    import numpy as np

    return np.triu_indices(n, 1)


def _days(X: Any, t: Any) -> Any:
    """The run's day: its date argument when every run has one, else its start (in days)."""
    import numpy as np

    d = X[:, DAY_COL]
    if len(d) and (d > 0).all():
        return d.astype(float)
    return np.asarray(t, dtype=float) / DAY_MS


def next_position(X: Any, t: Any) -> tuple[float, int]:
    """(day, weekday) expected for the next run: the median spacing after the last one."""
    import numpy as np

    days = _days(X, t)
    step = float(_median(np.diff(days))) if len(days) > 1 else 1.0
    nxt = days[-1] + step
    if (X[:, DAY_COL] > 0).all():
        weekday = (int(round(nxt)) + 3) % 7
    else:
        weekday = datetime.fromtimestamp(nxt * DAY_MS / 1000, tz=UTC).weekday()
    return nxt, weekday


def trend_value(days: Any, v: Any, weekdays: Any, at_day: float, at_weekday: int) -> float:
    """Robust log-linear trend of ``v`` over ``days`` (Theil-Sen slope), with a weekday factor."""
    import numpy as np

    days, v, weekdays = days[-TREND_RUNS:], v[-TREND_RUNS:], weekdays[-TREND_RUNS:]
    lv = np.log(np.maximum(v, 1e-9))
    n = len(v)
    if n < 3:
        return float(_median(v))
    i, j = _pairs(n)
    dd = days[j] - days[i]
    ok = dd > 0
    slope = float(_median((lv[j] - lv[i])[ok] / dd[ok])) if ok.any() else 0.0
    base = lv - slope * days
    resid = base - _median(base)
    factor = 0.0
    wd = weekdays.astype(int)
    if len(set(wd.tolist())) >= 2:
        same = resid[wd == at_weekday]
        if len(same) >= 2 and all((wd == w).sum() >= 2 for w in set(wd.tolist())):
            factor = float(_median(same))
    log_value = float(_median(base) + slope * at_day + factor)
    value = math.exp(min(log_value, 700.0))
    # A trend never leaves [half the smallest, twice the largest] of the recent values: runs
    # started close together (or a wild slope) must not extrapolate to absurd durations.
    return min(max(value, 0.5 * float(v.min())), 2.0 * float(v.max()))


def candidates(X: Any, y: Any, t: Any) -> dict[str, float]:
    """Every candidate's forecast of the run after the training runs ``X``, ``y`` (start ``t``)."""

    out = {name: BASELINES[name](X, y, None) for name in SERIES_MODELS}
    if len(y) < 3:
        return out
    days = _days(X, t)
    at_day, at_weekday = next_position(X, t)
    weekdays = X[:, WEEKDAY_COL]
    out["trend"] = trend_value(days, y, weekdays, at_day, at_weekday)
    c = size_column(X)
    if c is not None:
        s_next = trend_value(days, X[:, c], weekdays, at_day, at_weekday)
        a, b = line_fit(X[:, c], y)
        out["size_trend"] = float(max(a + b * s_next, FLOOR * float(y.min())))
    return out
