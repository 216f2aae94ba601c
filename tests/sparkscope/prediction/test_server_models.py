"""What a server's keys share during a refresh: the stored class-aware model, unpickled once per
process (and reloaded when another process refitted it), and the residual pools, read only when a
key needs them (PostgreSQL and SQLite)."""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.config.loader import PredictionConfig
from sparkscope.db import make_engine, make_sessionmaker, now_ms
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import PredictionModel
from sparkscope.prediction import refresh as predictions
from sparkscope.prediction import server_models as prediction_shared

DAY_MS = 86_400_000
START = 1_700_000_000_000


@pytest.fixture
def factory(fresh_db_url: str) -> Iterator[sessionmaker[Session]]:
    """One server, two keys of 20 runs each, predictions computed (class-aware model stored)."""
    prediction_shared.forget_models()
    engine = make_engine(fresh_db_url)
    made = make_sessionmaker(engine)
    with made() as s, s.begin():
        s.add(HistoryServer(id=1, name="one", url="-", created_at_ms=0))
        for i in range(40):
            size = 1_000_000 * (1 + i % 20)
            start = START + i * DAY_MS
            duration = 5_000 + size // 1000 + (3_000 if i % 2 else 0)
            s.add(
                Application(
                    server_id=1,
                    app_id=f"app-{i}",
                    attempt_id="",
                    name=f"key-{i % 2}",
                    start_time_ms=start,
                    end_time_ms=start + duration,
                    duration_ms=duration,
                    completed=True,
                    fetched_at_ms=start + duration,
                    input_bytes=size,
                    num_tasks=10,
                    num_stages=2,
                    num_jobs=1,
                    num_executors=1,
                )  # fmt: skip
            )
    assert predictions.refresh_server(made, 1, PredictionConfig()).runs == 40
    yield made
    prediction_shared.forget_models()
    engine.dispose()


def test_the_stored_model_is_unpickled_once_and_reloaded_after_a_refit_elsewhere(
    factory: sessionmaker[Session],
) -> None:
    prediction_config = PredictionConfig()
    late = START + 100 * DAY_MS
    with factory() as s, s.begin():  # fitted (the first refresh had no earlier runs) and stored
        first = prediction_shared.class_model(s, 1, late, prediction_config)
        assert first is not None
    with factory() as s:
        assert (
            prediction_shared.class_model(s, 1, late, prediction_config) is first
        )  # kept, not unpickled
    # Another process refits: the stored row changes (fit time, blob); this one must see it.
    other = pickle.loads(zlib.decompress(_blob(factory)))
    other.fallback = 123.0
    with factory() as s, s.begin():
        s.execute(
            update(PredictionModel)
            .where(PredictionModel.server_id == 1)
            .values(
                fitted_at_ms=PredictionModel.fitted_at_ms + 1,
                blob=zlib.compress(pickle.dumps(other), 1),
            )
        )
    with factory() as s:
        reloaded = prediction_shared.class_model(s, 1, late, prediction_config)
        assert reloaded is not None and reloaded is not first and reloaded.fallback == 123.0
    prediction_shared.forget_models()
    with factory() as s:
        again = prediction_shared.class_model(s, 1, late, prediction_config)
        assert again is not None and again is not reloaded and again.fallback == 123.0
    # The model is out of sample: a cut-off before the stored fit's gets no stored model.
    with factory() as s:
        early = prediction_shared.class_model(s, 1, START + 35 * DAY_MS, prediction_config)
        assert early is None or early.fallback != 123.0


def _blob(factory: sessionmaker[Session]) -> bytes:
    with factory() as s:
        blob = s.scalar(select(PredictionModel.blob).where(PredictionModel.server_id == 1))
    assert blob is not None
    return blob


def test_residual_pools_are_read_once_and_only_when_used(
    factory: sessionmaker[Session],
) -> None:
    with factory() as s:
        statements: list[str] = []
        engine = s.get_bind().engine
        listen = lambda *args: statements.append(str(args[2]))  # noqa: E731
        event.listen(engine, "before_cursor_execute", listen)
        try:
            pools, fpool = prediction_shared.pools(s, 1, now_ms() + 1)
            assert statements == []  # nothing read yet
            served, forecast = list(pools[""]), list(fpool)
            assert len(statements) == 1 and len(pools[""]) == len(served)
            assert 0 < len(served) <= 40 and 0 < len(forecast) <= 40
            # Per regime: the same rows (no second read), split by the regime of their run.
            by_regime = {k: list(v) for k, v in pools.items() if k}
            assert len(statements) == 1
            assert sorted(sum(by_regime.values(), [])) == sorted(served)
            assert by_regime["new_key"]  # the first runs of each key
            # Predictions computed from the cut-off on (this refresh's own) do not count.
            none, _ = prediction_shared.pools(s, 1, 0)
            assert list(none[""]) == []
        finally:
            event.remove(engine, "before_cursor_execute", listen)
