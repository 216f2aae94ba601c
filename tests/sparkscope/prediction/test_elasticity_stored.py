"""The size elasticity at fetch time: learnt from the server's stored runs of other keys when a
narrow key's run beyond its range needs it, and that run's stored prediction continued with it
(PostgreSQL and SQLite).

Known answer: the other keys' durations are 5 s plus c x size^0.7 ms over 1 to 4 GB, so the
server's elasticity is 0.7; the narrow key's are 2e-6 ms per byte over 1 to 1.5 GB, so its run of
4.5 GB (3x its largest) takes its work at the edge (3 s) times 3^0.7: 6.5 s rather than the
straight line's 9 s.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.config.loader import PredictionConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application, Executor
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RunPrediction
from sparkscope.prediction import refresh as predictions
from sparkscope.prediction import server_models
from tests.support.prediction import prediction_options

DAY_MS = 86_400_000
START = 1_700_000_000_000
NARROW = (1.0e9, 1.2e9, 1.4e9, 1.5e9, 1.1e9, 1.3e9)
#: The lines are ridge fits, a little under an exactly proportional key at 3x its range (4%);
#: the bent and the straight values differ by 27%.
LINE_TOLERANCE = 0.05


def _add(s: Session, i: int, name: str, day: int, size: float, duration: int) -> None:
    start = START + day * DAY_MS
    app = Application(
        server_id=1, app_id=f"app-{i}", attempt_id="", name=name, start_time_ms=start,
        end_time_ms=start + duration, duration_ms=duration, completed=True,
        fetched_at_ms=start + duration, input_bytes=int(size), num_tasks=10, num_stages=2,
        num_jobs=1, num_executors=1,
    )  # fmt: skip
    s.add(app)
    s.flush()
    s.add(Executor(application_id=app.id, executor_id="driver", is_driver=True, total_cores=4))


@pytest.fixture
def factory(fresh_db_url: str) -> Iterator[sessionmaker[Session]]:
    """Three keys of eight runs over 1 to 4 GB and a narrow key of six (refreshed), then the
    narrow key's run at 3x its largest."""
    with prediction_options(elasticity="pooled"):
        engine = make_engine(fresh_db_url)
        made = make_sessionmaker(engine)
        with made() as s, s.begin():
            s.add(HistoryServer(id=1, name="one", url="-", created_at_ms=0))
            i = 0
            for k in range(3):
                for j in range(8):
                    size = 1e9 * 4 ** (((3 * j) % 8) / 7)  # 1 to 4 GB, not in order
                    _add(
                        s,
                        i,
                        f"other-{k}",
                        10 * k + j,
                        size,
                        round(5_000 + (2 + k) * size**0.7 / 1e3),
                    )
                    i += 1
            for j, size in enumerate(NARROW):
                _add(s, i, "narrow", 40 + j, size, round(2e-6 * size))
                i += 1
        assert predictions.refresh_server(made, 1, PredictionConfig()).runs == 30
        with made() as s, s.begin():
            _add(s, i, "narrow", 50, 4.5e9, round(2e-6 * 4.5e9 * 3**0.7 / 3))
        yield made
        engine.dispose()


def _last(factory: sessionmaker[Session]) -> tuple[float, float, float]:
    with factory() as s:
        expected, low, high = s.execute(
            select(RunPrediction.expected_ms, RunPrediction.low_ms, RunPrediction.high_ms).where(
                RunPrediction.key == "narrow", RunPrediction.start_time_ms == START + 50 * DAY_MS
            )
        ).one()
    return float(expected), float(low), float(high)


def test_the_elasticity_is_learnt_from_the_stored_runs_of_the_other_keys(
    factory: sessionmaker[Session],
) -> None:
    assert predictions.refresh_server(factory, 1, PredictionConfig()).runs == 1
    with factory() as s:
        # before the narrow key's last run: its own runs are too narrow to learn from
        got = server_models.size_elasticity(s, 1, START + 50 * DAY_MS)
        assert got is not None and got.keys == 3
        assert got.e == pytest.approx(0.7, abs=0.01)
        assert server_models.size_elasticity(s, 1, START + 12 * DAY_MS) is None  # one key before
    expected, low, high = _last(factory)
    assert expected == pytest.approx(2e-6 * 1.5e9 * 3**0.7, rel=LINE_TOLERANCE)
    assert low <= expected <= high and high >= 2e-6 * 4.5e9 * (1 - LINE_TOLERANCE)


def test_off_the_narrow_key_is_continued_straight(factory: sessionmaker[Session]) -> None:
    with prediction_options(elasticity=""):
        predictions.refresh_server(factory, 1, PredictionConfig())
    expected, _low, _high = _last(factory)
    assert expected == pytest.approx(2e-6 * 4.5e9, rel=LINE_TOLERANCE)
