"""The registry's cost caps: a finding's severity capped by what its pattern costs (wall time,
core-hours), the caps configured shared and per heuristic, and a finding that opts out."""

from __future__ import annotations

import pytest

from heuristics.params import HeuristicsConfigError
from heuristics.registry import build_registry
from heuristics.result import Details, Impact, Outcome, Severity, make_result, no_data
from tests.heuristics.builders import FakeParams, fake_module, kitchen_sink_app, make_app

# (wall seconds, core-hours) -> the most severe level the default caps allow; None: no cap
CAP_CASES = [
    ((0.0, 0.0), Severity.LOW),
    ((35.0, None), Severity.LOW),
    ((299.9, 1.99), Severity.LOW),
    ((300.0, None), Severity.MODERATE),
    ((None, 2.0), Severity.MODERATE),
    ((899.0, 7.9), Severity.MODERATE),
    ((900.0, 0.1), Severity.SEVERE),
    ((10.0, 8.0), Severity.SEVERE),
    ((3599.0, 31.9), Severity.SEVERE),
    ((3600.0, 0.0), Severity.CRITICAL),
    ((1.0, 32.0), Severity.CRITICAL),
    ((None, None), None),
    ((float("nan"), None), None),
    ((-5.0, None), Severity.LOW),  # a negative estimate costs nothing
]


@pytest.mark.parametrize(("cost", "cap"), CAP_CASES)
@pytest.mark.parametrize("pattern", list(Severity))
def test_registry_caps_the_pattern_by_its_cost(
    cost: tuple[float | None, float | None], cap: Severity | None, pattern: Severity
) -> None:
    def evaluate(app: object, params: FakeParams) -> Outcome:
        return make_result(
            severity=pattern, value=1.0, title="t", advice="fix", impact=Impact(*cost, "f")
        )

    registry = build_registry({}, heuristics=[fake_module("h", evaluate)])
    result = registry.run(make_app())[0]
    assert registry.run_stored(registry.enabled[0], make_app()) == result.to_dict(thresholds=False)
    expected = pattern if cap is None else min(pattern, cap)
    assert result.severity == expected
    assert result.pattern_severity == pattern
    assert result.cost_cap == (cap if pattern > Severity.NONE else None)
    assert result.capped == (cap is not None and cap < pattern)
    if result.capped:
        assert result.cap_note().startswith(
            f"{pattern.name} pattern, capped to {cap.name} by its cost of"
        )  # type: ignore[union-attr]
    else:
        assert result.cap_note() == ""


def test_caps_are_configured_shared_and_per_heuristic() -> None:
    def at(cost: float) -> object:
        def evaluate(app: object, params: FakeParams) -> Outcome:
            impact = Impact(cost, None, "f")
            return make_result(severity=Severity.CRITICAL, value=1.0, title="t", impact=impact)

        return evaluate

    modules = [fake_module("a", at(60.0)), fake_module("b", at(60.0)), fake_module("c", at(0.5))]
    registry = build_registry(
        {
            "cost_caps": {"wall_seconds": {"moderate": 30, "severe": 45, "critical": 50}},
            "b": {"cost_caps": {"wall_seconds": {"critical": 120}}},
            "c": {"cost_caps": {"wall_seconds": {"low": 1}}},
        },
        heuristics=modules,
    )
    by_name = {r.name: r for r in registry.run(make_app())}
    assert by_name["a"].severity == Severity.CRITICAL  # 60 s >= the shared critical 50 s
    assert by_name["b"].severity == Severity.SEVERE  # its own critical is 120 s
    assert by_name["c"].severity == Severity.NONE  # below its own low: not reported
    assert by_name["c"].pattern_severity == Severity.CRITICAL
    assert by_name["c"].impact is None and by_name["c"].advice == ""
    # the effective config restates every cap, and building from it gives the same registry
    again = build_registry(registry.effective_config(), heuristics=modules)
    assert again.fingerprint == registry.fingerprint
    assert again.effective_config()["b"]["cost_caps"]["wall_seconds"]["critical"] == 120.0  # type: ignore[index]


def test_a_finding_not_capped_by_cost_keeps_its_severity() -> None:
    def evaluate(app: object, params: FakeParams) -> Outcome:
        impact = Impact(1.0, 0.001, "f")
        return make_result(
            severity=Severity.SEVERE, value=1.0, title="t", impact=impact, cost_capped=False
        )

    result = build_registry({}, heuristics=[fake_module("h", evaluate)]).run(make_app())[0]
    assert (result.severity, result.cost_cap, result.impact) == (
        Severity.SEVERE,
        None,
        Impact(1.0, 0.001, "f"),
    )


def test_a_heuristic_cannot_take_the_cost_caps_name() -> None:
    module = fake_module("cost_caps", lambda app, params: no_data("x"))
    with pytest.raises(HeuristicsConfigError) as info:
        build_registry({}, heuristics=[module])
    assert info.value.path == "cost_caps"


def _full(severity: Severity, value: float) -> object:
    def evaluate(app: object, params: FakeParams) -> Outcome:
        return make_result(
            severity=severity,
            value=value,
            title="t",
            details=Details(("a", "b"), ((1, float("inf")), ("x", 2.5))),
            advice="fix",
            impact=Impact(400.0, 3.0, "f"),
            conf=[("spark.k", 4)],  # type: ignore[list-item]  # a value converted to text
            stages=[(3, 1), (2, 0)],
        )

    return evaluate


def _raises(app: object, params: FakeParams) -> Outcome:
    raise ValueError("broken")


def test_run_stored_is_the_stored_form_of_run_one() -> None:
    """What scoring stores (run_stored) is run_one's result without its thresholds, for
    findings at and above NONE, non-finite values, heuristics that raise or return no Outcome,
    and the built-ins on an application where each fires."""
    fakes = [
        fake_module("full", _full(Severity.SEVERE, 2.0)),
        fake_module("none", _full(Severity.NONE, float("nan"))),
        fake_module("raises", _raises),
        fake_module("wrong", lambda app, params: "not an outcome"),
    ]
    for registry, app in (
        (build_registry({}, heuristics=fakes), make_app()),
        (build_registry({}), kitchen_sink_app()),
    ):
        for entry in registry.enabled:
            stored = registry.run_stored(entry, app)
            assert stored == registry.run_one(entry, app).to_dict(thresholds=False), entry.name
