"""Prediction models on synthetic series with known answers, intervals, verdicts and causes."""

from __future__ import annotations

import dataclasses
import math
from datetime import date

import numpy as np
import pytest

from sparkscope.advisor import conformal
from sparkscope.advisor.predict import (
    baselines,
    candidates,
    classaware,
    forecast,
    knn,
    rolling,
    verdict,
)
from sparkscope.advisor.predict.features import NUMERIC, RunFeatures, command_args, recurring_key
from sparkscope.advisor.predict.selection import choose

IB, CORES, PARTS, DAY, WD = (
    NUMERIC.index(n) for n in ("input_bytes", "cores", "shuffle_partitions", "arg_day", "weekday")
)


def matrix(inputs: list[float], **cols: list[float]) -> np.ndarray:
    X = np.zeros((len(inputs), len(NUMERIC)))
    X[:, IB] = inputs
    X[:, CORES] = 2
    for name, values in cols.items():
        X[:, NUMERIC.index(name)] = values
    return X


def test_linear_growth_size_scaled_and_knn_recover_the_line() -> None:
    inputs = [1e8 * (1 + 0.1 * i) for i in range(12)]
    y = np.array([7000 + 5e-5 * b for b in inputs])
    X = matrix(inputs)
    x = matrix([3e8])[0]
    assert baselines.size_scaled(X, y, x) == pytest.approx(7000 + 5e-5 * 3e8, rel=1e-6)
    assert knn.knn_local(X, y, x) == pytest.approx(7000 + 5e-5 * 3e8, rel=1e-6)
    assert baselines.last_run(X, y, x) == y[-1]
    assert baselines.median_of_last(X, y, x) == pytest.approx(np.median(y[-5:]))
    w = 0.7 ** np.arange(11, -1, -1)
    assert baselines.ewma(X, y, x) == pytest.approx(float(np.dot(w, y) / w.sum()))
    assert baselines.ewma(X, np.full(12, 9000.0), x) == pytest.approx(9000.0)


def test_io_line_adds_the_runs_own_start_up_to_a_line_on_its_io() -> None:
    # duration = start-up (varies per run) + 2e-5 ms/byte read + 1e-5 ms/byte written.
    rng = np.random.default_rng(3)
    inputs = rng.uniform(1e8, 3e8, 15)
    outputs = rng.uniform(1e7, 5e7, 15)
    startup = rng.uniform(5000, 9000, 15)
    X = matrix(list(inputs), output_bytes=list(outputs), startup_ms=list(startup))
    y = startup + 2e-5 * inputs + 1e-5 * outputs
    x = matrix([4e8], output_bytes=[6e7], startup_ms=[6000])[0]
    assert baselines.lines(X, y, x)[0] == pytest.approx(6000 + 2e-5 * 4e8 + 1e-5 * 6e7, rel=0.01)


def test_config_change_knn_prefers_runs_set_up_alike() -> None:
    # Two regimes by shuffle partitions: 64 partitions cost 3 s more at every size.
    inputs = [1e8 * (1 + 0.05 * i) for i in range(20)]
    parts = [8 if i % 2 else 64 for i in range(20)]
    y = np.array(
        [7000 + 2e-5 * b + (3000 if p == 64 else 0) for b, p in zip(inputs, parts, strict=True)]
    )
    X = matrix(inputs, shuffle_partitions=parts)
    x = matrix([2.1e8], shuffle_partitions=[64])[0]
    truth = 7000 + 2e-5 * 2.1e8 + 3000
    assert abs(knn.knn_local(X, y, x) - truth) < abs(baselines.size_scaled(X, y, x) - truth)
    assert knn.knn_local(X, y, x) == pytest.approx(truth, rel=0.1)


def test_step_change_last_run_and_forecast_follow_the_new_level() -> None:
    y = np.array([10_000.0] * 8 + [20_000.0] * 8)
    X = matrix([1e8] * 16, arg_day=list(range(20000, 20016)))
    t = np.arange(16) * 86_400_000.0
    f = forecast.candidates(X, y, t)
    assert f["last_run"] == 20_000
    assert f["median_5"] == 20_000


def test_weekday_pattern_forecast() -> None:
    # Four weeks of daily runs; weekends (Sat/Sun) take 30% less.
    days = list(range(20000, 20028))  # 1970-based day numbers
    wd = [(d + 3) % 7 for d in days]
    y = np.array([10_000.0 * (0.7 if w >= 5 else 1.0) for w in wd])
    X = matrix([1e8] * 28, arg_day=days, weekday=wd)
    t = np.array(days, dtype=float) * 86_400_000
    nxt_day, nxt_wd = forecast.next_position(X, t)
    assert nxt_day == 20028 and nxt_wd == (20028 + 3) % 7
    expected = 10_000.0 * (0.7 if nxt_wd >= 5 else 1.0)
    assert forecast.candidates(X, y, t)["trend"] == pytest.approx(expected, rel=0.02)


def test_conformal_interval_covers_at_its_level() -> None:
    rng = np.random.default_rng(1)
    res = list(rng.normal(0, 0.1, 3000))
    lo, hi = conformal.interval(1000.0, res, 0.8)
    new = rng.normal(0, 0.1, 4000)
    covered = np.mean((1000 * np.exp(new) >= lo) & (1000 * np.exp(new) <= hi))
    assert 0.75 < covered < 0.85
    assert conformal.interval(1000.0, [], 0.8) == pytest.approx(
        (1000 * math.exp(-0.02), 1000 * math.exp(0.02))
    )


def series(n: int, slow_last: bool = False, double_input_last: bool = False):
    rng = np.random.default_rng(7)
    inputs = [1e8 * (1 + 0.03 * i) for i in range(n)]
    if double_input_last:
        inputs[-1] *= 2
    y = np.array([7000 + 5e-5 * b for b in inputs]) * np.exp(rng.normal(0, 0.01, n))
    if slow_last:
        y[-1] = 7000 + 2 * 5e-5 * inputs[-1]
    return matrix(inputs), y, np.ones(n, bool), np.arange(n) * 86_400_000.0


def judge(X, y, ok, t) -> tuple[str, rolling.PredictedRun]:
    points: list[rolling.PredictedRun | None] = []
    for i in range(len(y)):
        points.append(rolling.predict_run(X, y, ok, t, i, points, 0.8))
    p = points[-1]
    assert p is not None
    v, _excess = verdict.verdict(y[-1], p.low, p.high, p.expected, len(y) - 1, 5, 0.1)
    return v, p


def features(stage_ms: int, nbytes: int) -> RunFeatures:
    return RunFeatures(
        values={"input_bytes": nbytes}, stage_work=[["stage 7 (scan)", nbytes, stage_ms]]
    )


def test_twice_slower_per_byte_is_a_regression_with_that_cause() -> None:
    v, _p = judge(*series(20, slow_last=True))
    assert v == "regression"
    earlier = [features(10_000, 2 * 10**8)] * 5
    causes = verdict.causes(features(20_000, 2 * 10**8), earlier)
    assert causes == ["stage slower per byte: stage 7 (scan) took 2.0x longer per byte read"]


def test_twice_the_input_with_proportional_time_is_not_a_regression() -> None:
    v, p = judge(*series(20, double_input_last=True))
    assert v == "normal", (v, p)


def test_insufficient_history_and_failed_runs_never_train() -> None:
    X, y, ok, t = series(8)
    ok[3] = False
    y[3] = 1.0  # a killed run: absurd duration must not move the line
    p = rolling.predict_run(X, y, ok, t, 7, [None] * 7, 0.8)
    assert p.n_train == 6
    assert p.predictions["size_scaled"] == pytest.approx(y[7], rel=0.05)
    assert verdict.verdict(y[2], 1, 2, 1, 2, 5, 0.1)[0] == "insufficient_history"


@pytest.mark.parametrize("kind", ["identical", "outlier", "long"])
def test_degenerate_histories_give_answers(kind: str) -> None:
    n = 3000 if kind == "long" else 12
    X, y, ok, t = series(n)
    if kind == "identical":
        X[:] = X[0]
        y[:] = 9000.0
    if kind == "outlier":
        y[5] = 1e9
    points: list[rolling.PredictedRun | None] = [None] * (n - 1)
    # No earlier point was scored here: other keys' residuals stand in for the key's own.
    p = rolling.predict_run(X, y, ok, t, n - 1, points, 0.8, {"": [0.02, -0.02] * 4})
    assert p.expected is not None and math.isfinite(p.expected) and p.expected > 0
    assert p.low is not None and p.high is not None and p.low <= p.expected <= p.high
    if kind == "identical":
        assert p.expected == pytest.approx(9000.0)
    assert rolling.next_forecast(X, y, ok, t, points + [p], 0.8) is not None


def test_recurring_key_and_command_args() -> None:
    assert recurring_key("etl 2026-10-05 (run 17)", [r"\d{4}-\d{2}-\d{2}", r"\(run \d+\)"]) == "etl"
    assert recurring_key("etl", []) == "etl"
    day, nums = command_args(
        "org.apache.spark.deploy.SparkSubmit --master local[2] --conf a=1 job.py --day 2026-10-18 --iterations 30"
    )
    # --day is read as days since 1970-01-01 (computed here by the standard library, not copied).
    assert day == (date(2026, 10, 18) - date(1970, 1, 1)).days and nums == [30.0]
    assert command_args(None) == (None, [])


def test_trend_stays_within_the_range_of_recent_values() -> None:
    # Runs seconds apart with a steep change: the slope per day is huge; the forecast is not.
    days = np.array([0.0, 0.00001, 0.00002, 0.00003, 0.00004])
    v = np.array([100.0, 200.0, 400.0, 800.0, 1600.0])
    out = forecast.trend_value(days, v, np.zeros(5), 1.0, 0)
    assert 50.0 <= out <= 3200.0


def test_predictions_config_section() -> None:
    from sparkscope.config.loader import parse_config
    from sparkscope.config.parsing import ConfigError

    predictions = parse_config(
        {"predictions": {"key_patterns": [r"\d{4}-\d{2}-\d{2}"], "min_history": 3, "level": 0.9}}
    ).predictions
    assert predictions.key_patterns == (r"\d{4}-\d{2}-\d{2}",) and predictions.min_history == 3
    assert (
        predictions.level == 0.9 and predictions.margin == 0.1 and predictions.class_aware is True
    )
    for bad in ({"level": 1.5}, {"key_patterns": ["("]}, {"min_history": 0}, {"nope": 1}):
        with pytest.raises(ConfigError, match="predictions"):
            parse_config({"predictions": bad})


def test_class_aware_learns_each_workload_class_across_keys() -> None:
    from sparkscope.advisor.predict import classaware

    # Two kinds of application: scans (1 ms per MB) and shuffle-heavy sorts (4 ms per MB read,
    # shuffling what they read). Many keys of each, sizes spread over two decades.
    rng = np.random.default_rng(5)
    n = 600
    sizes = 10 ** rng.uniform(8, 10, n)
    sort = rng.random(n) < 0.5
    X = matrix(list(sizes), shuffle_read_bytes=list(np.where(sort, sizes, 0.0)))
    y = np.where(sort, 4.0, 1.0) * sizes / 1e6 * np.exp(rng.normal(0, 0.02, n))
    model = classaware.fit(X, y)
    assert model is not None
    new = matrix([3e9, 3e9], shuffle_read_bytes=[0.0, 3e9])
    scan, heavy = model.predict(new)
    assert scan == pytest.approx(3000, rel=0.15)
    assert heavy == pytest.approx(12000, rel=0.15)
    # The classes come from the fitted arrays, as scikit-learn's own transform and predict give.
    sk = model.kmeans.predict(model.pca.transform(np.log1p(X[:, knn.DISTANCE_COLUMNS])))
    assert len(set(sk)) > 1 and (model.classes(X) == sk).all()
    assert classaware.fit(X[:10], y[:10]) is None  # too few runs: no model


def test_a_key_with_little_history_is_served_by_its_own_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    X, y, ok, t = series(3)
    p = rolling.predict_run(X, y, ok, t, 2, [None, None], 0.8, extra={"class_gbdt": 9999.0})
    assert p.n_train == 2 and p.model == "io_line" and p.predictions["class_gbdt"] == 9999.0
    assert p.expected == pytest.approx(p.predictions["io_line"]) and p.expected != 9999.0
    # The compared form: the class-aware model serves keys of fewer than four runs ...
    served = dataclasses.replace(candidates.OPTIONS, class_serves_new=True)
    monkeypatch.setattr(candidates, "OPTIONS", served)
    p = rolling.predict_run(X, y, ok, t, 2, [None, None], 0.8, extra={"class_gbdt": 9999.0})
    assert p.model == "class_gbdt" and p.expected == 9999.0
    # ... or, anchored, at the level of the key's own runs: it predicted them at half their
    # durations, so the run gets twice its value.
    monkeypatch.setattr(candidates, "OPTIONS", dataclasses.replace(served, anchored=True))
    assert rolling.anchor_runs(ok, 2) is not None and list(rolling.anchor_runs(ok, 2)) == [0, 1]
    half = [float(v) / 2 for v in y[:2]]
    p = rolling.predict_run(
        X, y, ok, t, 2, [None, None], 0.8, extra={"class_gbdt": 9999.0}, class_train=half
    )
    assert p.model == "class_anchored" and p.expected == pytest.approx(2 * 9999.0)
    p = rolling.predict_run(X, y, ok, t, 2, [None, None], 0.8)
    assert p.model == "io_line"


def test_the_anchor_is_the_geometric_mean_of_the_own_runs_ratios() -> None:
    # The class model predicted 10 s and 40 s for runs that took 20 s and 20 s: ratios 2 and
    # 0.5, geometric mean 1.
    assert classaware.anchored(30_000.0, np.array([20_000.0, 20_000.0]), [10_000.0, 40_000.0]) == (
        pytest.approx(30_000.0)
    )
    assert classaware.anchored(30_000.0, np.array([20_000.0]), [10_000.0]) == pytest.approx(
        60_000.0
    )
    assert classaware.anchored(None, np.array([1.0]), [1.0]) is None
    assert classaware.anchored(5.0, np.array([1.0, 2.0]), [1.0]) is None  # not one per run


def test_a_challenger_replaces_the_default_only_when_significant_among_all_candidates() -> None:
    # 10 scored runs; the challenger's absolute log errors are smaller by 0.01 +- 0.0105:
    # paired t = 0.01 / (0.0105 / sqrt(10)) ~ 3.0, beyond the 2.5% critical value for one
    # challenger (2.26) but not beyond the Bonferroni one for five (2.5% / 5: 3.69).
    noise = [0.01, -0.01, 0.012, -0.008, 0.011, -0.012, 0.009, -0.009, 0.01, -0.013]
    recent = [{"io_line": 0.05, "b": 0.05 - 0.01 - d} for d in noise]
    diffs = [0.01 + d for d in noise]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((v - mean) ** 2 for v in diffs) / (len(diffs) - 1))
    assert 2.3 < mean / (sd / math.sqrt(len(diffs))) < 3.6
    assert choose(["io_line", "b"], recent, "io_line") == "b"
    # Four more challengers, all worse: the same evidence no longer clears the corrected level.
    crowd = [{**e, "c": 0.06, "d": 0.07, "e": 0.08, "f": 0.09} for e in recent]
    assert choose(["io_line", "b", "c", "d", "e", "f"], crowd, "io_line") == "io_line"
    # A challenger that is clearly better still takes over.
    clear = [{**e, "b": 0.01} for e in crowd]
    assert choose(["io_line", "b", "c", "d", "e", "f"], clear, "io_line") == "b"
