"""A key's runs are predicted with bounded memory (sparkscope.prediction.window): features read a
batch at a time, points past the residual window slimmed, features past the latest successful
runs dropped, rows written in batches; and what is stored is what holding every run in memory
stores (PostgreSQL and SQLite)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.advisor.predict import rolling
from sparkscope.config.loader import PredictionConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application, EnvironmentProperty
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.prediction import refresh, server_models, window
from sparkscope.prediction.runs import StoredRun

HOUR_MS = 3_600_000
START = 1_700_000_000_000
MIB = 1 << 20
RUNS = 230  # of the key "hourly": more than the training and residual windows together
FAILED_EVERY = 9  # every 9th run has a failed job: predicted, never trains


def _seed(factory: sessionmaker[Session]) -> None:
    with factory() as s, s.begin():
        s.add(HistoryServer(id=1, name="one", url="-", created_at_ms=0))
        for i in range(RUNS + 8):
            name = "hourly" if i < RUNS else "weekly"
            size = (50 + (i * 37) % 200) * MIB  # input sizes spread over 50-250 MiB
            duration = 20_000 + size // 4096 + (i * 7919) % 9_000  # grows with the input, noisy
            start = START + i * HOUR_MS
            app = Application(
                server_id=1,
                app_id=f"app-{i}",
                attempt_id="",
                name=name,
                start_time_ms=start,
                end_time_ms=start + duration,
                duration_ms=duration,
                completed=True,
                fetched_at_ms=start + duration,
                input_bytes=size,
                num_tasks=10 + i % 5,
                num_stages=2,
                num_jobs=1,
                num_executors=1 + i % 3,
                num_failed_jobs=1 if i % FAILED_EVERY == FAILED_EVERY - 1 else 0,
            )
            s.add(app)
            s.flush()
            s.add(
                EnvironmentProperty(
                    application_id=app.id,
                    section="spark",
                    name="spark.sql.shuffle.partitions",
                    value="200" if i < RUNS // 2 else "400",
                )
            )


def _stored(factory: sessionmaker[Session]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    def rows(model: Any, order: Any) -> list[dict[str, Any]]:
        cols = [c for c in model.__table__.columns if c.name not in ("id", "computed_at_ms")]
        return [dict(r) for r in s.execute(select(*cols).order_by(order)).mappings()]

    with factory() as s:
        return (
            rows(RunPrediction, RunPrediction.application_id),
            rows(RecurringForecast, RecurringForecast.key),
        )


def _predict_all(factory: sessionmaker[Session]) -> None:
    server_models.forget_models()
    with factory() as s, s.begin():
        stats = refresh.refresh_session(s, 1, PredictionConfig(), full=True)
    assert stats.runs == RUNS + 8


class _Unbounded(window.Reach):
    """Keeps every point and every run's features (what the loop held before)."""

    def passed(self, i: int) -> None:
        pass


def test_bounded_refresh_stores_what_holding_every_run_stores(
    fresh_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(fresh_db_url)
    factory = make_sessionmaker(engine)
    _seed(factory)

    with monkeypatch.context() as m:
        m.setattr(refresh, "Reach", _Unbounded)
        _predict_all(factory)
    unbounded = _stored(factory)

    reaches: list[window.Reach] = []
    loaders: list[window.FeatureLoader] = []

    class Reach(window.Reach):
        def __init__(self, runs: list[StoredRun], points: list[Any]) -> None:
            super().__init__(runs, points)
            reaches.append(self)

    class FeatureLoader(window.FeatureLoader):
        def __init__(self, session: Session, runs: list[StoredRun], since: int) -> None:
            super().__init__(session, runs, since)
            loaders.append(self)

    monkeypatch.setattr(refresh, "Reach", Reach)
    monkeypatch.setattr(refresh, "FeatureLoader", FeatureLoader)
    monkeypatch.setattr(window, "BATCH", 40)
    monkeypatch.setattr(window, "WRITE_BATCH", 64)
    _predict_all(factory)
    bounded = _stored(factory)
    engine.dispose()

    assert len(bounded[0]) == RUNS + 8 and len(bounded[1]) == 2
    assert bounded == unbounded

    hourly = next(r for r in reaches if len(r.runs) == RUNS)
    # Only the latest RESIDUAL_RUNS successful runs (and the failed runs among them) keep their
    # whole point; every older point keeps only its serving model.
    whole = [j for j, p in enumerate(hourly.points) if p is not None and p.predictions]
    good = [j for j, r in enumerate(hourly.runs) if r.good]
    assert min(whole) == good[-rolling.RESIDUAL_RUNS]
    assert len(whole) <= rolling.RESIDUAL_RUNS + rolling.RESIDUAL_RUNS // (FAILED_EVERY - 1) + 1
    assert hourly.slim == RUNS - len(whole)
    assert all(p is None or p.recent_forecast_errors is None for p in hourly.points)
    # Features: the latest five successful runs only; vectors: none (they are in the arrays).
    with_features = [j for j, r in enumerate(hourly.runs) if r.features is not None]
    assert with_features == good[-window.FEATURE_RUNS :]
    assert all(r.vector == [] for r in hourly.runs)
    # The features were read 40 runs at a time as the loop came to them.
    hourly_loader = next(f for f in loaders if len(f.runs) == RUNS)
    assert hourly_loader.reads == -(-RUNS // 40)
