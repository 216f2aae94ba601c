"""The slot line (the I/O line plus Ernest's bytes / slots term) and the F-test that makes it the
default: synthetic series with known answers, and the recorded executor-scaling corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sparkscope.advisor.predict import baselines, rolling
from sparkscope.advisor.predict.features import NUMERIC
from sparkscope.advisor.predict.selection import SWITCH_ALPHA
from sparkscope.cli.main import cli

IB, CORES, STARTUP = (NUMERIC.index(n) for n in ("input_bytes", "cores", "startup_ms"))
SCALING = Path(__file__).resolve().parents[4] / "demo" / "scaling-events"


def runs(inputs: list[float], slots: list[float], startup: list[float]) -> np.ndarray:
    X = np.zeros((len(inputs), len(NUMERIC)))
    X[:, IB], X[:, CORES], X[:, STARTUP] = inputs, slots, startup
    return X


def spread_series(n: int = 12, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """duration = start-up + 3 s + 8e-5 ms per byte read spread over the slots."""
    rng = np.random.default_rng(seed)
    inputs = list(rng.uniform(1e8, 4e8, n))
    slots = list(rng.choice([1.0, 2.0, 3.0, 4.0], n))
    startup = list(rng.uniform(4000, 6000, n))
    X = runs(inputs, slots, startup)
    return X, X[:, STARTUP] + 3000 + 8e-5 * X[:, IB] / X[:, CORES]


def test_slot_line_recovers_time_per_byte_spread_over_the_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    X, y = spread_series()
    # A run at 8 slots (never seen) and a larger input: the slot line extrapolates by 1/P.
    x = runs([5e8], [8.0], [5000.0])[0]
    truth = 5000 + 3000 + 8e-5 * 5e8 / 8
    io, slot, significant = baselines.lines(X, y, x, SWITCH_ALPHA)
    # The serving ridge shrinks the coefficients a little (a few percent this far out) ...
    assert slot == pytest.approx(truth, rel=0.05)
    # ... the I/O line, additive in the slots, is far off at 8 slots.
    assert abs(io / truth - 1) > 0.15
    assert significant
    # In the rolling origin a line with the per-slot term serves: the slot line, or the work line
    # (whose forward selection finds the same bytes-per-slot term, without the ridge's shrinkage).
    Xa = np.vstack([X, x])
    ya = np.append(y, truth)
    ok, t = np.ones(len(ya), dtype=bool), np.arange(len(ya), dtype=float)
    p = rolling.predict_run(Xa, ya, ok, t, len(ya) - 1, [None] * len(ya), 0.8)
    assert p.model in ("slot_line", "work_line") and p.expected == pytest.approx(truth, rel=0.05)
    assert p.predictions["slot_line"] == pytest.approx(truth, rel=0.05)
    # Without the ridge the line is exact: the form is right, the bias is the shrinkage.
    monkeypatch.setattr(baselines, "RIDGE", 0.0)
    assert baselines.lines(X, y, x)[1] == pytest.approx(truth, rel=1e-6)


def test_slots_that_do_not_change_the_time_keep_the_io_line() -> None:
    # duration = start-up + 2 s + 3e-5 ms per byte, whatever the slots, with 1% noise.
    rng = np.random.default_rng(8)
    n = 15
    X = runs(list(rng.uniform(1e8, 4e8, n)), list(rng.choice([1.0, 2.0, 4.0], n)), [5000.0] * n)
    y = (5000 + 2000 + 3e-5 * X[:, IB]) * rng.normal(1, 0.01, n)
    x = runs([3e8], [8.0], [5000.0])[0]
    assert not baselines.lines(X, y, x, SWITCH_ALPHA)[2]
    ok, t = np.ones(n + 1, dtype=bool), np.arange(n + 1, dtype=float)
    p = rolling.predict_run(np.vstack([X, x]), np.append(y, 0.0), ok, t, n, [None] * (n + 1), 0.8)
    assert p.model == "io_line"
    assert p.expected == pytest.approx(5000 + 2000 + 3e-5 * 3e8, rel=0.03)


def test_one_slot_count_gives_no_evidence_and_the_same_prediction() -> None:
    X, y = spread_series()
    X[:, CORES] = 2.0
    y = X[:, STARTUP] + 3000 + 8e-5 * X[:, IB] / 2
    x = runs([3e8], [2.0], [5000.0])[0]
    io, slot, significant = baselines.lines(X, y, x, SWITCH_ALPHA)
    assert not significant
    assert slot == pytest.approx(io, rel=0.005)
    assert io == pytest.approx(5000 + 3000 + 4e-5 * 3e8, rel=0.01)


def test_scaling_corpus_backtest_beats_the_last_run(tmp_path: Path) -> None:
    # 36 real runs of three applications at 1-8 executors and two input sizes (README
    # "Predictions": measured 3.8% against the last run's 33%; the I/O line alone was 54%).
    env = {
        "SPARKSCOPE_DATABASE_URL": f"sqlite:///{tmp_path / 'scaling.db'}",
        "SPARKSCOPE_CONFIG": str(tmp_path / "none.yaml"),
    }
    (tmp_path / "none.yaml").write_text("predictions: {}\n")
    result = CliRunner().invoke(cli, ["fetch", "--url", str(SCALING)], env=env)
    assert result.exit_code == 0, result.output
    out = CliRunner().invoke(cli, ["backtest", "--json"], env=env)
    assert out.exit_code == 0, out.output
    overall = json.loads(out.output)["overall"]
    assert overall["n"] == 21
    # MAPE at most half the last run's (skill against it at least 50%), and under 10%.
    assert overall["skill_last"] >= 0.5
    assert overall["mape"] <= 0.10


def test_lines_extrapolated_below_zero_stop_at_the_floor() -> None:
    # Durations that fall as the input grows (and as the slots grow): a line extrapolated far
    # enough goes below zero; both lines stop at FLOOR times the fastest training run.
    inputs = [1e8 + 1e7 * i for i in range(10)]
    X = runs(inputs, [1.0, 2.0] * 5, [0.0] * 10)
    y = 30_000 - 1e-4 * X[:, IB] + 500 * X[:, CORES]
    x = runs([1e9], [1.0], [0.0])[0]
    io, slot, _significant = baselines.lines(X, y, x, SWITCH_ALPHA)
    assert io == slot == pytest.approx(baselines.FLOOR * float(y.min()))
