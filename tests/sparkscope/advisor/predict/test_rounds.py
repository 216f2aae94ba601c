"""The rounds of an iterative application: its work grows with the iteration count, so a run with
more rounds than any earlier one is predicted by the per-round cost the key's runs show.

The constructed keys have a known answer: duration = start-up + fixed + rounds x per-round cost,
the input the same on every run (the rounds are what varies, as for a PageRank whose ``--iters``
argument changes).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sparkscope.advisor.predict import candidates, rolling, workline
from sparkscope.advisor.predict.features import NUMERIC
from sparkscope.advisor.predict.regimes import classify

IB, CORES, STARTUP, ITERS, ARG, JOBS = (
    NUMERIC.index(n) for n in ("input_bytes", "cores", "startup_ms", "iterations", "arg_0", "jobs")
)


def _runs(rounds: list[float], size: float = 4e8) -> np.ndarray:
    X = np.zeros((len(rounds), len(NUMERIC)))
    X[:, IB] = size
    X[:, CORES] = 4
    X[:, STARTUP] = 3_000
    X[:, ITERS] = X[:, ARG] = rounds
    X[:, JOBS] = [2 + r for r in rounds]
    return X


def _duration(X: np.ndarray) -> np.ndarray:
    """start-up + 5 s + 2 s per round."""
    return X[:, STARTUP] + 5_000 + 2_000 * X[:, ITERS]


def _predict(rounds: list[float]) -> rolling.PredictedRun:
    X = _runs(rounds)
    y = _duration(X)
    n = len(y)
    ok, t = np.ones(n, dtype=bool), np.arange(n, dtype=float) * 86_400_000
    return rolling.predict_run(X, y, ok, t, n - 1, [None] * n, 0.8, min_history=3)


def test_runs_at_10_20_30_rounds_predict_60_rounds_on_the_per_round_cost() -> None:
    p = _predict([10, 20, 30, 60])
    truth = 3_000 + 5_000 + 2_000 * 60
    assert p.model == "work_line"
    assert p.expected == pytest.approx(truth, rel=0.01)
    assert (p.regime.kind, p.regime.feature, p.regime.side) == (
        "extrapolation",
        "iterations",
        "above",
    )
    assert p.regime.ratio == pytest.approx(2.0)
    assert p.regime.describe() == "extrapolated: iterations 2x the largest seen"
    # The median of the three runs (what serves without the rounds' term) is far off.
    assert abs(p.predictions["median_5"] / truth - 1) > 0.5


def test_two_runs_with_different_rounds_give_the_per_round_line() -> None:
    X = _runs([4, 8])
    line = workline.fit(X, _duration(X), rounds="prior")
    assert line.terms == ["iteration_size"]
    x = _runs([12])
    assert float(line.at(x)[0]) == pytest.approx(float(_duration(x)[0]), rel=1e-6)
    # Without the rounds' prior two runs on the same slots get the median work.
    assert workline.fit(X, _duration(X), rounds="").median_work == pytest.approx(17_000)


def test_the_rounds_enter_first_among_correlated_terms() -> None:
    # The jobs grow with the rounds as well (2 + rounds): with the rounds first, the line is
    # the per-round cost, whichever of the two columns the selection would have met first.
    rng = np.random.default_rng(3)
    rounds = [float(r) for r in rng.integers(3, 9, 8)] + [3.0, 8.0]
    X = _runs(rounds)
    y = _duration(X) * rng.normal(1, 0.005, len(rounds))
    line = workline.fit(X, y, rounds="first")
    assert line.terms[0] in ("iterations", "iteration_size")
    x = _runs([16])
    assert float(line.at(x)[0]) == pytest.approx(float(_duration(x)[0]), rel=0.03)
    assert classify(X, x[0], len(rounds), 5).ratio == pytest.approx(2.0)


def test_a_loop_whose_rounds_do_not_vary_gets_no_rounds_term() -> None:
    X = _runs([6, 6, 6, 6, 6])
    X[:, IB] = [1e8, 2e8, 3e8, 4e8, 5e8]
    y = X[:, STARTUP] + 1_000 + 2e-5 * X[:, IB]
    line = workline.fit(X, y, rounds="both")
    assert not {"iterations"} & set(line.terms)
    assert float(line.at(X[2:3])[0]) == pytest.approx(float(y[2]), rel=0.01)


def _beyond_rounds(drawn: list) -> tuple[float, float, int]:
    """(MAPE, coverage, runs) of the rolling origin over the runs furthest outside in rounds."""
    from sparkscope.advisor.predict.backtest import run_backtest, scored_runs

    results = run_backtest([r for runs, _law in drawn for r in runs], 0.8, False)
    beyond = [
        (y, p)
        for y, p, _f in scored_runs(results.values(), 5)
        if p.regime.feature == "iterations" and p.regime.side == "above"
    ]
    ape = [abs(p.expected - y) / y for y, p in beyond]
    covered = sum(p.low <= y <= p.high for y, p in beyond) / max(1, len(beyond))
    return sum(ape) / max(1, len(ape)), covered, len(beyond)


def test_synthetic_keys_whose_rounds_grow_are_predicted_beyond_the_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.synthetic_keys import iteration_fleet

    drawn = iteration_fleet(12, seed=5)
    for runs, _law in drawn:  # the kind's premise: later runs have more rounds than any before
        rounds = [r.vector[ITERS] for r in runs]
        assert max(rounds[len(rounds) // 2 :]) > max(rounds[: len(rounds) // 4])
    mape, covered, n = _beyond_rounds(drawn)
    print(f"\n{n} runs beyond the rounds seen: MAPE {mape:.3f}, coverage {covered:.2f}")
    assert n >= 30 and mape < 0.12
    assert abs(covered - 0.8) <= 0.15
    # Without the rounds' terms the same runs are predicted about as well on this draw (8.1%
    # against 8.3%, docs/dev/models.md): the terms' gain is on the keys' first runs and is
    # not asserted here.
    monkeypatch.setattr(candidates, "OPTIONS", dataclasses.replace(candidates.OPTIONS, rounds=""))
    mape_without, _c, n_without = _beyond_rounds(drawn)
    assert n_without == n and mape_without < 0.12
