"""What every key of a server shares while its predictions are refreshed: the class-aware model
(stored, and kept unpickled per process) and the server's residual pools (read only when a key
needs them).
"""

from __future__ import annotations

import pickle
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, overload

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from sparkscope.advisor.predict import amdahl, candidates, classaware, elasticity, rolling
from sparkscope.advisor.predict.backtest import POOL, REFIT_GROWTH
from sparkscope.advisor.predict.features import padded
from sparkscope.advisor.predict.regimes import REGIMES
from sparkscope.config.loader import PredictionConfig
from sparkscope.db import now_ms
from sparkscope.models.predictions import PredictionModel, RunPrediction

# The pool size and the refit growth are the backtest's: it replays what a fetch does.
#: Unpickled models kept per process (one per database and server).
MODELS_KEPT = 8

_ModelKey = tuple[str, int, int, int, int]
_models: OrderedDict[_ModelKey, classaware.ClassAware] = OrderedDict()
_models_lock = threading.Lock()


def _remember(key: _ModelKey, model: classaware.ClassAware) -> None:
    with _models_lock:
        _models[key] = model
        _models.move_to_end(key)
        while len(_models) > MODELS_KEPT:
            _models.popitem(last=False)


def _recall(key: _ModelKey) -> classaware.ClassAware | None:
    with _models_lock:
        model = _models.get(key)
        if model is not None:
            _models.move_to_end(key)
        return model


def forget_models() -> None:
    """Drop the unpickled models this process keeps (the stored ones stay)."""
    with _models_lock:
        _models.clear()


class _Stored(NamedTuple):
    fitted_before_ms: int
    n_train: int
    fitted_at_ms: int


def class_model(
    session: Session, server_id: int, before_ms: int, prediction_config: PredictionConfig
) -> classaware.ClassAware | None:
    """The class-aware model of the server's successful runs that started before ``before_ms``.

    The last fit is stored and reused while it is out of sample for these runs (all its training
    runs started before them) and the runs available grew by less than half since; otherwise it
    is refitted (and stored when it is the newest). A stored fit is unpickled once per process:
    it is identified by its database, server, fit time, training runs and cut-off, which change
    whenever any process refits it.
    """
    if not prediction_config.class_aware:
        return None
    import numpy as np

    trainable = (
        RunPrediction.server_id == server_id,
        RunPrediction.succeeded.is_(True),
        RunPrediction.start_time_ms < before_ms,
    )
    # The count and the stored fit's identity in one round trip.
    stored = PredictionModel.server_id == server_id
    found = session.execute(
        select(
            select(func.count()).where(*trainable).scalar_subquery(),
            select(PredictionModel.fitted_before_ms).where(stored).scalar_subquery(),
            select(PredictionModel.n_train).where(stored).scalar_subquery(),
            select(PredictionModel.fitted_at_ms).where(stored).scalar_subquery(),
        )
    ).one()
    n = int(found[0] or 0)
    if n < classaware.MIN_TRAIN:
        return None
    cached = _Stored(int(found[1]), int(found[2]), int(found[3])) if found[1] is not None else None
    if (
        cached is not None
        and cached.fitted_before_ms <= before_ms
        and n < REFIT_GROWTH * cached.n_train
    ):
        key = _model_key(
            session, server_id, cached.fitted_at_ms, cached.n_train, cached.fitted_before_ms
        )
        model = _recall(key)
        if model is None:
            blob = session.scalar(
                select(PredictionModel.blob).where(PredictionModel.server_id == server_id)
            )
            model = pickle.loads(zlib.decompress(blob or b""))  # written by us only
            _remember(key, model)
        return model
    rows = session.execute(
        select(RunPrediction.vector, RunPrediction.duration_ms)
        .where(*trainable)
        .order_by(RunPrediction.start_time_ms.desc())
        .limit(classaware.MAX_TRAIN)
    ).all()
    X = np.array([padded(v) for v, _d in reversed(rows)], dtype=float)
    y = np.array([float(d or 0) for _v, d in reversed(rows)])
    fitted = classaware.fit(X, y)
    if fitted is not None and (cached is None or cached.fitted_before_ms <= before_ms):
        if cached is not None:
            session.execute(delete(PredictionModel).where(PredictionModel.server_id == server_id))
        made = PredictionModel(
            server_id=server_id,
            fitted_before_ms=before_ms,
            n_train=n,
            blob=zlib.compress(pickle.dumps(fitted), 1),
            fitted_at_ms=now_ms(),
        )
        session.add(made)
        _remember(_model_key(session, server_id, made.fitted_at_ms, n, before_ms), fitted)
    return fitted


def _latest_runs(
    session: Session, server_id: int, before_ms: int, limit: int
) -> list[tuple[str, list[float], float]]:
    """The server's latest ``limit`` successful runs that started before ``before_ms``, oldest
    first, as ``(key, vector, duration)`` (vectors in today's ``NUMERIC`` order)."""
    rows = session.execute(
        select(RunPrediction.key, RunPrediction.vector, RunPrediction.duration_ms)
        .where(
            RunPrediction.server_id == server_id,
            RunPrediction.succeeded.is_(True),
            RunPrediction.start_time_ms < before_ms,
        )
        .order_by(RunPrediction.start_time_ms.desc())
        .limit(limit)
    ).all()
    return [(k, padded(v), float(d)) for k, v, d in reversed(rows) if v and d is not None and d > 0]


def amdahl_share(session: Session, server_id: int, before_ms: int) -> amdahl.Share | None:
    """The server's parallel share (``sparkscope.advisor.predict.amdahl``), learnt from its
    latest ``amdahl.LEARN_RUNS`` successful runs that started before ``before_ms``."""
    return amdahl.learn_rows(_latest_runs(session, server_id, before_ms, amdahl.LEARN_RUNS))


def size_elasticity(
    session: Session, server_id: int, before_ms: int
) -> elasticity.Elasticity | None:
    """The server's size elasticity (``sparkscope.advisor.predict.elasticity``), learnt from its
    latest ``elasticity.LEARN_RUNS`` successful runs that started before ``before_ms``."""
    rows = _latest_runs(session, server_id, before_ms, elasticity.LEARN_RUNS)
    return elasticity.learn_rows(rows, candidates.OPTIONS.elasticity)


def _model_key(
    session: Session, server_id: int, fitted_at_ms: int, n_train: int, before_ms: int
) -> _ModelKey:
    url = session.get_bind().engine.url.render_as_string(hide_password=True)
    return (url, server_id, int(fitted_at_ms), int(n_train), int(before_ms))


class LazyPool(Sequence[float]):
    """A list of residuals read on first use."""

    def __init__(self, load: Callable[[], list[float]]) -> None:
        self._load = load
        self._items: list[float] | None = None

    def _get(self) -> list[float]:
        if self._items is None:
            self._items = self._load()
        return self._items

    def __len__(self) -> int:
        return len(self._get())

    @overload
    def __getitem__(self, i: int) -> float: ...
    @overload
    def __getitem__(self, i: slice) -> list[float]: ...
    def __getitem__(self, i: int | slice) -> float | list[float]:
        return self._get()[i]

    def __iter__(self) -> Iterator[float]:
        return iter(self._get())


def pools(session: Session, server_id: int, before_ms: int) -> tuple[dict[str, LazyPool], LazyPool]:
    """The server's recent out-of-sample log residuals among the predictions computed before
    ``before_ms`` (the start of the refresh: what this refresh adds does not count), read when
    first needed (only keys with fewer than ``conformal.MIN_RESIDUALS`` residuals of their own
    borrow them): the served model's, each divided by its run's difficulty, per regime ("" for
    all), and the served forecast's."""
    rows: list[Any] | None = None

    def read() -> list[Any]:
        nonlocal rows
        if rows is None:
            rows = list(
                session.execute(
                    select(
                        RunPrediction.duration_ms,
                        RunPrediction.expected_ms,
                        RunPrediction.forecast_ms,
                        RunPrediction.difficulty,
                        RunPrediction.regime,
                    )
                    .where(
                        RunPrediction.server_id == server_id,
                        RunPrediction.succeeded.is_(True),
                        RunPrediction.computed_at_ms < before_ms,
                    )
                    .order_by(RunPrediction.start_time_ms.desc())
                    .limit(POOL)
                ).all()
            )
        return rows

    def served(kind: str) -> Callable[[], list[float]]:
        def load() -> list[float]:
            return [
                e / float(h or 1.0)
                for d, p, _f, h, k in read()
                if (not kind or k == kind) and (e := rolling.log_error(d, p)) is not None
            ]

        return load

    def forecast() -> list[float]:
        return [e for d, _p, f, _h, _k in read() if (e := rolling.log_error(d, f)) is not None]

    served_pools = {kind: LazyPool(served(kind)) for kind in ("", *REGIMES)}
    return served_pools, LazyPool(forecast)
