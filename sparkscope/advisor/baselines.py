"""Baseline models of a run's duration from the earlier runs of its key.

Every model has the same signature: ``model(X, y, x) -> float`` where ``X`` holds the feature
vectors (:data:`sparkscope.advisor.features.NUMERIC` order) of the training runs, oldest first,
``y`` their durations, and ``x`` the features of the run to predict. Training runs are successful
runs that started before the predicted one; callers guarantee at least one.
"""

from __future__ import annotations

from typing import Any

from sparkscope.advisor.features import NUMERIC

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
#: Ridge strength per run (scaled columns).
RIDGE = 0.001


def io_line(X: Any, y: Any, x: Any) -> float:
    """The run's own start-up plus a ridge line of the rest on what it read and wrote and the
    task slots it had (columns scaled by their largest value, intercept not penalised)."""
    import numpy as np

    n = len(y)
    work = y - X[:, STARTUP]
    cols = [c for c in IO_COLUMNS if X[:, c].max() > 1.0001 * X[:, c].min()]
    if n < 4 or not cols:
        return float(median_of_last(X, work, x) + x[STARTUP])
    scale = np.abs(X[:, cols]).max(axis=0)
    Z = X[:, cols] / scale
    mu = Z.mean(axis=0)
    A = np.column_stack([np.ones(n), Z - mu])
    penalty = np.diag([0.0] + [RIDGE * n] * len(cols))
    w = np.linalg.solve(A.T @ A + penalty, A.T @ work)
    z = np.concatenate([[1.0], x[cols] / scale - mu])
    return float(max(float(z @ w), 0.0) + x[STARTUP])


MODELS = {
    "last_run": last_run,
    "median_5": median_of_last,
    "ewma": ewma,
    "size_scaled": size_scaled,
    "io_line": io_line,
}
