"""build_registry, Registry.run, fingerprints and the shipped YAML."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import yaml

from heuristics import BUILTIN_MODULES, ConfigError, build_registry, stage_skew
from heuristics.base import HeuristicResult, Severity, Thresholds, no_data
from tests.heuristics.builders import make_app

YAML_PATH = Path(__file__).resolve().parents[2] / "config" / "heuristics.yaml"


def test_shipped_yaml_equals_defaults() -> None:
    loaded = yaml.safe_load(YAML_PATH.read_text(encoding="utf-8"))
    assert set(loaded) == {m.NAME for m in BUILTIN_MODULES}
    assert build_registry(loaded) == build_registry({})
    assert build_registry(loaded).fingerprint == build_registry(None).fingerprint


def test_shipped_yaml_lists_every_param() -> None:
    import dataclasses

    loaded = yaml.safe_load(YAML_PATH.read_text(encoding="utf-8"))
    for module in BUILTIN_MODULES:
        names = {f.name for f in dataclasses.fields(module.Params)}
        assert set(loaded[module.NAME]) == names | {"enabled"}, module.NAME


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
        ({"stage_skew": {"min_stage_duration_ms": "5 min"}}, "stage_skew.min_stage_duration_ms"),
        ({"stage_skew": {"min_stage_duration_ms": 1.5}}, "stage_skew.min_stage_duration_ms"),
        ({"stage_skew": {"min_stage_duration_ms": True}}, "stage_skew.min_stage_duration_ms"),
        ({"stage_skew": {"data_skew_bytes_ratio": "2"}}, "stage_skew.data_skew_bytes_ratio"),
        ({"stage_skew": {"enabled": "yes"}}, "stage_skew.enabled"),
        ({"stage_skew": ["enabled"]}, "stage_skew"),
        (
            {"executor_gc": {"gc_ratio_low": {"low": 0.001, "moderate": 0.002}}},
            "executor_gc.gc_ratio_low.moderate",
        ),
    ],
)
def test_bad_config_names_the_key_path(config: dict, path: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_registry(config)
    assert info.value.path == path
    assert path in str(info.value)


def test_partial_config_overrides_only_given_keys() -> None:
    registry = build_registry({"stage_skew": {"task_time_ratio": {"low": 3}, "min_max_task_ms": 5}})
    params = registry.params("stage_skew")
    assert params.task_time_ratio == Thresholds(3, 4, 8, 16)
    assert params.min_max_task_ms == 5
    assert params.min_stage_duration_ms == stage_skew.Params().min_stage_duration_ms
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
    assert len(results) == len(BUILTIN_MODULES) - 1


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


def _fake_module(name: str, evaluate: object) -> types.ModuleType:
    module = types.ModuleType(name, "A test heuristic.")
    module.NAME = name  # type: ignore[attr-defined]
    module.TITLE = name.title()  # type: ignore[attr-defined]
    module.Params = stage_skew.Params  # type: ignore[attr-defined]
    module.evaluate = evaluate  # type: ignore[attr-defined]
    return module


def test_raising_heuristic_becomes_internal_error() -> None:
    def boom(app: object, params: object) -> HeuristicResult:
        raise ZeroDivisionError("division by zero")

    def fine(app: object, params: object) -> HeuristicResult:
        return no_data("fine", "nothing", params)

    registry = build_registry({}, modules=(_fake_module("boom", boom), _fake_module("fine", fine)))
    results = registry.run(make_app())
    assert [r.name for r in results] == ["boom", "fine"]
    assert results[0].severity == Severity.NONE
    assert results[0].title.startswith("internal error: ZeroDivisionError")
    assert results[1].title == "nothing"


def test_run_on_empty_app_gives_none_everywhere() -> None:
    results = build_registry({}).run(make_app(executors=()))
    assert all(r.severity == Severity.NONE for r in results)
    assert not any(r.title.startswith("internal error") for r in results)


def test_describe_has_docs_and_params() -> None:
    described = build_registry({"stage_skew": {"min_max_task_ms": 1}}).describe()
    assert [d["name"] for d in described] == [m.NAME for m in BUILTIN_MODULES]
    skew = described[0]
    assert skew["title"] == "Stage skew"
    assert "straggler" in str(skew["doc"])
    assert skew["params"]["min_max_task_ms"] == 1  # type: ignore[index]
    for d in described:
        assert len(str(d["doc"])) > 200, d["name"]


def _kitchen_sink_app() -> object:
    from tests.heuristics.builders import (
        GIB,
        MIN_MS,
        curve,
        make_distribution,
        make_driver,
        make_executor,
        make_job,
        make_stage,
        make_task,
    )

    dist = make_distribution(
        {
            "executor_run_time_ms": curve(MIN_MS, 2 * MIN_MS, 40 * MIN_MS),
            "input_bytes": curve(0, GIB, 30 * GIB),
        },
        scheduler_delay_ms=5,
    )
    stages = [
        make_stage(
            0,
            distribution=dist,
            memory_bytes_spilled=4 * GIB,
            disk_bytes_spilled=GIB,
            input_bytes=GIB,
            shuffle_read_bytes=GIB,
            shuffle_fetch_wait_ms=50 * MIN_MS,
            jvm_gc_time_ms=60 * MIN_MS,
        ),
        make_stage(1, status="FAILED", failure_reason="FetchFailed", num_failed_tasks=40),
        make_stage(1, attempt_id=1),
        make_stage(2, num_tasks=5000, distribution=make_distribution(executor_run_time_ms=20)),
    ]
    executors = [
        make_driver(total_gc_time_ms=30 * MIN_MS),
        make_executor(
            "1",
            total_gc_time_ms=20 * MIN_MS,
            peak_jvm_heap_bytes=7 * GIB,
            peak_jvm_offheap_bytes=GIB,
        ),
        make_executor("2", total_duration_ms=600 * MIN_MS, total_input_bytes=10 * GIB),
        make_executor("3", total_duration_ms=10 * MIN_MS),
    ]
    return make_app(
        executors=executors,
        stages=stages,
        jobs=[make_job(0, status="FAILED"), make_job(1)],
        tasks=[
            make_task(1, status="FAILED", error_message="Container killed by YARN"),
            make_task(2, memory_bytes_spilled=GIB),
        ],
        props={
            "spark.serializer": "org.apache.spark.serializer.JavaSerializer",
            "spark.dynamicAllocation.enabled": "true",
        },
    )


def test_every_heuristic_fires_on_a_bad_app_and_results_store_as_json() -> None:
    import json

    results = build_registry({}).run(_kitchen_sink_app())  # type: ignore[arg-type]
    by_name = {r.name: r for r in results}
    assert set(by_name) == {m.NAME for m in BUILTIN_MODULES}
    for result in results:
        assert not result.title.startswith("internal error"), result.title
        assert result.severity > Severity.NONE, result.name
        assert result.impact is not None and result.impact.formula
        stored = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        assert HeuristicResult.from_dict(stored).to_dict() == stored
        if result.severity <= Severity.LOW:
            assert result.advice == ""
        else:
            assert result.advice
