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


def last_run(X: Any, y: Any, x: Any) -> float:
    """The duration of the latest earlier run."""
    return float(y[-1])


def median_of_last(X: Any, y: Any, x: Any, k: int = MEDIAN_K) -> float:
    """The median duration of the latest ``k`` earlier runs."""
    import numpy as np

    return float(np.median(y[-k:]))


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
    import numpy as np

    c = size_column(X)
    if c is None or len(y) < 3:
        return median_of_last(X, y, x)
    a, b = line_fit(X[:, c], y)
    return float(max(a + b * x[c], 0.05 * np.median(y)))


MODELS = {
    "last_run": last_run,
    "median_5": median_of_last,
    "ewma": ewma,
    "size_scaled": size_scaled,
}
