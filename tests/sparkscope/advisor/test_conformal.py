"""Split-conformal intervals below the conformal rank: the largest miss, or Student's t."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparkscope.advisor import conformal


def coverage(n: int, form: str, trials: int = 6000, seed: int = 5) -> float:
    """How often the interval from ``n`` normal residuals holds the next one."""
    rng = np.random.default_rng(seed)
    draws = rng.normal(0.0, 0.2, (trials, n + 1))
    hits = 0
    for row in draws:
        lo, hi = conformal.interval(1000.0, list(row[:n]), 0.8, floor=0.0, small=form)
        hits += lo <= 1000.0 * math.exp(row[n]) <= hi
    return hits / trials


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_student_t_interval_covers_the_level_from_few_residuals(n: int) -> None:
    # n degrees of freedom (the mean is known to be zero): n - 1 would cover 84-92% here
    assert coverage(n, "student") == pytest.approx(0.8, abs=0.02)


def test_the_largest_miss_covers_n_over_n_plus_one() -> None:
    assert coverage(1, "") == pytest.approx(0.5, abs=0.02)
    assert coverage(3, "") == pytest.approx(0.75, abs=0.02)


def test_student_t_bound_of_one_residual() -> None:
    # t(1 dof) at 0.9 is tan(0.4 pi): 3.078 times the one residual, whatever its sign
    assert conformal.small_sample_bound([-0.1], 0.8, "student") == pytest.approx(
        0.1 * math.tan(0.4 * math.pi)
    )


def test_student3_leaves_four_residuals_to_the_largest_miss() -> None:
    res = [0.05, -0.1, 0.02, 0.03]
    assert conformal.small_sample_bound(res, 0.8, "student3") is None
    assert conformal.interval(100.0, res, 0.8, small="student3") == pytest.approx(
        (100 * math.exp(-0.1), 100 * math.exp(0.1))
    )
    assert conformal.small_sample_bound(res[:3], 0.8, "student3") is not None


def test_enough_residuals_keep_the_conformal_rank() -> None:
    res = list(np.random.default_rng(2).normal(0, 0.1, 40))
    assert conformal.interval(100.0, res, 0.8, small="student") == conformal.interval(
        100.0, res, 0.8
    )
    assert conformal.small_sample_bound([], 0.8, "student") is None


def test_a_served_prediction_from_one_residual_is_three_times_its_miss_wide() -> None:
    from sparkscope.advisor.predict import rolling
    from sparkscope.advisor.predict.features import NUMERIC
    from tests.support.prediction import prediction_options

    X = np.zeros((3, len(NUMERIC)))
    X[:, NUMERIC.index("input_bytes")] = 1e9
    X[:, NUMERIC.index("cores")] = 2
    y = np.array([500_000.0, 650_000.0, 600_000.0])
    ok, t = np.ones(3, dtype=bool), np.arange(3, dtype=float) * 86_400_000
    widths = {}
    for form in ("", "student"):
        points: list[rolling.PredictedRun | None] = [None] * 3
        with prediction_options(small_sample=form):
            for i in (1, 2):
                points[i] = rolling.predict_run(X, y, ok, t, i, points, 0.8, {"": []})
        last = points[2]
        assert last is not None and last.high is not None and last.expected
        widths[form] = math.log(last.high / last.expected)
    # the one miss so far (the second run, 30% over the first), on an otherwise empty server
    assert widths[""] == pytest.approx(math.log(650 / 500), rel=0.05)
    assert widths["student"] / widths[""] == pytest.approx(math.tan(0.4 * math.pi), rel=1e-6)
