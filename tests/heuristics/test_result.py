"""Thresholds, results and helpers of heuristics.result and heuristics.stats."""

from __future__ import annotations

import json
import math

import pytest

from heuristics.result import (
    Details,
    HeuristicResult,
    Impact,
    Severity,
    app_severity,
    cost_text,
    make_result,
    rank_key,
)
from heuristics.stats import (
    TaskCurve,
    approximate_task_values,
    fmt_bytes,
    fmt_ms,
    quantile_value,
)
from heuristics.thresholds import DESCENDING, Thresholds
from tests.heuristics.builders import curve, make_distribution

ASC = Thresholds(2, 4, 8, 16)
DESC = Thresholds(0.5, 0.4, 0.3, 0.1, DESCENDING)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.99, Severity.NONE),
        (2, Severity.LOW),
        (3.99, Severity.LOW),
        (4, Severity.MODERATE),
        (7.99, Severity.MODERATE),
        (8, Severity.SEVERE),
        (15.99, Severity.SEVERE),
        (16, Severity.CRITICAL),
        (math.inf, Severity.CRITICAL),
        (None, Severity.NONE),
        (math.nan, Severity.NONE),
    ],
)
def test_ascending_severity(value: float | None, expected: Severity) -> None:
    assert ASC.severity_of(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.51, Severity.NONE),
        (0.5, Severity.LOW),
        (0.41, Severity.LOW),
        (0.4, Severity.MODERATE),
        (0.3, Severity.SEVERE),
        (0.11, Severity.SEVERE),
        (0.1, Severity.CRITICAL),
        (0.0, Severity.CRITICAL),
    ],
)
def test_descending_severity(value: float, expected: Severity) -> None:
    assert DESC.severity_of(value) == expected


def _levels_walked(t: Thresholds, value: float | None) -> Severity:
    """severity_of as the four comparisons from the critical end down (its definition)."""
    if value is None or value != value:
        return Severity.NONE
    for severity, level in zip(
        (Severity.CRITICAL, Severity.SEVERE, Severity.MODERATE, Severity.LOW),
        (t.critical, t.severe, t.moderate, t.low),
        strict=True,
    ):
        if (value >= level) if t.direction == "ascending" else (value <= level):
            return severity
    return Severity.NONE


def test_severity_is_the_highest_level_reached() -> None:
    """The bisect over the levels gives what the comparisons give: equal levels, zeros of
    either sign, infinities, ints and bools, both directions, copies of a threshold."""
    import copy
    import dataclasses
    import pickle
    import random

    rng = random.Random(7)
    special = [0.0, -0.0, 1.0, 2.0, 5, 0, -3, math.inf, -math.inf]
    for _ in range(20_000):
        levels = sorted(
            rng.choice([*special, rng.uniform(-10, 10), rng.randint(-5, 5)]) for _ in range(4)
        )
        direction = rng.choice(["ascending", DESCENDING])
        if direction == DESCENDING:
            levels.reverse()
        t = Thresholds(*levels, direction)
        t = rng.choice([t, pickle.loads(pickle.dumps(t)), dataclasses.replace(t), copy.copy(t)])
        for value in (*levels, *special, None, math.nan, True, rng.uniform(-11, 11)):
            assert t.severity_of(value) is _levels_walked(t, value), (t, value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((2, 1, 8, 16), "moderate"),
        ((2, 4, 8, 7), "critical"),
        ((0.5, 0.6, 0.3, 0.1, DESCENDING), "moderate"),
        ((1, 2, 3, 4, "sideways"), "direction"),
        ((1, 2, math.nan, 4), "severe"),
    ],
)
def test_thresholds_reject_bad_order(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Thresholds(*args)


def test_equal_levels_are_allowed_and_ints_become_floats() -> None:
    t = Thresholds(1, 1, 2, 2)
    assert t.severity_of(1) == Severity.MODERATE
    assert t.to_dict() == {
        "low": 1.0,
        "moderate": 1.0,
        "severe": 2.0,
        "critical": 2.0,
        "direction": "ascending",
    }


def test_result_round_trips_through_json() -> None:
    result = HeuristicResult(
        name="x",
        severity=Severity.SEVERE,
        value=3.5,
        title="t",
        thresholds={"ratio": ASC.to_dict(), "min_ms": 10},
        details=Details(("stage", "ratio"), ((1, 2.5), (2, None))),
        advice="do this",
        impact=Impact(1.0, 0.5, "f"),
    )
    stored = json.loads(json.dumps(result.to_dict()))
    assert HeuristicResult.from_dict(stored) == result


def test_result_with_cap_settings_and_stages_round_trips() -> None:
    result = HeuristicResult(
        name="x",
        severity=Severity.LOW,
        value=3.5,
        title="t",
        thresholds={},
        details=None,
        advice="do this",
        impact=Impact(35.0, 0.01, "f"),
        pattern_severity=Severity.SEVERE,
        cost_cap=Severity.LOW,
        conf=(("spark.sql.shuffle.partitions", "400"), ("spark.executor.memory", "6g")),
        stages=((4, 0), (2, 1)),
    )
    stored = json.loads(json.dumps(result.to_dict(thresholds=False)))
    assert stored["conf"] == [
        ["spark.sql.shuffle.partitions", "400"],
        ["spark.executor.memory", "6g"],
    ]
    assert stored["stages"] == [[4, 0], [2, 1]]
    assert (stored["pattern_severity"], stored["cost_cap"]) == (3, 1)
    assert HeuristicResult.from_dict(stored) == result
    assert (
        result.cap_note() == "SEVERE pattern, capped to LOW by its cost of 35 s and 0.01 core-hours"
    )


def test_documents_stored_before_caps_settings_and_stages_still_read() -> None:
    old = {
        "name": "stage_skew",
        "severity": 2,
        "value": 4.5,
        "title": "Stage 3 max task 4.5× median",
        "details": None,
        "advice": "salt",
        "impact": {"wall_seconds": 10.0, "core_hours": 0.5, "formula": "f"},
    }
    result = HeuristicResult.from_dict(old, {"ratio": 1})
    assert result.pattern_severity == Severity.MODERATE
    assert result.cost_cap is None and not result.capped and result.cap_note() == ""
    assert result.conf == () and result.stages == ()
    assert result.thresholds == {"ratio": 1}


def test_a_result_built_without_a_pattern_severity_takes_its_severity() -> None:
    result = HeuristicResult("x", Severity.SEVERE, None, "", {}, None, "", None)
    assert result.pattern_severity == Severity.SEVERE and result.cost_cap is None


@pytest.mark.parametrize(
    ("pattern", "cap", "severity", "kept"),
    [
        (Severity.CRITICAL, Severity.LOW, Severity.LOW, True),
        (Severity.LOW, Severity.CRITICAL, Severity.LOW, True),
        (Severity.SEVERE, None, Severity.SEVERE, True),
        (Severity.MODERATE, Severity.NONE, Severity.NONE, False),
        (Severity.NONE, Severity.CRITICAL, Severity.NONE, False),
    ],
)
def test_outcome_rules(
    pattern: Severity, cap: Severity | None, severity: Severity, kept: bool
) -> None:
    outcome = make_result(
        severity=pattern,
        value=1.0,
        title="t",
        advice="fix",
        impact=Impact(1.0, None, "f"),
        conf=[("spark.a", 1)],  # type: ignore[list-item]
        stages=[(3, 0)],
    )
    result = outcome.to_result("h", {}, cap)
    assert result.severity == severity and result.pattern_severity == pattern
    assert result.cost_cap == (cap if pattern > Severity.NONE else None)
    # advice, settings (as strings), impact and stages only for a reported finding
    assert (result.advice, result.conf, result.stages, result.impact is not None) == (
        ("fix", (("spark.a", "1"),), ((3, 0),), True) if kept else ("", (), (), False)
    )


def test_rank_puts_the_finding_most_worth_fixing_first() -> None:
    def r(name: str, sev: Severity, pattern: Severity, wall: float | None) -> HeuristicResult:
        impact = None if wall is None else Impact(wall, None, "f")
        return HeuristicResult(name, sev, None, "", {}, None, "", impact, pattern_severity=pattern)

    results = [
        r("noise", Severity.LOW, Severity.LOW, 50.0),
        r("capped", Severity.LOW, Severity.CRITICAL, 3.0),
        r("cheap", Severity.LOW, Severity.CRITICAL, 0.5),
        r("config", Severity.MODERATE, Severity.MODERATE, None),
        r("none", Severity.NONE, Severity.NONE, None),
    ]
    ordered = [x.name for x in sorted(results, key=rank_key)]
    assert ordered == ["config", "capped", "cheap", "noise", "none"]


@pytest.mark.parametrize(
    ("impact", "text"),
    [
        (None, "unknown"),
        (Impact(None, None, "f"), "unknown"),
        (Impact(0.4, None, "f"), "400 ms"),
        (Impact(35.2, None, "f"), "35 s"),
        (Impact(5400.0, None, "f"), "1.5 h"),
        (Impact(None, 12.0, "f"), "12 core-hours"),
    ],
)
def test_cost_text(impact: Impact | None, text: str) -> None:
    assert cost_text(impact) == text


def test_infinite_values_are_stored_as_null() -> None:
    result = HeuristicResult(
        "x", Severity.LOW, math.inf, "t", {}, Details(("r",), ((math.inf,),)), "", None
    )
    stored = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert stored["value"] is None
    assert stored["details"]["rows"] == [[None]]


def test_app_severity_is_the_max() -> None:
    def r(sev: Severity) -> HeuristicResult:
        return HeuristicResult("x", sev, None, "", {}, None, "", None)

    assert app_severity([]) == Severity.NONE
    assert app_severity([r(Severity.LOW), r(Severity.SEVERE), r(Severity.NONE)]) == Severity.SEVERE


def test_quantile_interpolation_and_reconstruction() -> None:
    dist = make_distribution({"x": curve(0, 100, 1000)})
    assert quantile_value(dist, "x", 0.5) == 100
    assert quantile_value(dist, "x", 0.25) == pytest.approx(50)
    assert quantile_value(dist, "x", 1.0) == 1000
    assert quantile_value(dist, "missing", 0.5) is None
    values = approximate_task_values(dist, "x", 41)
    assert len(values) == 41 and values[0] == 0 and values[20] == 100 and values[-1] == 1000


def test_reconstruction_from_one_quantile_gives_every_task_its_value() -> None:
    from heuristics.appdata import TaskDistribution

    dist = TaskDistribution(quantiles=(0.5,), metrics={"x": (70.0,)})
    values = approximate_task_values(dist, "x", 5)
    assert values == [70.0] * 5
    curve_of = TaskCurve(dist, "x", 5)  # the reader for many tasks agrees
    assert [curve_of.value(i) for i in range(5)] == values
    assert curve_of.prefix_sum(5) == sum(values)


@pytest.mark.parametrize(
    ("ms", "text"), [(850, "850 ms"), (5100, "5.1 s"), (42_000, "42 s"), (192_000, "3.2 min")]
)
def test_fmt_ms(ms: float, text: str) -> None:
    assert fmt_ms(ms) == text


def test_fmt_bytes() -> None:
    assert fmt_bytes(512) == "512 B"
    assert fmt_bytes(3 * 1024**3) == "3.0 GiB"


def test_threshold_levels_are_the_severity_names_and_the_thresholds_fields() -> None:
    import dataclasses

    from heuristics.thresholds import LEVELS, Thresholds

    assert LEVELS == ("low", "moderate", "severe", "critical")
    fields = [f.name for f in dataclasses.fields(Thresholds) if f.name != "direction"]
    assert list(LEVELS) == fields
    assert [Severity[level.upper()] for level in LEVELS] == sorted(Severity)[1:]


@pytest.mark.parametrize("n", [2, 3, 20, 21, 64, 513, 2000, 100_003])
@pytest.mark.parametrize(
    "curve_values",
    [
        curve(0, 100, 1000),
        curve(5, 5, 5),
        tuple([0.0] * 15 + [7.0] * 6),
        tuple(float(i * i) for i in range(21)),
    ],
)
def test_task_curve_counts_and_sums_the_reconstructed_tasks(
    n: int, curve_values: tuple[float, ...]
) -> None:
    dist = make_distribution({"x": curve_values})
    values = approximate_task_values(dist, "x", n)
    tasks = TaskCurve(dist, "x", n)
    for i in {0, 1, n // 3, n // 2, n - 1}:
        assert tasks.value(i) == pytest.approx(values[i])
    for m in {values[0], values[n // 2], values[-1], values[-1] + 1, -1.0, 50.5}:
        assert tasks.count_below(m) == sum(1 for v in values if v < m)
    for c in {0, 1, n // 4, n // 2, n - 1, n}:
        assert tasks.prefix_sum(c) == pytest.approx(sum(values[:c]), rel=1e-12, abs=1e-9)
