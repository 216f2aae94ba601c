"""build_registry, Registry.run, fingerprints, digests and the shipped YAML (the cost caps:
test_registry_cost_caps.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from heuristics.builtin.parallelism import stage_skew, task_granularity
from heuristics.params import HeuristicsConfigError
from heuristics.registry import build_registry, builtin_heuristics
from heuristics.result import (
    Details,
    HeuristicResult,
    Impact,
    Outcome,
    Severity,
    make_result,
    no_data,
)
from heuristics.thresholds import Thresholds
from tests.heuristics.builders import (
    FakeParams,
    copy_module,
    fake_module,
    kitchen_sink_app,
    make_app,
)

HEURISTICS_DIR = Path(__file__).resolve().parents[2] / "heuristics"
YAML_PATH = HEURISTICS_DIR.parent / "config" / "heuristics.yaml"


def test_shipped_yaml_holds_only_overrides() -> None:
    loaded = yaml.safe_load(YAML_PATH.read_text(encoding="utf-8")) or {}
    registry = build_registry(loaded)
    defaults = build_registry({})
    for name, section in loaded.items():
        for key, value in section.items():
            default = defaults.effective_config()[name][key]
            assert registry.effective_config()[name][key] != default or value != default, (
                f"{name}.{key} restates its default"
            )


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"no_such_heuristic": {}}, "no_such_heuristic"),
        ({"stage_skew": {"bogus": 1}}, "stage_skew.bogus"),
        (
            {"stage_skew": {"task_time_ratio": {"low": 2, "moderate": 1}}},
            "stage_skew.task_time_ratio.moderate",
        ),
        (
            {"stage_skew": {"task_time_ratio": {"critical": 3}}},
            "stage_skew.task_time_ratio.critical",
        ),
        ({"stage_skew": {"task_time_ratio": {"medium": 3}}}, "stage_skew.task_time_ratio.medium"),
        ({"stage_skew": {"task_time_ratio": {"low": "two"}}}, "stage_skew.task_time_ratio.low"),
        ({"stage_skew": {"task_time_ratio": 3}}, "stage_skew.task_time_ratio"),
        (
            {"stage_skew": {"task_time_ratio": {"direction": "descending"}}},
            "stage_skew.task_time_ratio.direction",
        ),
        ({"task_granularity": {"target_task_ms": "5 min"}}, "task_granularity.target_task_ms"),
        ({"task_granularity": {"target_task_ms": 1.5}}, "task_granularity.target_task_ms"),
        ({"task_granularity": {"target_task_ms": True}}, "task_granularity.target_task_ms"),
        # every parameter of the built-ins is a count, size, time or ratio: never negative
        ({"task_granularity": {"target_task_ms": -1}}, "task_granularity.target_task_ms"),
        ({"stage_skew": {"data_skew_bytes_ratio": -0.5}}, "stage_skew.data_skew_bytes_ratio"),
        ({"stage_skew": {"task_time_ratio": {"low": -1}}}, "stage_skew.task_time_ratio.low"),
        # removed size gates are unknown keys now
        ({"stage_skew": {"min_stage_duration_ms": 1}}, "stage_skew.min_stage_duration_ms"),
        # cost caps: shared and per heuristic, known keys, numbers >= 0, levels in order
        ({"cost_caps": 5}, "cost_caps"),
        ({"cost_caps": {"dollars": {"low": 1}}}, "cost_caps.dollars"),
        ({"cost_caps": {"wall_seconds": {"moderate": -1}}}, "cost_caps.wall_seconds.moderate"),
        (
            {"cost_caps": {"wall_seconds": {"severe": 100, "moderate": 200}}},
            "cost_caps.wall_seconds.severe",
        ),
        (
            {"cost_caps": {"core_hours": {"critical": float("nan")}}},
            "cost_caps.core_hours.critical",
        ),
        ({"cost_caps": {"core_hours": {"low": "1"}}}, "cost_caps.core_hours.low"),
        ({"cost_caps": {"core_hours": 3}}, "cost_caps.core_hours"),
        (
            {"stage_skew": {"cost_caps": {"wall_seconds": {"critical": 10}}}},
            "stage_skew.cost_caps.wall_seconds.critical",
        ),
        (
            {"stage_skew": {"cost_caps": {"core_hours": {"direction": "descending"}}}},
            "stage_skew.cost_caps.core_hours.direction",
        ),
        ({"stage_skew": {"data_skew_bytes_ratio": "2"}}, "stage_skew.data_skew_bytes_ratio"),
        ({"stage_skew": {"enabled": "yes"}}, "stage_skew.enabled"),
        ({"stage_skew": ["enabled"]}, "stage_skew"),
        (
            {"task_granularity": {"tiny_median_task_ms": {"low": 10, "moderate": 20}}},
            "task_granularity.tiny_median_task_ms.moderate",
        ),
        # numbers a JSON document or the database cannot hold
        ({"task_granularity": {"target_task_ms": 2**63}}, "task_granularity.target_task_ms"),
        (
            {"task_granularity": {"target_task_ms": -(2**63) - 1}},
            "task_granularity.target_task_ms",
        ),
        (
            {"stage_skew": {"task_time_ratio": {"critical": 2**64}}},
            "stage_skew.task_time_ratio.critical",
        ),
        ({"stage_skew": {"data_skew_bytes_ratio": 10**400}}, "stage_skew.data_skew_bytes_ratio"),
        (
            {"stage_skew": {"data_skew_bytes_ratio": float("inf")}},
            "stage_skew.data_skew_bytes_ratio",
        ),
        (
            {"stage_skew": {"task_time_ratio": {"critical": float("inf")}}},
            "stage_skew.task_time_ratio.critical",
        ),
        (
            {"stage_skew": {"task_time_ratio": {"low": float("-inf")}}},
            "stage_skew.task_time_ratio.low",
        ),
        (
            {"stage_skew": {"data_skew_bytes_ratio": float("nan")}},
            "stage_skew.data_skew_bytes_ratio",
        ),
    ],
)
def test_bad_config_names_the_key_path(config: dict, path: str) -> None:
    with pytest.raises(HeuristicsConfigError) as info:
        build_registry(config)
    assert info.value.path == path
    assert path in str(info.value)


def test_largest_64_bit_values_are_accepted_and_stored() -> None:
    import orjson

    registry = build_registry(
        {
            "task_granularity": {"target_task_ms": 2**63 - 1},
            "stage_skew": {"task_time_ratio": {"critical": 2**63 - 1}},
        }
    )
    assert registry.params("task_granularity").target_task_ms == 2**63 - 1
    orjson.dumps(registry.effective_config())  # the config row holds it
    assert stage_skew.NAME in registry.digests


def test_partial_config_overrides_only_given_keys() -> None:
    registry = build_registry(
        {"task_granularity": {"single_wave_share": {"low": 0.3}, "target_task_ms": 5}}
    )
    params = registry.params("task_granularity")
    assert params.single_wave_share == Thresholds(0.3, 0.5, 0.75, 0.9)
    assert params.target_task_ms == 5
    assert params.tiny_median_task_ms == task_granularity.Params().tiny_median_task_ms
    # an int given for a float param is accepted as a float
    assert (
        build_registry({"stage_skew": {"data_skew_bytes_ratio": 3}})
        .params("stage_skew")
        .data_skew_bytes_ratio
        == 3.0
    )


def test_disabled_heuristic_does_not_run() -> None:
    registry = build_registry({"config": {"enabled": False}})
    assert "config" not in registry.names
    results = registry.run(make_app())
    assert "config" not in {r.name for r in results}
    assert len(results) == len(builtin_heuristics()) - 1


def test_fingerprint_is_stable_and_tracks_thresholds() -> None:
    base = build_registry({})
    assert base.fingerprint == build_registry({}).fingerprint
    assert len(base.fingerprint) == 64 and int(base.fingerprint, 16) >= 0
    same = build_registry({"stage_skew": {"task_time_ratio": {"low": 2.0}}})
    assert same.fingerprint == base.fingerprint
    changed = build_registry({"stage_skew": {"task_time_ratio": {"moderate": 5}}})
    assert changed.fingerprint != base.fingerprint
    disabled = build_registry({"stage_skew": {"enabled": False}})
    assert disabled.fingerprint != base.fingerprint


def test_fingerprint_and_digests_track_each_heuristic_version() -> None:
    base = build_registry({})
    bumped_module = copy_module(stage_skew, VERSION=stage_skew.VERSION + 1)
    others = [h for h in builtin_heuristics() if h.name != "stage_skew"]
    bumped = build_registry({}, heuristics=[*others, bumped_module])
    assert bumped.fingerprint != base.fingerprint
    changed = {n for n in base.digests if base.digests[n] != bumped.digests[n]}
    assert changed == {"stage_skew"}
    # a param edit moves only that heuristic's digest too
    edited = build_registry({"disk_spill": {"disk_throughput_bytes_per_s": 1}})
    assert {n for n in base.digests if base.digests[n] != edited.digests[n]} == {"disk_spill"}
    # so does a cost cap of that heuristic; a shared cap moves every digest
    capped = build_registry({"disk_spill": {"cost_caps": {"wall_seconds": {"moderate": 60}}}})
    assert {n for n in base.digests if base.digests[n] != capped.digests[n]} == {"disk_spill"}
    shared = build_registry({"cost_caps": {"core_hours": {"moderate": 1}}})
    assert all(base.digests[n] != shared.digests[n] for n in base.digests)
    assert shared.fingerprint != base.fingerprint


def test_registry_fills_name_thresholds_and_severity_rules() -> None:
    impact = Impact(None, None, "cost unknown: no cap")

    def at(severity: Severity) -> object:
        def evaluate(app: object, params: FakeParams) -> Outcome:
            return make_result(
                severity=severity,
                value=params.ratio.low,
                title="t",
                details=Details(("a",), ((1,),)),
                advice="do this",
                impact=impact,
            )

        return evaluate

    modules = [fake_module(f"h{int(s)}", at(s)) for s in Severity]
    registry = build_registry({"h2": {"ratio": {"low": 1.5}}}, heuristics=modules)
    results = {r.name: r for r in registry.run(make_app())}
    assert set(results) == {"h0", "h1", "h2", "h3", "h4"}
    for severity in Severity:
        result = results[f"h{int(severity)}"]
        assert result.severity == severity
        assert result.thresholds == {"ratio": Thresholds(1, 2, 3, 4).to_dict()} or (
            severity == Severity.MODERATE and result.thresholds["ratio"]["low"] == 1.5  # type: ignore[index]
        )
        assert result.advice == ("do this" if severity > Severity.NONE else "")
        assert result.impact == (impact if severity > Severity.NONE else None)
    assert results["h2"].value == 1.5


def test_raising_heuristic_becomes_internal_error() -> None:
    def boom(app: object, params: object) -> Outcome:
        raise ZeroDivisionError("division by zero")

    def fine(app: object, params: object) -> Outcome:
        return no_data("nothing")

    def wrong(app: object, params: object) -> object:
        return "not an outcome"

    def no_such_severity(app: object, params: object) -> Outcome:
        return make_result(severity=7, value=1.0, title="t")  # type: ignore[arg-type]

    modules = [fake_module(f.__name__, f) for f in (boom, fine, wrong, no_such_severity)]
    results = build_registry({}, heuristics=modules).run(make_app())
    assert [r.name for r in results] == ["boom", "fine", "wrong", "no_such_severity"]
    assert results[0].severity == Severity.NONE
    assert results[0].title.startswith("internal error: ZeroDivisionError")
    assert results[0].thresholds == {"ratio": Thresholds(1, 2, 3, 4).to_dict()}
    assert results[1].title == "nothing"
    assert results[2].title == "internal error: TypeError: evaluate returned str, not Outcome"
    assert results[3].severity == Severity.NONE
    assert results[3].title.startswith("internal error: ValueError: 7 is not a valid Severity")


def test_run_on_empty_app_gives_none_everywhere() -> None:
    results = build_registry({}).run(make_app(executors=()))
    assert all(r.severity == Severity.NONE for r in results)
    assert not any(r.title.startswith("internal error") for r in results)


def test_describe_has_docs_and_params() -> None:
    described = build_registry(
        {
            "stage_skew": {
                "data_skew_bytes_ratio": 3,
                "cost_caps": {"wall_seconds": {"critical": 7200}},
            }
        }
    ).describe()
    assert [d["name"] for d in described] == [h.name for h in builtin_heuristics()]
    skew = next(d for d in described if d["name"] == "stage_skew")
    assert skew["version"] == stage_skew.VERSION
    assert "data skew" in skew["param_docs"]["data_skew_bytes_ratio"]  # type: ignore[index]
    assert skew["title"] == "Stage skew"
    assert "straggler" in str(skew["doc"])
    assert skew["params"]["data_skew_bytes_ratio"] == 3  # type: ignore[index]
    # the cost caps in force are listed with the params, as the help page shows them
    wall = skew["params"]["cost_caps.wall_seconds"]  # type: ignore[index]
    assert wall == {
        "low": 0.0,
        "moderate": 300.0,
        "severe": 900.0,
        "critical": 7200.0,
        "direction": "ascending",
    }
    assert "wall-time" in skew["param_docs"]["cost_caps.wall_seconds"]  # type: ignore[index]
    assert skew["cost_caps"]["core_hours"]["moderate"] == 2.0  # type: ignore[index]
    for d in described:
        assert len(str(d["doc"])) > 200, d["name"]


def test_every_heuristic_fires_on_a_bad_app_and_results_store_as_json() -> None:
    import json

    results = build_registry({}).run(kitchen_sink_app())  # type: ignore[arg-type]
    by_name = {r.name: r for r in results}
    assert set(by_name) == {h.name for h in builtin_heuristics()}
    for result in results:
        assert not result.title.startswith("internal error"), result.title
        assert result.severity > Severity.NONE, result.name
        assert result.impact is not None and result.impact.formula
        stored = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        assert HeuristicResult.from_dict(stored).to_dict() == stored
        assert result.advice
