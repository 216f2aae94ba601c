"""The parallel share at fetch time: learnt from the server's stored runs of other keys when a new
key's run on other task slots needs it, and that run's stored prediction scaled by it
(PostgreSQL and SQLite).

Known answer: every key's duration is 2e-5 ms per byte x (0.2 + 0.8 / task slots), parallel
share 0.8 on one slot, so a new key's run of 1 GB on 2 slots (12 s) takes 6 s on 8.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.advisor.predict import amdahl, candidates
from sparkscope.config.loader import PredictionConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application, Executor
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RunPrediction
from sparkscope.prediction import refresh as predictions
from sparkscope.prediction import server_models

DAY_MS = 86_400_000
START = 1_700_000_000_000


def _duration(size: int, slots: int) -> int:
    return round(2e-5 * size * (0.2 + 0.8 / slots))


def _add(s: Session, i: int, name: str, day: int, size: int, slots: int) -> None:
    start = START + day * DAY_MS
    duration = _duration(size, slots)
    app = Application(
        server_id=1, app_id=f"app-{i}", attempt_id="", name=name, start_time_ms=start,
        end_time_ms=start + duration, duration_ms=duration, completed=True,
        fetched_at_ms=start + duration, input_bytes=size, num_tasks=10, num_stages=2,
        num_jobs=1, num_executors=1,
    )  # fmt: skip
    s.add(app)
    s.flush()
    s.add(Executor(application_id=app.id, executor_id="driver", is_driver=True, total_cores=slots))


@pytest.fixture
def factory(fresh_db_url: str) -> Iterator[sessionmaker[Session]]:
    """Three keys of eight runs on 2 to 16 slots (refreshed), then a new key: 1 GB on 2 slots,
    then on 8."""
    old = candidates.OPTIONS
    candidates.OPTIONS = dataclasses.replace(old, amdahl="slots")
    engine = make_engine(fresh_db_url)
    made = make_sessionmaker(engine)
    with made() as s, s.begin():
        s.add(HistoryServer(id=1, name="one", url="-", created_at_ms=0))
        i = 0
        for k in range(3):
            for j, slots in enumerate((2, 4, 8, 16, 4, 2, 16, 8)):
                _add(s, i, f"other-{k}", 10 * k + j, 10**9 * (1 + k + j % 3), slots)
                i += 1
    # as at fetch time: the share is learnt from runs stored before the refresh's new ones
    assert predictions.refresh_server(made, 1, PredictionConfig()).runs == 24
    with made() as s, s.begin():
        _add(s, i, "new", 50, 10**9, 2)
        _add(s, i + 1, "new", 51, 10**9, 8)
    yield made
    candidates.OPTIONS = old
    engine.dispose()


def test_the_share_is_learnt_from_the_stored_runs_of_the_other_keys(
    factory: sessionmaker[Session],
) -> None:
    assert predictions.refresh_server(factory, 1, PredictionConfig()).runs == 2
    with factory() as s:
        share = server_models.amdahl_share(s, 1, START + 100 * DAY_MS)
        assert share is not None and share.keys == 3
        assert share.p == pytest.approx(0.8, abs=0.01)
        assert server_models.amdahl_share(s, 1, START + 10 * DAY_MS) is None  # one key before
        rows = s.execute(
            select(RunPrediction.expected_ms, RunPrediction.candidates)
            .where(RunPrediction.key == "new")
            .order_by(RunPrediction.start_time_ms)
        ).all()
    expected, served = rows[1]
    assert amdahl.MODEL in served
    assert expected == pytest.approx(_duration(10**9, 8), rel=0.02)  # 6 s, not the first run's 12
    assert rows[0].expected_ms is None or amdahl.MODEL not in rows[0].candidates


def test_off_the_new_key_is_predicted_by_its_run_as_it_was(factory: sessionmaker[Session]) -> None:
    candidates.OPTIONS = dataclasses.replace(candidates.OPTIONS, amdahl="")
    predictions.refresh_server(factory, 1, PredictionConfig())
    with factory() as s:
        expected, served = s.execute(
            select(RunPrediction.expected_ms, RunPrediction.candidates).where(
                RunPrediction.key == "new", RunPrediction.start_time_ms == START + 51 * DAY_MS
            )
        ).one()
    assert amdahl.MODEL not in served
    assert expected == pytest.approx(_duration(10**9, 2), rel=0.02)


def test_vectors_stored_before_the_last_feature_was_appended_still_teach_the_share(
    factory: sessionmaker[Session],
) -> None:
    from sqlalchemy import update

    from sparkscope.advisor.predict.features import NUMERIC

    with factory() as s, s.begin():
        for pk, vector in s.execute(
            select(RunPrediction.application_id, RunPrediction.vector)
        ).all()[::2]:
            # every other run as an older version stored it: one feature fewer
            s.execute(
                update(RunPrediction)
                .where(RunPrediction.application_id == pk)
                .values(vector=list(vector)[: len(NUMERIC) - 1])
            )
    with factory() as s:
        lengths = {len(v) for (v,) in s.execute(select(RunPrediction.vector))}
        assert lengths == {len(NUMERIC) - 1, len(NUMERIC)}
        share = server_models.amdahl_share(s, 1, START + 100 * DAY_MS)
    assert share is not None and share.p == pytest.approx(0.8, abs=0.01)
