"""The size elasticity of the server's keys: how a key's lines continue beyond its range of sizes
when its own runs cannot tell how its work bends with the size.

A key's lines are straight in its sizes: beyond the largest run seen they extrapolate its cost
per byte over its range. Many Spark applications get cheaper per byte as their input grows, some
dearer (a sort); a key whose runs all lie within a narrow range of sizes cannot tell which, but
the server's other keys whose runs span a wide range can. Each such key is fitted

    work = f + s^e * (a + b / slots)

(work the duration less the start-up, ``s`` the size, a fixed part and a variable part whose
per-slot share Amdahl's law spreads; relative least squares, the coefficients non-negative, the
``b`` column only where the slots vary), its ``e`` profiled over [``E_MIN``, ``E_MAX``]. The
server's elasticity is the median of its keys' (each key one vote), its spread their ``SPREAD``
and 1 - ``SPREAD`` quantiles.

A line of a key whose own range is narrow (its largest size under ``WIDE`` times its smallest)
is continued from the edge of the range with its variable part bent by the server's ``e``: for a
run ``r`` times the largest size seen,

    work(x) = F + V * r^e,   with F + V = work(edge)

and ``V`` the line's own variable part at the edge (its slope along the run's sizes), so that
``e = 1`` is the straight line itself. The interval spans the values at both ends of the spread
and the straight one.

Why ``e`` in [0, 1.2]: more input never takes less work (``e >= 0``), and of the costs a Spark
stage has, the one that grows fastest with its input is a sort, n log n, whose elasticity
1 + 1 / ln(n / n0) stays below 1.2 once the data are more than e^5 (about 150) times the size of
a sorted run in memory; anything steeper beyond the range (a quadratic join, spilling) is a
change of plan that no size line predicts.

Which keys learn and which are continued: a key learns when it has at least ``LEARN_RUNS_KEY``
successful runs over a range of at least ``WIDE`` (over less than a doubling, with a few per
cent of noise, a fixed part and a curvature cannot be told apart) and its iteration count does
not vary (its work then moves with the rounds as well as the size). A key whose own range is at
least ``WIDE`` keeps its own lines (form "pooled"), or is continued with its own ``e`` (form
"own"); a work line whose size exponent is below 1 has learnt its curvature and is left as it is.
Form "total" bends the whole work at the edge instead, with the keys' log-log slopes of work on
size. None of the three is adopted (``Options.elasticity`` is off): each lost on the synthetic
forward split it was chosen on; the figures are in docs/dev/models.md.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.predict import extrapolate, workline

#: Bounds of the elasticity (see the module docstring).
E_MIN, E_MAX = 0.0, 1.2
#: The grid the elasticity is profiled on before it is refined.
GRID = 0.05
#: A key's largest size over its smallest at which its runs tell its curvature.
WIDE = 2.0
#: Successful runs a key needs to learn from (an exponent and up to three coefficients, two
#: degrees of freedom left).
LEARN_RUNS_KEY = workline.FIT_RUNS + 2
#: Keys with an elasticity the server needs (two: the fewest between which a spread exists).
MIN_KEYS = 2
#: The quantile of the keys' elasticities at each end of the spread.
SPREAD = 0.1
#: A key's latest runs it learns from (the rolling origin's window).
WINDOW = 200
#: The server's latest successful runs the elasticity is learnt from (as the class-aware model).
LEARN_RUNS = 5000


@dataclass(frozen=True)
class Elasticity:
    """The server's size elasticity: the median over its keys and the spread of theirs."""

    e: float
    low: float
    high: float
    keys: int


def _work_fit(s: Any, slots: Any | None, work: Any, e: float) -> tuple[float, Any]:
    """(sum of squared relative errors, coefficients) of work = f + s^e (a + b / slots)."""
    import numpy as np
    from scipy.optimize import nnls

    p = s**e
    cols = [np.ones(len(s)), p] + ([p / slots] if slots is not None else [])
    A = np.column_stack(cols) / work[:, None]
    scale = A.max(axis=0)
    scale[scale == 0] = 1.0
    w, r = nnls(A / scale, np.ones(len(s)))
    return float(r) ** 2, w / scale


def key_elasticity(X: Any, y: Any, form: str = "pooled") -> float | None:
    """The elasticity of one key's successful runs ``X``, ``y`` (see the module docstring), or
    None when they are too few, over too narrow a range, or iterative with varying rounds.
    Form "total": the least-squares slope of log work on log size (and log slots, where they
    vary), the elasticity of the whole work, its fixed part included."""
    import numpy as np
    from scipy.optimize import minimize_scalar

    X = np.atleast_2d(np.asarray(X, dtype=float))[-WINDOW:]
    y = np.asarray(y, dtype=float)[-WINDOW:]
    work = y - X[:, workline.STARTUP]
    keep = work > 0
    X, work = X[keep], work[keep]
    if len(work) < LEARN_RUNS_KEY or workline._varies(X[:, workline.ITERATIONS]):
        return None
    c = workline._size_col(X)
    if c is None or X[:, c].min() <= 0 or X[:, c].max() < WIDE * X[:, c].min():
        return None
    s = X[:, c] / float(np.median(X[:, c]))  # scaled: s^e stays near 1 for every e
    slots_all = np.maximum(X[:, workline.SLOTS], 1.0)
    slots = slots_all if workline._varies(slots_all) else None
    if form == "total":
        cols = [np.ones(len(s)), np.log(s)] + ([np.log(slots)] if slots is not None else [])
        w, *_ = np.linalg.lstsq(np.column_stack(cols), np.log(work), rcond=None)
        return min(max(float(w[1]), E_MIN), E_MAX)
    grid = np.arange(E_MIN, E_MAX + GRID / 2, GRID)
    sse = [_work_fit(s, slots, work, float(e))[0] for e in grid]
    best = float(grid[int(np.argmin(sse))])
    lo, hi = max(E_MIN, best - GRID), min(E_MAX, best + GRID)
    got = minimize_scalar(
        lambda e: _work_fit(s, slots, work, float(e))[0],
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-4},
    )
    e = float(got.x) if got.success and got.fun <= min(sse) else best
    return min(max(e, E_MIN), E_MAX)


def pooled(values: Iterable[float | None]) -> Elasticity | None:
    """The server's elasticity from its keys' ones (None below ``MIN_KEYS``)."""
    import numpy as np

    got = np.array([v for v in values if v is not None], dtype=float)
    if len(got) < MIN_KEYS:
        return None
    lo, mid, hi = np.quantile(got, [SPREAD, 0.5, 1 - SPREAD])
    return Elasticity(float(mid), float(lo), float(hi), len(got))


def narrow(Xt: Any, x: Any) -> bool:
    """Whether the training runs ``Xt`` span too narrow a range of the size that measures the
    run ``x`` to tell their curvature (see ``WIDE``)."""
    c = extrapolate.primary(Xt, x)
    return c is not None and float(Xt[:, c].max()) < WIDE * float(Xt[:, c].min())


def continued(
    f: Callable[[Any], Any], Xt: Any, yt: Any, x: Any, e: float, whole: bool = False
) -> float | None:
    """The line ``f`` (rows -> durations) of the training runs ``Xt``, ``yt`` at the run ``x``
    beyond their range of sizes, its variable part (``whole``: all its work) continued from the
    edge as r^e (see the module docstring); None inside the range or where the line has no
    work at the edge."""
    import numpy as np

    ratio, c = extrapolate.size_ratio(Xt, x)
    if c is None or ratio == 1.0:
        return None
    start = float(x[extrapolate.STARTUP])
    edge = extrapolate.scaled(x, 1.0 / ratio)
    inward = extrapolate.STEP if ratio > 1 else -extrapolate.STEP
    w_edge, w_in = np.asarray(f(np.array([edge, extrapolate.scaled(edge, 1.0 - inward)]))) - start
    w_edge, w_in = float(w_edge), float(w_in)
    if w_edge <= 0:
        return None
    # the line's variable part at the edge: its slope along the run's sizes, times the size
    variable = w_edge if whole else min(max((w_edge - w_in) / inward, 0.0), w_edge)
    value = start + (w_edge - variable) + variable * ratio ** min(max(e, E_MIN), E_MAX)
    return max(value, workline.FLOOR * float(np.min(yt)))


class SizeTracker:
    """The elasticity of the server's latest ``LEARN_RUNS`` successful runs seen so far, for the
    rolling-origin backtest: what a refresh learns from the stored runs before it."""

    def __init__(self, form: str = "pooled") -> None:
        self.form = form
        self.runs: dict[str, deque[tuple[Sequence[float], float]]] = {}
        self._order: deque[str] = deque()
        self._values: dict[str, float | None] = {}
        self._pooled: Elasticity | None = None
        self._dirty = False

    def add(self, key: str, row: Sequence[float], duration: float) -> None:
        self.runs.setdefault(key, deque()).append((row, duration))
        self._order.append(key)
        self._values.pop(key, None)
        if len(self._order) > LEARN_RUNS:  # the oldest run leaves the learning set
            old = self._order.popleft()
            self.runs[old].popleft()
            self._values.pop(old, None)
        self._dirty = True

    def values(self) -> dict[str, float | None]:
        """Every key's elasticity (None where it learns none)."""
        for key, rows in self.runs.items():
            if key not in self._values:
                self._values[key] = _elasticity_of(list(rows)[-WINDOW:], self.form)
        return self._values

    def elasticity(self) -> Elasticity | None:
        if self._dirty:
            self._pooled = pooled(self.values().values())
            self._dirty = False
        return self._pooled


def _elasticity_of(rows: Sequence[tuple[Sequence[float], float]], form: str) -> float | None:
    import numpy as np

    if len(rows) < LEARN_RUNS_KEY:
        return None
    return key_elasticity(
        np.array([r for r, _d in rows], dtype=float), np.array([d for _r, d in rows]), form
    )


def learn_rows(
    rows: Iterable[tuple[str, Sequence[float], float]], form: str = "pooled"
) -> Elasticity | None:
    """The server's elasticity from its successful runs ``(key, vector, duration)``, oldest
    first (the latest ``LEARN_RUNS`` of them count, as in :class:`SizeTracker`)."""
    tracker = SizeTracker(form)
    for key, row, duration in rows:
        tracker.add(key, row, duration)
    return tracker.elasticity()


def leave_one_out(values: dict[str, float | None], key: str) -> Elasticity | None:
    """The elasticity of every key but ``key`` (the forward split's server for that key)."""
    return pooled(v for k, v in values.items() if k != key)


def bent(
    lines: dict[str, Callable[[Any], Any]],
    straight: dict[str, float],
    exponent: float,
    Xt: Any,
    yt: Any,
    x: Any,
    form: str,
    learnt: Callable[[], Elasticity | None],
) -> dict[str, tuple[float, list[float]]]:
    """The key's lines (name -> evaluator; ``straight`` their values at ``x``) bent beyond the
    range as the module says: name -> (the value, the other values its interval spans: at
    both ends of the spread and straight). Empty where the form does not apply: inside the
    range, fewer than ``workline.FIT_RUNS`` training runs (no lines), a wide own range under
    form "pooled", no elasticity learnt. The work line is left as it is when its size exponent
    is below 1 (``exponent``)."""
    ratio, _c = extrapolate.size_ratio(Xt, x)
    if not form or ratio == 1.0 or len(yt) < workline.FIT_RUNS:
        return {}
    ends: tuple[float, ...]
    if narrow(Xt, x):
        got = learnt()
        if got is None:
            return {}
        e, ends = got.e, (got.low, got.high)
    elif form == "own":
        own = key_elasticity(Xt, yt, form)
        if own is None:
            return {}
        e, ends = own, ()
    else:
        return {}
    out: dict[str, tuple[float, list[float]]] = {}
    for name, f in lines.items():
        if name == "work_line" and exponent < 1.0:
            continue
        whole = form == "total"
        value = continued(f, Xt, yt, x, e, whole)
        if value is None:
            continue
        ends_at = (continued(f, Xt, yt, x, end, whole) for end in ends)
        others = [v for v in ends_at if v is not None]
        out[name] = (value, [*others, straight[name]])
    return out
