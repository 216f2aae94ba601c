"""History calibration (NNLS) and sizing on constructed histories with known answers."""

from __future__ import annotations

import pytest

from sparkscope.advisor.whatif.calibrate import (
    conformal_halfwidth,
    fit_history,
    fit_overheads,
    identifiable_terms,
    interval_halfwidth,
    residual_band,
)
from sparkscope.advisor.whatif.prior import key_overheads_terms
from sparkscope.advisor.whatif.sizing import (
    MAX_SIZES,
    Prices,
    costs,
    parse_counts,
    parse_deadline,
    recommend,
)


def truth(p: float, s: float) -> float:
    return 5000 + 100_000 * s / p + 1000 * p + 2000 * s


def points(sizes: list[int], inputs: list[float]) -> list[dict[str, float]]:
    return [
        {"executors": p, "cores": 1, "input_bytes": s * 1e9, "duration_ms": truth(p, s)}
        for p in sizes
        for s in inputs
    ]


def test_nnls_recovers_a_known_model_and_predicts_unseen_sizes() -> None:
    model = fit_history(points([1, 2, 3, 4, 6, 8], [1.0, 2.0]))
    assert model is not None
    assert model.terms == ("const", "s/P", "P", "s")
    ref = model.ref_input / 1e9
    assert model.predict(5, 1.5e9) == pytest.approx(truth(5, 1.5), rel=1e-6)
    assert model.predict(12, 3e9) == pytest.approx(truth(12, 3.0), rel=1e-6)
    assert ref in (1.0, 2.0)
    assert max(abs(r) for r in model.residuals) < 1e-6


def test_identifiable_terms_follow_the_history() -> None:
    assert identifiable_terms([4, 4, 4], [1, 1, 1]) == ()
    assert identifiable_terms([2, 4, 4], [1, 1, 1]) == ("const", "s/P")
    assert identifiable_terms([2, 4, 8, 8], [1, 1, 1, 1]) == ("const", "s/P", "P")
    assert identifiable_terms([2, 4, 8, 2, 4], [1, 1, 1, 2, 2]) == ("const", "s/P", "P", "s")
    assert fit_history(points([4], [1.0, 2.0])) is None


def test_coefficients_are_never_negative() -> None:
    # Durations that fall with more executors faster than 1/P would need a negative term.
    pts = [
        {"executors": p, "cores": 1, "input_bytes": 1, "duration_ms": 1e6 / p**2}
        for p in (1, 2, 4, 8)
    ]
    model = fit_history(pts)
    assert model is not None and min(model.coef) >= 0


def test_band_comes_from_out_of_sample_residuals() -> None:
    assert residual_band([]) == (0.0, 0.0)
    assert residual_band([-0.1, 0.05, 0.2]) == (-0.1, 0.2)
    lo, hi = residual_band([i / 100 for i in range(-10, 11)])
    assert lo == pytest.approx(-0.08) and hi == pytest.approx(0.08)


def test_conformal_half_width_uses_the_finite_sample_rank() -> None:
    # n = 9: k = ceil(10 * 0.8) = 8, the 8th smallest |r|.
    res = [0.01, -0.02, 0.03, -0.04, 0.05, -0.06, 0.07, -0.08, 0.09]
    assert conformal_halfwidth(res) == pytest.approx(0.08)
    # n = 3: k = ceil(3.2) = 4 > 3, too short for the rank.
    assert conformal_halfwidth([0.1, 0.2, -0.3]) is None
    assert conformal_halfwidth([]) is None
    # n = 19: k = 16.
    assert conformal_halfwidth([i / 100 for i in range(1, 20)]) == pytest.approx(0.16)


def test_interval_widens_to_the_simulation_spread_when_history_is_short() -> None:
    assert interval_halfwidth([]) == 0.0
    # Too short for the rank and no simulation residuals: the largest |r|.
    assert interval_halfwidth([0.1, -0.3]) == pytest.approx(0.3)
    # Short history: at least the bare simulation's spread.
    assert interval_halfwidth([0.1, -0.3], [0.5, -0.2]) == pytest.approx(0.5)
    nine = [0.01] * 9
    assert interval_halfwidth(nine, [0.4] * 9) == pytest.approx(0.4)
    # Ten or more residuals: the history's own conformal quantile, not widened.
    ten = [0.01] * 10
    assert interval_halfwidth(ten, [0.4] * 10) == pytest.approx(0.01)


def test_overheads_learn_contention_and_start_up_from_the_history() -> None:
    pts = [
        {
            "executors": n,
            "cores": 1,
            "input_bytes": 1e6,
            "work_ms": 1e4 * (1 + 0.1 * n),
            "startup_ms": 3000 + 1000 * n,
        }
        for n in (1, 2, 4, 8)
    ]
    ov = fit_overheads(pts)
    assert ov.task_scale(8, 1) == pytest.approx(1.8 / 1.1)
    assert ov.startup_ms(6) == pytest.approx(9000)
    single = fit_overheads(pts[:1])
    assert single.task_scale(8, 1) == 1.0 and single.startup_ms(8) is None
    # What the key gives the server's prior: relative contention c and start-up per executor.
    c, s = key_overheads_terms(ov)
    assert c == pytest.approx(0.1) and s == pytest.approx(1000.0)
    assert key_overheads_terms(single) == (None, None)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("90s", 90_000), ("30m", 1_800_000), ("2h", 7_200_000), ("45000ms", 45_000), ("1.5m", 90_000)],
)
def test_deadlines(text: str, ms: int) -> None:
    assert parse_deadline(text) == ms


@pytest.mark.parametrize("text", ["soon", "", "10", "-5s", "0s", "5 days"])
def test_bad_deadlines(text: str) -> None:
    with pytest.raises(ValueError):
        parse_deadline(text)


@pytest.mark.parametrize(
    "text", ["0", "-1", "abc", "1,,2", "2.5", ",".join(["1"] * 10_000), "100001"]
)
def test_bad_executor_lists(text: str) -> None:
    with pytest.raises(ValueError):
        parse_counts(text)


def test_executor_lists() -> None:
    assert parse_counts("8, 1,2,4,2") == [1, 2, 4, 8]
    assert len(parse_counts(",".join(str(i) for i in range(1, MAX_SIZES + 1)))) == MAX_SIZES


def curve() -> list[dict[str, float | None]]:
    # Time falls with executors but cost rises past 4.
    out = []
    for n, t in [(1, 100_000), (2, 52_000), (4, 27_000), (8, 16_000), (16, 12_000)]:
        core_h, _gb, money = costs(t, t * n, 1, 2.0, 1, 4.0, Prices(core_hour=0.05, gb_hour=0.01))
        out.append(
            {
                "executors": n,
                "predicted_ms": t,
                "high_ms": t * 1.1,
                "core_hours": core_h,
                "cost": money,
            }
        )
    return out


def test_cheapest_size_meeting_the_deadline() -> None:
    pts = curve()
    assert recommend(pts, 200_000)["executors"] == 4  # cheapest overall
    assert recommend(pts, 20_000)["executors"] == 8  # 4 would be late by its upper bound
    assert recommend(pts, 29_000)["executors"] == 8  # 4's prediction meets it, its bound not


def test_deadline_below_the_floor_recommends_nothing() -> None:
    assert recommend(curve(), 10_000) is None


def test_without_prices_core_hours_decide() -> None:
    pts = [dict(p, cost=None) for p in curve()]
    core, gb, money = costs(3_600_000, 4 * 3_600_000, 2, 8.0, 1, 4.0, Prices())
    assert money is None
    assert core == pytest.approx(5.0)  # 4 slot-hours + the driver's core
    assert gb == pytest.approx(2 * 8.0 + 4.0)  # 2 executors x 8 GB + driver 4 GB, 1 hour
    assert recommend(pts, 200_000)["executors"] in (2, 4)
    best = recommend(pts, 200_000)
    assert best["core_hours"] == min(p["core_hours"] for p in pts)
