"""Which candidate serves a run: the default unless a challenger is significantly better on the
key's latest scored runs (a one-sided paired t-test, Bonferroni-corrected)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

SELECT_RUNS = 20
MIN_SCORED = 5
SWITCH_ALPHA = 0.025


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
