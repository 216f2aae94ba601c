"""Baseline models of a run's duration from the earlier runs of its key.

Every model has the same signature: ``model(X, y, x) -> float`` where ``X`` holds the feature
vectors (:data:`sparkscope.advisor.predict.features.NUMERIC` order) of the training runs, oldest first,
``y`` their durations, and ``x`` the features of the run to predict. Training runs are successful
runs that started before the predicted one; callers guarantee at least one.
"""

from __future__ import annotations

import math
from typing import Any

from sparkscope.advisor.predict.features import NUMERIC

#: Columns that measure how much a run had to do, most telling first.
SIZE_COLUMNS = tuple(
    NUMERIC.index(n) for n in ("input_bytes", "input_records", "shuffle_read_bytes", "output_bytes")
)
MEDIAN_K = 5
EWMA_ALPHA = 0.3
#: No prediction below this share of the fastest training run.
FLOOR = 0.2


def last_run(X: Any, y: Any, x: Any) -> float:
    """The duration of the latest earlier run."""
    return float(y[-1])


def median_of_last(X: Any, y: Any, x: Any, k: int = MEDIAN_K) -> float:
    """The median duration of the latest ``k`` earlier runs."""
    last = sorted(float(v) for v in y[-k:])
    n = len(last)
    return last[n // 2] if n % 2 else (last[n // 2 - 1] + last[n // 2]) / 2


def ewma(X: Any, y: Any, x: Any, alpha: float = EWMA_ALPHA) -> float:
    """Exponentially weighted mean of the durations, recent runs weighing most."""
    import numpy as np

    n = len(y)
    w = (1 - alpha) ** np.arange(n - 1, -1, -1, dtype=float)
    return float(np.dot(w, y) / w.sum())


def size_column(X: Any) -> int | None:
    """The first size column that varies among the training runs (None: no size varies)."""
    for c in SIZE_COLUMNS:
        col = X[:, c]
        if col.max() > 0 and col.max() > 1.0001 * col.min():
            return c
    return None


def line_fit(s: Any, y: Any, w: Any = None) -> tuple[float, float]:
    """Non-negative least squares of ``y = a + b * s`` (a: fixed cost such as start-up, b: cost
    per unit of size), optionally weighted; both coefficients clipped at zero."""
    import numpy as np

    w = np.ones(len(y)) if w is None else w
    sw = w.sum()
    ms, my = np.dot(w, s) / sw, np.dot(w, y) / sw
    var = np.dot(w, (s - ms) ** 2)
    b = np.dot(w, (s - ms) * (y - my)) / var if var > 0 else 0.0
    if b < 0:
        b = 0.0
    a = my - b * ms
    if a < 0:  # no negative start-up: the line through the origin instead
        a, b = 0.0, float(np.dot(w, s * y) / max(np.dot(w, s * s), 1e-300))
    return float(a), float(b)


def size_scaled(X: Any, y: Any, x: Any) -> float:
    """Duration on a line over the run's size (input bytes, else records, shuffle, output):
    fixed cost plus cost per byte, fitted on the earlier runs. Falls back to the median."""
    c = size_column(X)
    if c is None or len(y) < 3:
        return median_of_last(X, y, x)
    a, b = line_fit(X[:, c], y)
    return float(max(a + b * x[c], FLOOR * float(y.min())))


#: What the I/O line regresses on: bytes and records read, bytes written, task slots. Shuffle
#: volumes are left out on purpose: they follow the plan (join strategy, AQE) and jump when it
#: flips, which a line extrapolates badly; the instance-based model sees them.
IO_COLUMNS = tuple(
    NUMERIC.index(n) for n in ("input_bytes", "input_records", "output_bytes", "cores")
)
STARTUP = NUMERIC.index("startup_ms")
#: Task slots (executor cores summed), and the scale of the work the slots share (Ernest's s in
#: its s / m term: the input read).
SLOTS = NUMERIC.index("cores")
PARALLEL_COLUMNS = (NUMERIC.index("input_bytes"),)
#: Ridge strength per run (scaled columns).
RIDGE = 0.001


def _fit(A: Any, G: Any, b: Any, work: Any, y: Any) -> tuple[Any, float, float, float]:
    """Ridge line of ``work`` on the design ``A`` (intercept first, then scaled and centred
    columns; ``G = A'A``, ``b = A'work``), intercept not penalised: (coefficients, residual sum of
    squares, effective degrees of freedom: the trace of the hat matrix, PRESS of the relative
    errors: the sum of (leave-one-out residual / duration)^2 over the runs ``y``)."""
    import numpy as np

    k = A.shape[1]
    inv = np.linalg.inv(G + np.diag([0.0] + [RIDGE * len(work)] * (k - 1)))
    w = inv @ b
    resid = work - A @ w
    h = ((A @ inv) * A).sum(axis=1)
    loo = resid / np.maximum(1.0 - h, 1e-9)
    press = float(((loo / y) ** 2).sum())
    return w, float(resid @ resid), float(np.trace(inv @ G)), press


class LineFit:
    """The I/O line and the slot line fitted on a key's training runs, evaluated at any rows.

    ``slots_matter``: the slot line's per-slot term is significant (the partial F-test);
    ``press``: the relative PRESS of each line (name -> value; inf when not fitted).
    """

    def __init__(self, X: Any, y: Any, alpha: float = 0.0) -> None:
        import numpy as np
        from scipy.special import fdtrc

        self.y_min = float(y.min())
        self.slots_matter = False
        self.press = {"io_line": math.inf, "slot_line": math.inf}
        work = y - X[:, STARTUP]
        n = len(y)
        self.cols = [c for c in IO_COLUMNS if X[:, c].max() > 1.0001 * X[:, c].min()]
        self.median_work = float(median_of_last(X, work, None))
        self.fitted = n >= 4 and bool(self.cols)
        if not self.fitted:
            return
        M = X[:, self.cols]
        self.varies = bool(X[:, SLOTS].max() > 1.0001 * max(X[:, SLOTS].min(), 1.0))
        self.par = [c for c in PARALLEL_COLUMNS if X[:, c].max() > 0] if self.varies else []
        if self.par:  # the parallel columns, divided by the slots, after the I/O ones
            M = np.column_stack([M, X[:, self.par] / np.maximum(X[:, SLOTS], 1.0)[:, None]])
        scale = np.abs(M).max(axis=0)
        scale[scale == 0] = 1.0
        self.scale = scale
        Z = M / scale
        self.mu = Z.mean(axis=0)
        A = np.column_stack([np.ones(n), Z - self.mu])
        G, b = A.T @ A, A.T @ work
        k = 1 + len(self.cols)  # the I/O line: the first columns (same scaling, same centring)
        self.w_io, rss0, df0, self.press["io_line"] = _fit(A[:, :k], G[:k, :k], b[:k], work, y)
        self.w_slot = self.w_io
        self.press["slot_line"] = self.press["io_line"]
        if A.shape[1] == k:
            return
        self.w_slot, rss1, df1, self.press["slot_line"] = _fit(A, G, b, work, y)
        extra, resid_df = df1 - df0, n - df1
        if extra <= 1e-6 or resid_df < 1 or rss1 >= rss0:
            self.slots_matter = False
        elif rss1 <= 0:
            self.slots_matter = True
        else:
            stat = ((rss0 - rss1) / extra) / (rss1 / resid_df)
            self.slots_matter = bool(fdtrc(extra, resid_df, stat) < alpha)

    _FIELDS = ("y_min", "slots_matter", "cols", "median_work", "fitted", "par", "scale", "mu",
               "w_io", "w_slot")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The fitted lines as plain numbers (``from_json`` evaluates them again)."""
        import numpy as np

        out = {}
        for name in self._FIELDS:
            v = getattr(self, name, None)
            out[name] = v.tolist() if isinstance(v, np.ndarray) else v
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LineFit:
        import numpy as np

        fit = cls.__new__(cls)
        for name in cls._FIELDS:
            v = data.get(name)
            setattr(
                fit,
                name,
                np.array(v, dtype=float)
                if name in ("scale", "mu", "w_io", "w_slot") and v is not None
                else v,
            )
        fit.press = {}
        return fit

    def at(self, rows: Any) -> tuple[Any, Any]:
        """(I/O line, slot line) for each row of ``rows``, start-up included, floored."""
        import numpy as np

        rows = np.atleast_2d(rows)
        start = rows[:, STARTUP]
        floor = FLOOR * self.y_min  # a line extrapolated below zero says nothing: the floor
        if not self.fitted:  # a training run's start-up beyond its duration: no negative work
            same = np.maximum(max(self.median_work, 0.0) + start, floor)
            return same, same
        M = rows[:, self.cols]
        if self.par:
            M = np.column_stack([M, rows[:, self.par] / np.maximum(rows[:, SLOTS], 1.0)[:, None]])
        Zc = M / self.scale - self.mu
        k = 1 + len(self.cols)
        io = np.maximum(self.w_io[0] + Zc[:, : k - 1] @ self.w_io[1:], 0.0)
        slot = np.maximum(self.w_slot[0] + Zc[:, : len(self.w_slot) - 1] @ self.w_slot[1:], 0.0)
        return np.maximum(io + start, floor), np.maximum(slot + start, floor)


def lines(X: Any, y: Any, x: Any, alpha: float = 0.0) -> tuple[float, float, bool]:
    """(I/O line, slot line, whether the slot line's per-slot term is significant at ``alpha``).

    The I/O line: the run's own start-up plus a ridge line of the rest on what it read and wrote
    and the task slots it had, never below ``FLOOR`` times the fastest training run. Below four
    training runs, or when none of its columns varies, the run's start-up plus the median of the
    rest.

    The slot line: the I/O line plus one more column, the bytes read divided by the run's task
    slots. That is Ernest's parallel term (scale / machines; Venkataraman et al., NSDI 2016):
    work spread evenly over P slots takes 1/P of the time. With the I/O line's columns kept, the
    fit splits the time per byte into a part that does not shrink with more slots (Amdahl's
    serial part: stragglers, driver work per byte) and a part that does; the slot count itself
    stays as a per-slot overhead (Ernest's term in machines). It nests the I/O line. When the
    training runs all had the same slot count the new column is the bytes column over a constant:
    there is nothing to learn about slots, and the slot line is the I/O line.

    Significance: the partial F-test of the two nested lines on the training runs, each ridge
    fit's effective degrees of freedom in place of its column count.
    """
    fit = LineFit(X, y, alpha)
    io, slot = fit.at(x)
    return float(io[0]), float(slot[0]), fit.slots_matter


MODELS = {
    "last_run": last_run,
    "median_5": median_of_last,
    "ewma": ewma,
    "size_scaled": size_scaled,
}
