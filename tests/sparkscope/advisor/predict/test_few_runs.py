"""A key with one, two or three training runs: never a negative or absurd prediction.

An earlier build served an I/O line of -25,169,624 ms with one training run: below four runs the
lines are the run's start-up plus the median of the training runs' work (duration minus
start-up), and a training run whose recorded start-up exceeded its duration (its first job
stamped hours after the run ended: clocks or time zones that disagree) made that work
negative. Nothing floored it, and the interval came out with its low above its expected value.
"""

from __future__ import annotations

import numpy as np
import pytest

from sparkscope.advisor.predict import baselines, rolling, workline
from sparkscope.advisor.predict.features import NUMERIC, run_features

IB, CORES, STARTUP = (NUMERIC.index(n) for n in ("input_bytes", "cores", "startup_ms"))


def _rows(inputs: list[float], cores: list[float], startup: list[float]) -> np.ndarray:
    X = np.zeros((len(inputs), len(NUMERIC)))
    X[:, IB], X[:, CORES], X[:, STARTUP] = inputs, cores, startup
    return X


@pytest.mark.parametrize("n_train", [1, 2, 3])
@pytest.mark.parametrize("cores", [[2.0] * 4, [1.0, 2.0, 4.0, 2.0]])
def test_a_start_up_longer_than_the_run_gives_no_negative_prediction(
    n_train: int, cores: list[float]
) -> None:
    # The training runs' start-up 7 hours (an inconsistent clock), their durations 14 s; the
    # run predicted has a normal 3.5 s start-up.
    startup = [25_200_000.0] * n_train + [3_500.0]
    X = _rows([1e7 * (1 + 0.1 * i) for i in range(n_train + 1)], cores[: n_train + 1], startup)
    y = np.array([14_056.0 + 100 * i for i in range(n_train + 1)])
    ok = np.ones(n_train + 1, dtype=bool)
    t = np.arange(n_train + 1, dtype=float) * 86_400_000
    # Other keys' residuals to borrow (without any, a first prediction has no interval).
    p = rolling.predict_run(X, y, ok, t, n_train, [None] * n_train, 0.8, {"": [0.05, -0.05] * 4})
    assert p.n_train == n_train
    floor = baselines.FLOOR * float(y[:n_train].min())
    for name, value in p.predictions.items():
        assert value >= floor - 1e-6, (name, value)
    assert p.expected is not None and p.low is not None and p.high is not None
    assert p.low <= p.expected <= p.high
    assert floor - 1e-6 <= p.expected <= 10 * float(y.max())


def test_the_lines_of_few_runs_are_floored() -> None:
    X = _rows([1e7, 2e7], [2.0, 2.0], [25_200_000.0, 25_200_000.0])
    y = np.array([14_000.0, 15_000.0])
    x = _rows([1.5e7], [2.0], [3_500.0])
    io, slot, _ = baselines.lines(X, y, x[0])
    assert io >= baselines.FLOOR * 14_000 and slot >= baselines.FLOOR * 14_000
    assert float(workline.fit(X, y).at(x)[0]) >= workline.FLOOR * 14_000


def test_the_start_up_never_exceeds_the_run() -> None:
    app = {"input_bytes": 1, "num_tasks": 1, "start_time_ms": 1_000, "duration_ms": 14_000}
    features = run_features(app, {}, [], [], first_job_ms=1_000 + 25_200_000)
    assert features.values["startup_ms"] == 14_000
