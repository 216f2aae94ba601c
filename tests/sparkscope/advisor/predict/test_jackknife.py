"""The key's own leave-one-out residuals in an interval (``Options.jackknife``, a measured form):
computed from the training runs, used before or after the server's other keys' residuals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparkscope.advisor.predict import jackknife, rolling
from sparkscope.advisor.predict.features import NUMERIC
from tests.support.prediction import prediction_options

IB, CORES = NUMERIC.index("input_bytes"), NUMERIC.index("cores")


def rows(inputs: list[float]) -> np.ndarray:
    X = np.zeros((len(inputs), len(NUMERIC)))
    X[:, IB] = inputs
    X[:, CORES] = 2
    return X


def test_each_training_run_is_predicted_from_the_others() -> None:
    X, y = rows([1e9, 1e9, 1e9]), np.array([100.0, 110.0, 121.0])
    # The last run of the others: run 0 from (110, 121) -> 121; runs 1 and 2 from ... -> 121, 110.
    got = jackknife.residuals("last_run", X, y)
    assert got == pytest.approx([math.log(100 / 121), math.log(110 / 121), math.log(121 / 110)])
    # Models fitted across keys have none; one run has none.
    assert jackknife.residuals("class_gbdt", X, y) == []
    assert jackknife.residuals("last_run", X[:1], y[:1]) == []


def test_a_run_left_out_beyond_the_others_counts_for_its_distance() -> None:
    # Durations exactly linear in the input: the I/O line misses next to nothing, wherever it is
    # left out (its fit is regularised a little).
    sizes = [1e9, 2e9, 3e9, 4e9, 5e9]
    X, y = rows(sizes), np.array([1000.0 + s / 1e7 for s in sizes])
    assert max(abs(r) for r in jackknife.residuals("io_line", X, y)) < 0.01
    # A convex series: the runs left out at either end, which the others extrapolate to, are
    # missed the most; each is divided by its difficulty (> 1 beyond the others' range), so it
    # counts for less than its miss, and a run inside the range for about its miss.
    y = np.array([1000.0 + (s / 1e8) ** 1.5 for s in sizes])
    with prediction_options(normalise=False):
        raw = jackknife.residuals("io_line", X, y)
    scaled = jackknife.residuals("io_line", X, y)
    inner = max(abs(r) for r in raw[1:-1])
    assert abs(raw[0]) > inner and abs(raw[-1]) > inner
    assert abs(scaled[0]) < 0.7 * abs(raw[0]) and abs(scaled[-1]) < 0.8 * abs(raw[-1])
    assert scaled[2] == pytest.approx(raw[2], rel=0.2)


def _interval(times: list[float], pooled: list[float], **opts: object) -> tuple[float, float]:
    """The interval of the run after ``times`` (all the same size), with ``pooled`` borrowed."""
    X = rows([1e9] * (len(times) + 1))
    y = np.array([*times, times[-1]])
    ok = np.ones(len(y), dtype=bool)
    t = np.arange(len(y), dtype=float) * 86_400_000
    points: list[rolling.PredictedRun | None] = [None] * len(y)
    with prediction_options(**opts):
        for i in range(1, len(y)):
            points[i] = rolling.predict_run(X, y, ok, t, i, points, 0.8, {"": pooled})
    last = points[-1]
    assert last is not None and last.low is not None and last.high is not None
    return last.low / last.expected, last.high / last.expected  # type: ignore[operator]


def test_a_steady_key_no_longer_borrows_a_noisy_keys_spread() -> None:
    steady = [600_000.0 * (1 + 0.01 * ((-1) ** i)) for i in range(7)]  # +-1% run to run
    noisy = [0.4, -0.35, 0.3, -0.45, 0.5, -0.3, 0.38, -0.42, 0.33, -0.36]  # another key's misses
    lo, hi = _interval(steady, noisy, jackknife="")
    assert hi > 1.3  # borrowed: +-30% and more around a job that moves by 1%
    lo, hi = _interval(steady, noisy, jackknife="before")
    assert 1.0 < hi < 1.1 and 0.9 < lo < 1.0
    # After the pool: ten residuals to borrow are enough, its own are not read.
    assert _interval(steady, noisy, jackknife="after")[1] > 1.3


def test_a_new_key_on_a_fresh_server_gets_its_own_spread_not_the_floor() -> None:
    runs = [500_000.0, 650_000.0, 560_000.0]  # runs 30% apart, nothing else on the server
    # Few residuals read as the largest miss (with Student's t, more residuals can narrow it).
    lo, hi = _interval(runs, [], jackknife="", small_sample="")
    # Without: the one or two misses its own predictions made so far.
    lo_j, hi_j = _interval(runs, [], jackknife="before", small_sample="")
    assert hi_j >= hi and lo_j <= lo
    assert hi_j > 1.1 and lo_j < 0.9  # the spread its runs show, far from a +-2% floor
    # Nothing else on the server: after the pool is the same as before it.
    after = _interval(runs, [], jackknife="after", small_sample="")
    assert after == pytest.approx((lo_j, hi_j))


def test_the_first_prediction_on_an_empty_server_claims_no_interval() -> None:
    X = rows([1e9, 1e9, 1e9])
    y = np.array([500_000.0, 650_000.0, 560_000.0])
    ok = np.ones(3, dtype=bool)
    t = np.arange(3, dtype=float) * 86_400_000
    points: list[rolling.PredictedRun | None] = [None] * 3
    first = rolling.predict_run(X, y, ok, t, 1, points, 0.8, {"": []})
    # One training run and nothing else on the server: no spread anywhere to read one from.
    assert first.expected == pytest.approx(500_000.0)
    assert first.low is None and first.high is None
    # With another key's misses on the server it borrows them, as before.
    borrowed = rolling.predict_run(X, y, ok, t, 1, points, 0.8, {"": [0.1, -0.2, 0.15] * 3})
    assert borrowed.low is not None and borrowed.high is not None
    assert borrowed.low < 500_000.0 < borrowed.high


def test_the_page_says_there_is_no_interval_yet() -> None:
    from sparkscope.models.predictions import RunPrediction
    from sparkscope.prediction.reads import prediction_line

    p = RunPrediction(
        expected_ms=500_000.0, low_ms=None, high_ms=None, level=0.8, duration_ms=650_000.0,
        regime="new_key", regime_ratio=None, regime_feature=None, n_train=1,
        verdict="insufficient_history",
    )  # fmt: skip
    line = prediction_line(p)
    assert line is not None and line.startswith("expected 8.3 min (no interval yet")
    assert "–" not in line.split(";")[0]
    p.low_ms, p.high_ms = 450_000.0, 560_000.0
    line = prediction_line(p)
    assert line is not None and line.startswith("expected 8.3 min (7.5 min–9.3 min, 80%; new")


def test_the_fleet_split_into_small_servers_keeps_every_run() -> None:
    from benchmarks.model_eval import servers
    from sparkscope.advisor.predict.backtest import Run

    runs = [Run(f"k{k}", 1000 * i + k, 60_000.0, True, [1.0]) for i in range(4) for k in (2, 0, 1)]
    assert servers(runs, 0) == [runs]
    split = servers(runs, 2)
    # Keys in the order they first ran (k0 at 0 ms, k1 at 1, k2 at 2): {k0, k1}, then {k2}.
    assert [sorted({r.key for r in s}) for s in split] == [["k0", "k1"], ["k2"]]
    assert sorted(map(id, (r for s in split for r in s))) == sorted(map(id, runs))
