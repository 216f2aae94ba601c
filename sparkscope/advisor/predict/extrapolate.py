"""Extrapolation with restraint: a line's prediction beyond the sizes its training runs covered.

A line fitted on a key's runs extrapolates its average cost per byte over their range. Spark
applications often get cheaper per byte as their input grows (fixed costs per task and per file
amortised, more of the work in compiled code, more input splits for the slots to share), so that
average overstates the cost beyond the range. Here the line is evaluated at the edge of the range
instead (the run's sizes scaled back along their own proportions to the largest, or smallest,
size seen) and the work continues from there as a power of the size ratio:

    work(x) = work(edge) * (s / s_edge) ** e

with ``e`` the elasticity of the work with respect to the size, in [0, 1]:

- ``local``: the line's own elasticity at the edge (d log work / d log s along the same ray): the
  line's slope and intercept at the edge, continued in log space. For a line with a fixed cost
  (a positive intercept) it never exceeds the straight line (Bernoulli's inequality);
- ``history``: the elasticity the key's runs show across their range (least squares of log work
  on log size, with log slots and log iterations alongside where they vary).

Inside the range nothing changes. Never more than proportional growth: ``e`` is at most 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sparkscope.advisor.predict.features import NUMERIC

_I = {n: i for i, n in enumerate(NUMERIC)}
PRIMARY = tuple(_I[n] for n in ("input_bytes", "input_records", "output_bytes"))
#: Columns that scale with the size along a run's own proportions.
SIZE_LIKE = tuple(
    _I[n]
    for n in ("input_bytes", "input_records", "output_bytes", "shuffle_read_bytes",
              "shuffle_write_bytes")
)  # fmt: skip
STARTUP = _I["startup_ms"]
SLOTS = _I["cores"]
ITERATIONS = _I["iterations"]
#: The step along the ray for the line's local elasticity (relative).
STEP = 0.05

Model = Callable[[Any, Any, Any], float]


def primary(Xt: Any, x: Any) -> int | None:
    """The size column that measures the run: the first every run (and ``x``) has."""
    for c in PRIMARY:
        if Xt[:, c].min() > 0 and x[c] > 0:
            return c
    return None


def size_ratio(Xt: Any, x: Any) -> tuple[float, int | None]:
    """(the run's size over the nearest end of the training range: > 1 above, < 1 below, 1
    inside; the size column)."""
    c = primary(Xt, x)
    if c is None:
        return 1.0, None
    lo, hi, v = float(Xt[:, c].min()), float(Xt[:, c].max()), float(x[c])
    if v > hi:
        return v / hi, c
    if v < lo:
        return v / lo, c
    return 1.0, c


def scaled(x: Any, factor: float) -> Any:
    """The run ``x`` with its size-like columns multiplied by ``factor``."""
    z = x.copy()
    for c in SIZE_LIKE:
        z[c] = x[c] * factor
    return z


def history_elasticity(Xt: Any, yt: Any, c: int) -> float | None:
    """The elasticity of the work (duration less start-up) with respect to size column ``c``
    over the training runs, in [0, 1]; None when it cannot be estimated."""
    import numpy as np

    work = yt - Xt[:, STARTUP]
    s = Xt[:, c]
    if (work <= 0).any() or (s <= 0).any() or s.max() <= 1.0001 * s.min() or len(yt) < 4:
        return None
    cols = [np.log(s)]
    for other in (SLOTS, ITERATIONS):
        v = Xt[:, other]
        if v.min() > 0 and v.max() > 1.0001 * v.min():
            cols.append(np.log(v))
    A = np.column_stack([np.ones(len(yt)), *cols])
    if len(yt) <= A.shape[1]:
        return None
    w, *_ = np.linalg.lstsq(A, np.log(work), rcond=None)
    return min(max(float(w[1]), 0.0), 1.0)


def continued(
    model: Model, Xt: Any, yt: Any, x: Any, mode: str = "local", floor: float = 0.0
) -> tuple[float, float]:
    """(the prediction of ``model`` for ``x``, continued beyond the range as the module says;
    the straight prediction). Inside the range both are the model's own."""
    straight = float(model(Xt, yt, x))
    ratio, c = size_ratio(Xt, x)
    if c is None or ratio == 1.0:
        return straight, straight
    start = float(x[STARTUP])
    edge = scaled(x, 1.0 / ratio)
    w_edge = float(model(Xt, yt, edge)) - start
    if w_edge <= 0:
        return straight, straight
    e: float | None
    if mode == "history":
        e = history_elasticity(Xt, yt, c)
    else:
        inward = STEP if ratio > 1 else -STEP
        w_in = float(model(Xt, yt, scaled(edge, 1.0 - inward))) - start
        e = None
        if w_in > 0:
            e = math.log(w_edge / w_in) / -math.log(1.0 - inward)
    if e is None:
        return straight, straight
    e = min(max(e, 0.0), 1.0)
    value = start + w_edge * ratio**e
    return max(value, floor), straight
