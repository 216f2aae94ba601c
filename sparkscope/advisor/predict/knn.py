"""Instance-based prediction (after Song et al.): the most similar earlier runs, then a local line.

1. Scale the run features over the training runs: sizes and counts on a log scale, then every
   column to zero mean and unit variance (a constant column drops out).
2. Take the ``k`` nearest earlier runs by Euclidean distance, ``k = max(K_MIN, 2 * sqrt(n))``.
3. Fit a weighted line ``duration = a + b * size`` on them (weights fall with distance), the
   same non-negative fixed-cost-plus-per-byte form as the size-scaled baseline, and evaluate it at
   the run's size. Runs set up like this one (same partitions, cores, join threshold) therefore
   weigh most, and the line extrapolates growth the neighbours have not seen yet.
"""

from __future__ import annotations

import math
from typing import Any

from sparkscope.advisor.predict.baselines import FLOOR, line_fit, median_of_last, size_column
from sparkscope.advisor.predict.features import NUMERIC

K_MIN = 6
#: Features the distance is measured on.
DISTANCE_COLUMNS = tuple(
    NUMERIC.index(n)
    for n in (
        "input_bytes",
        "input_records",
        "shuffle_read_bytes",
        "shuffle_write_bytes",
        "output_bytes",
        "tasks",
        "stages",
        "cores",
        "executors",
        "executor_memory_bytes",
        "shuffle_partitions",
        "aqe",
        "broadcast_threshold_bytes",
    )
)


def neighbours(X: Any, x: Any, k: int) -> tuple[Any, Any]:
    """Indices of the ``k`` training rows nearest to ``x`` and their distances."""
    import numpy as np

    A = np.log1p(np.maximum(X[:, DISTANCE_COLUMNS], 0.0))
    a = np.log1p(np.maximum(x[list(DISTANCE_COLUMNS)], 0.0))
    mu, sd = A.mean(axis=0), A.std(axis=0)
    keep = sd > 1e-9
    if not keep.any():
        d = np.zeros(len(X))
    else:
        Z = (A[:, keep] - mu[keep]) / sd[keep]
        z = (a[keep] - mu[keep]) / sd[keep]
        d = np.sqrt(((Z - z) ** 2).sum(axis=1) / keep.sum())
    order = np.argsort(d, kind="stable")[:k]
    return order, d[order]


def knn_local(X: Any, y: Any, x: Any) -> float:
    """Local weighted line through the nearest earlier runs (see the module docstring)."""
    import numpy as np

    n = len(y)
    if n < 3:
        return median_of_last(X, y, x)
    k = min(n, max(K_MIN, int(2 * math.sqrt(n))))
    idx, dist = neighbours(X, x, k)
    w = 1.0 / (1.0 + dist**2)
    c = size_column(X[idx])
    if c is None:
        return float(np.dot(w, y[idx]) / w.sum())
    a, b = line_fit(X[idx, c], y[idx], w)
    return float(max(a + b * x[c], FLOOR * float(y.min())))


MODELS = {"knn_local": knn_local}
