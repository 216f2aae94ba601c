"""What a training run's job timeline says about a new iterative key: the wall time of one round
splits its duration into a fixed part and its rounds, so one earlier run predicts a run of any
round count.

The constructed runs have a known answer: duration = start-up + 5 s + 2 s x rounds, and the
timeline shows 2 s a round.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from sparkscope.advisor.predict import rolling, rounds_prior
from sparkscope.advisor.predict.features import NUMERIC, RunFeatures, padded, run_features
from sparkscope.advisor.predict.iterations import iterations, round_ms
from tests.support.prediction import prediction_options

IB, CORES, STARTUP, ITERS, ROUND = (
    NUMERIC.index(n) for n in ("input_bytes", "cores", "startup_ms", "iterations", "round_ms")
)


@pytest.fixture
def timeline_on() -> Iterator[None]:
    with prediction_options(rounds_timeline="one"):
        yield


def _runs(rounds: list[float], sizes: list[float] | None = None) -> np.ndarray:
    X = np.zeros((len(rounds), len(NUMERIC)))
    X[:, IB] = sizes or [4e8] * len(rounds)
    X[:, CORES] = 4
    X[:, STARTUP] = 3_000
    X[:, ITERS] = rounds
    X[:, ROUND] = 2_000 * X[:, IB] / 4e8  # a round is a pass over the data
    return X


def _duration(X: np.ndarray) -> np.ndarray:
    return X[:, STARTUP] + 5_000 + 2_000 * X[:, ITERS] * X[:, IB] / 4e8


def _predict(X: np.ndarray, y: np.ndarray) -> rolling.PredictedRun:
    n = len(y)
    ok, t = np.ones(n, dtype=bool), np.arange(n, dtype=float) * 86_400_000
    return rolling.predict_run(X, y, ok, t, n - 1, [None] * n, 0.8)


def test_one_run_at_10_rounds_predicts_30_rounds_within_one_percent(timeline_on: None) -> None:
    X = _runs([10, 30])
    y = _duration(X)
    p = _predict(X, y)
    assert p.model == "work_line"
    assert p.expected == pytest.approx(3_000 + 5_000 + 2_000 * 30, rel=0.01)


def test_without_the_switch_one_run_gives_only_its_own_duration() -> None:
    X = _runs([10, 30])
    y = _duration(X)
    with prediction_options(rounds_timeline=""):
        p = _predict(X, y)
    assert p.expected is not None
    assert abs(p.expected / y[-1] - 1) > 0.5  # 28 s for a 68 s run: what the prior corrects


def test_the_predicted_runs_own_round_time_is_never_read(timeline_on: None) -> None:
    X = _runs([10, 30])
    y = _duration(X)
    before = _predict(X, y).expected
    X[-1, ROUND] = 1e9  # a time-like measure of the run predicted
    y2 = y.copy()
    y2[-1] = 1.0  # and its duration
    assert _predict(X, y2).expected == before


def test_the_round_cost_grows_with_the_size_read() -> None:
    X = _runs([10, 10], sizes=[4e8, 8e8])
    line = rounds_prior.fit(X[:1], _duration(X[:1]), sized=True)
    assert line is not None
    assert line.at(X[1])[0] == pytest.approx(3_000 + 5_000 + 2_000 * 10 * 2, rel=1e-9)


def test_two_or_three_runs_take_the_median_of_their_own_costs() -> None:
    X = _runs([4, 8, 12])
    y = _duration(X)
    y[1] *= 1.5  # one noisy run does not move the medians
    line = rounds_prior.fit(X, y, sized=True)
    assert line is not None
    assert line.fixed == pytest.approx(5_000)
    assert line.per_round * 4e8 == pytest.approx(2_000)


def test_no_prior_without_rounds_or_their_times_or_beyond_three_runs() -> None:
    X = _runs([10, 20])
    y = _duration(X)
    assert rounds_prior.fit(X[:4], y[:4], sized=False) is not None
    no_time = X.copy()
    no_time[0, ROUND] = 0.0  # a run fetched before the round time was kept
    assert rounds_prior.fit(no_time, y, sized=False) is None
    no_rounds = X.copy()
    no_rounds[:, ITERS] = 0.0
    assert rounds_prior.fit(no_rounds, y, sized=False) is None
    many = _runs([4, 5, 6, 7])
    assert rounds_prior.fit(many, _duration(many), sized=False) is None


def test_a_key_without_iterations_is_predicted_as_without_the_switch() -> None:
    X = _runs([0, 0, 0])
    X[:, IB] = [1e8, 2e8, 3e8]
    X[:, ROUND] = 0.0
    y = X[:, STARTUP] + 4_000 + X[:, IB] / 1e5
    out = []
    for form in ("", "few"):
        with prediction_options(rounds_timeline=form):
            out.append(_predict(X, y).predictions)
    assert out[0] == out[1]


def _job(description: str, submitted: int | None, completed: int | None) -> dict[str, object]:
    return {"description": description, "submitted": submitted, "completed": completed}


def test_round_time_is_the_median_round_of_the_loop() -> None:
    jobs = [_job("load", 0, 900)]
    starts = [1_000, 4_000, 6_000, 8_000]  # the first round also warms a cache up (3 s)
    for k, s in enumerate(starts, 1):
        jobs += [
            _job(f"pagerank iteration {k}/4", s, s + 900),
            _job(f"pagerank iteration {k}/4", s + 1000, s + 1900),
        ]
    assert iterations(jobs) == 4
    assert round_ms(jobs) == 2_000
    jobs[3]["completed"] = None  # a job of the loop without its time: no measure
    assert round_ms(jobs) == 0.0
    assert round_ms([_job("load", 0, 10), _job("save", 10, 20)]) == 0.0


def test_run_features_keep_the_round_time_and_old_json_still_loads() -> None:
    app = {"input_bytes": 1, "num_tasks": 1, "start_time_ms": 0, "duration_ms": 20_000}
    jobs = [_job(f"epoch {k}", 1_000 * k, 1_000 * k + 700) for k in range(1, 6)]
    f = run_features(app, {}, [], [], first_job_ms=1_000, jobs=jobs)
    assert f.values["iterations"] == 5
    assert f.values["round_ms"] == 1_000
    assert RunFeatures.from_json(f.to_json()).vector()[ROUND] == 1_000
    plain = run_features(app, {}, [], [], jobs=[_job("load", 0, 10)])
    assert "round_ms" not in plain.values and plain.vector()[ROUND] == 0.0
    old = f.to_json()
    del old["values"]["round_ms"]  # stored before the round time was kept
    assert RunFeatures.from_json(old).vector()[ROUND] == 0.0
    stored = f.vector()[:ROUND]  # a vector stored before the feature was appended
    assert padded(stored) == [*stored, 0.0]


def test_the_next_run_at_a_size_asked_for_uses_the_prior_that_served(timeline_on: None) -> None:
    import json

    from sparkscope.advisor.predict.nextrun import at_size, basis

    X = _runs([10])

    def stored_basis() -> dict[str, object]:
        residuals = [0.05, -0.05] * 5
        return json.loads(json.dumps(basis(X, _duration(X), "work_line", residuals, 0.8, 5)))

    stored = stored_basis()
    assert rounds_prior.TERM in stored["line"]
    # 10 rounds at twice the input: by default a round costs what the training run's did.
    assert at_size(stored, input_bytes=8e8)["expected_ms"] == pytest.approx(
        3_000 + 5_000 + 2_000 * 10, rel=1e-6
    )
    with prediction_options(rounds_timeline="one", rounds_timeline_sized=True):
        sized = stored_basis()
    # sized: each round a pass over twice the data
    assert at_size(sized, input_bytes=8e8)["expected_ms"] == pytest.approx(
        3_000 + 5_000 + 2_000 * 10 * 2, rel=1e-6
    )


def test_by_default_a_larger_second_run_is_predicted_at_the_first_runs_round_cost(
    timeline_on: None,
) -> None:
    # The first run: 10 rounds of 2 s at 4e8 bytes. The second reads twice as much in 20 rounds
    # whose cost, as in real loops dominated by per-job overhead, did not grow.
    X = _runs([10, 20], sizes=[4e8, 8e8])
    X[:, ROUND] = 2_000
    y = X[:, STARTUP] + 5_000 + 2_000 * X[:, ITERS]
    assert _predict(X, y).expected == pytest.approx(y[-1], rel=1e-6)
    with prediction_options(rounds_timeline="one", rounds_timeline_sized=True):
        sized = _predict(X, y).expected
    assert sized == pytest.approx(3_000 + 5_000 + 2_000 * 20 * 2, rel=1e-6)
