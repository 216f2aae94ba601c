"""Class-aware model: workload classes from PCA-reduced run features, one GBDT per class.

After the class-aware approach (classification + PCA + gradient-boosted trees): runs of every
key are pooled, their scaled features reduced with PCA, grouped into classes with k-means, and
one gradient-boosted tree ensemble per class learns log(duration) from the features. A key with
little history of its own is served by what runs like it (across applications) took.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.predict.knn import DISTANCE_COLUMNS

MAX_TRAIN = 5000
MIN_TRAIN = 30
RUNS_PER_CLASS = 200
MAX_CLASSES = 6


@functools.lru_cache(maxsize=1)
def _threadpools() -> Any:
    """The process's thread pools (OpenMP, BLAS), looked up once: the lookup costs milliseconds.
    scikit-learn is imported first so that its OpenMP runtime is among them."""
    import sklearn.ensemble  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _scaled(X: Any) -> Any:
    import numpy as np

    return np.log1p(np.maximum(X[:, DISTANCE_COLUMNS], 0.0))


@dataclass
class ClassAware:
    """A fitted class-aware model (PCA, k-means and one regressor per class)."""

    pca: Any
    kmeans: Any
    regressors: dict[int, Any]
    fallback: float

    def predict(self, X: Any) -> Any:
        """Durations (ms) of the runs ``X``; NaN where the class has no regressor."""
        import numpy as np

        with _threadpools().limit(limits=1):
            return self._predict(X) if len(X) else np.zeros(0)

    def _predict(self, X: Any) -> Any:
        import numpy as np

        A = _scaled(X)
        labels = self._labels(A)
        out = np.full(len(X), self.fallback)
        for c, reg in self.regressors.items():
            m = labels == c
            if m.any():
                out[m] = np.exp(reg.predict(A[m]))
        return out

    def classes(self, X: Any) -> Any:
        return self._labels(_scaled(X))

    def _labels(self, A: Any) -> Any:
        """The nearest k-means centre of each run in PCA space: what ``kmeans.predict(
        pca.transform(A))`` computes, from the fitted arrays directly (the estimators' input
        checks cost more than the arithmetic for the few runs of a fetch)."""
        import numpy as np

        P = (A - self.pca.mean_) @ self.pca.components_.T
        if getattr(self.pca, "whiten", False):
            P /= np.sqrt(self.pca.explained_variance_)
        centres = self.kmeans.cluster_centers_
        d = ((P[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        return d.argmin(axis=1)


def fit(X: Any, y: Any, seed: int = 0) -> ClassAware | None:
    """Fit on the latest ``MAX_TRAIN`` runs (rows oldest first); None when too few runs."""

    X, y = X[-MAX_TRAIN:], y[-MAX_TRAIN:]
    if len(y) < MIN_TRAIN:
        return None
    # One thread: OpenMP's start-up per call costs more than these small fits and predictions,
    # and the web and fetch processes share their cores.
    with _threadpools().limit(limits=1):
        return _fit(X, y, seed)


def _fit(X: Any, y: Any, seed: int) -> ClassAware:
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA
    from sklearn.ensemble import HistGradientBoostingRegressor

    A = _scaled(X)
    ly = np.log(np.maximum(y, 1.0))
    pca = PCA(n_components=min(4, A.shape[1], len(y) - 1), random_state=seed).fit(A)
    P = pca.transform(A)
    k = max(1, min(MAX_CLASSES, len(y) // RUNS_PER_CLASS))
    kmeans = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(P)
    regressors: dict[int, Any] = {}
    for c in range(k):
        m = kmeans.labels_ == c
        if m.sum() < MIN_TRAIN:
            continue
        regressors[c] = HistGradientBoostingRegressor(
            max_iter=40, max_leaf_nodes=15, min_samples_leaf=5, random_state=seed
        ).fit(A[m], ly[m])
    return ClassAware(pca, kmeans, regressors, float("nan"))


def anchored(at_run: float | None, yt: Any, class_train: Sequence[float] | None) -> float | None:
    """The class-aware model anchored on the key's own runs: its duration for the run times the
    geometric mean of (actual / its duration) over the key's training runs. The key's own runs
    tell its level (what its work costs on its servers), which similar runs of other keys
    cannot; the class model tells how the duration moves with the size and the slots between
    those runs and this one, which one or two runs of its own cannot. None without both."""
    if at_run is None or at_run <= 0 or class_train is None or len(class_train) != len(yt):
        return None
    logs = [
        math.log(float(a) / float(c))
        for a, c in zip(yt, class_train, strict=True)
        if a > 0 and c > 0
    ]
    if not logs or len(logs) != len(yt):
        return None
    return at_run * math.exp(sum(logs) / len(logs))
