"""build_registry, the heuristic contract, discovery, fingerprints and the shipped YAML."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
import types
from pathlib import Path

import pytest
import yaml

from heuristics import (
    ConfigError,
    ContractError,
    build_registry,
    builtin_heuristics,
    from_module,
    stage_skew,
)
from heuristics.base import (
    Details,
    HeuristicResult,
    Impact,
    Outcome,
    Severity,
    Thresholds,
    make_result,
    no_data,
    param,
)
from heuristics.registry import ENTRY_POINT_GROUP, INPUT_FIELDS
from tests.heuristics.builders import make_app

YAML_PATH = Path(__file__).resolve().parents[2] / "config" / "heuristics.yaml"
HEURISTICS_DIR = YAML_PATH.parents[1] / "heuristics"


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


def test_every_param_has_a_default_and_a_doc() -> None:
    for h in builtin_heuristics():
        params = h.params_type()
        for f in dataclasses.fields(params):
            assert f.metadata.get("doc"), f"{h.name}.{f.name} has no doc"
        assert dataclasses.fields(params), h.name


def test_builtins_are_the_package_modules_that_define_evaluate() -> None:
    files = {
        p.stem
        for p in HEURISTICS_DIR.glob("*.py")
        if "\ndef evaluate(" in p.read_text(encoding="utf-8")
    }
    found = builtin_heuristics()
    assert {h.module.__name__.rsplit(".", 1)[1] for h in found} == files  # type: ignore[attr-defined]
    assert len(files) == 13
    assert [h.name for h in found] == sorted(h.name for h in found)
    for h in found:
        assert h.inputs <= INPUT_FIELDS and h.version >= 1 and h.title and len(h.doc) > 200


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
        # numbers a JSON document or the database cannot hold
        ({"stage_skew": {"min_max_task_ms": 2**63}}, "stage_skew.min_max_task_ms"),
        ({"stage_skew": {"min_max_task_ms": -(2**63) - 1}}, "stage_skew.min_max_task_ms"),
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
    with pytest.raises(ConfigError) as info:
        build_registry(config)
    assert info.value.path == path
    assert path in str(info.value)


def test_largest_64_bit_values_are_accepted_and_stored() -> None:
    import orjson

    registry = build_registry(
        {"stage_skew": {"min_max_task_ms": 2**63 - 1, "task_time_ratio": {"critical": 2**63 - 1}}}
    )
    assert registry.params("stage_skew").min_max_task_ms == 2**63 - 1
    orjson.dumps(registry.effective_config())  # the config row holds it
    assert stage_skew.NAME in registry.digests


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
    bumped_module = _copy_module(stage_skew, VERSION=stage_skew.VERSION + 1)
    others = [h for h in builtin_heuristics() if h.name != "stage_skew"]
    bumped = build_registry({}, heuristics=[*others, bumped_module])
    assert bumped.fingerprint != base.fingerprint
    changed = {n for n in base.digests if base.digests[n] != bumped.digests[n]}
    assert changed == {"stage_skew"}
    # a param edit moves only that heuristic's digest too
    edited = build_registry({"disk_spill": {"min_stage_spill_bytes": 1}})
    assert {n for n in base.digests if base.digests[n] != edited.digests[n]} == {"disk_spill"}


def _copy_module(module: types.ModuleType, **changes: object) -> types.ModuleType:
    copy = types.ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    copy.__dict__.update(changes)
    return copy


@dataclasses.dataclass(frozen=True)
class _Params:
    """Params of the test heuristics."""

    ratio: Thresholds = param(Thresholds(1, 2, 3, 4), "a ratio (ascending)")


def _fake_module(name: str, evaluate: object, **extra: object) -> types.ModuleType:
    module = types.ModuleType(name, "A test heuristic.")
    module.__dict__.update(
        NAME=name,
        TITLE=name.title(),
        VERSION=1,
        INPUTS=frozenset({"stages"}),
        Params=_Params,
        evaluate=evaluate,
    )
    module.__dict__.update(extra)
    return module


def test_registry_fills_name_thresholds_and_severity_rules() -> None:
    impact = Impact(1.0, 2.0, "f")

    def at(severity: Severity) -> object:
        def evaluate(app: object, params: _Params) -> Outcome:
            return make_result(
                severity=severity,
                value=params.ratio.low,
                title="t",
                details=Details(("a",), ((1,),)),
                advice="do this",
                impact=impact,
            )

        return evaluate

    modules = [_fake_module(f"h{int(s)}", at(s)) for s in Severity]
    registry = build_registry({"h2": {"ratio": {"low": 1.5}}}, heuristics=modules)
    results = {r.name: r for r in registry.run(make_app())}
    assert set(results) == {"h0", "h1", "h2", "h3", "h4"}
    for severity in Severity:
        result = results[f"h{int(severity)}"]
        assert result.severity == severity
        assert result.thresholds == {"ratio": Thresholds(1, 2, 3, 4).to_dict()} or (
            severity == Severity.MODERATE and result.thresholds["ratio"]["low"] == 1.5  # type: ignore[index]
        )
        assert result.advice == ("do this" if severity > Severity.LOW else "")
        assert result.impact == (impact if severity > Severity.NONE else None)
    assert results["h2"].value == 1.5


def test_make_result_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        make_result(Severity.LOW, 1.0, "t")  # type: ignore[misc]
    assert no_data("missing").severity == Severity.NONE


@pytest.mark.parametrize(
    ("attr", "value"),
    [
        ("NAME", "not an identifier"),
        ("VERSION", 0),
        ("VERSION", True),
        ("TITLE", ""),
        ("INPUTS", frozenset({"no_such_field"})),
        ("INPUTS", ["stages"]),
        ("Params", dict),
        ("evaluate", None),
    ],
)
def test_contract_is_checked(attr: str, value: object) -> None:
    module = _fake_module("fake", lambda app, params: no_data("x"))
    setattr(module, attr, value)
    with pytest.raises(ContractError, match=attr):
        from_module(module)


def test_contract_needs_a_docstring_and_defaults() -> None:
    undocumented = _fake_module("fake", lambda app, params: no_data("x"))
    undocumented.__doc__ = None
    with pytest.raises(ContractError, match="docstring"):
        from_module(undocumented)

    @dataclasses.dataclass(frozen=True)
    class NoDefaults:
        ratio: float

    with pytest.raises(ContractError, match="defaults"):
        from_module(_fake_module("fake", lambda app, params: None, Params=NoDefaults))


def test_declared_inputs_suffice() -> None:
    """Each heuristic gives the same result when every AppData field outside its INPUTS is
    blanked: INPUTS names all it reads."""
    app = _kitchen_sink_app()
    for entry in build_registry({}).entries:
        blank = {
            f.name: _blank(getattr(app, f.name))
            for f in dataclasses.fields(app)  # type: ignore[arg-type]
            if f.name not in entry.heuristic.inputs
        }
        full = build_registry({}).run_one(entry, app)  # type: ignore[arg-type]
        narrowed = build_registry({}).run_one(entry, dataclasses.replace(app, **blank))  # type: ignore[type-var]
        assert narrowed == full, entry.name


def _blank(value: object) -> object:
    if isinstance(value, tuple):
        return ()
    if isinstance(value, dict):
        return {}
    if isinstance(value, str):
        return "x"
    return None if value is None else 0


# --------------------------------------------------------------------------- third party


def _install_dist(
    root: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]
) -> None:
    """A real (if tiny) installed distribution: a dist-info with entry points, and its modules."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in entry_points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))


PLUGIN = """\
    \"\"\"Too many stages: a third-party heuristic for the test.\"\"\"

    from dataclasses import dataclass

    from heuristics.base import AppData, Outcome, Thresholds, make_result, param

    NAME = "many_stages"
    TITLE = "Many stages"
    VERSION = 3
    INPUTS = frozenset({"stages"})


    @dataclass(frozen=True)
    class Params:
        \"\"\"Params of many_stages.\"\"\"

        stages: Thresholds = param(Thresholds(1, 2, 3, 4), "stage attempts (count; ascending)")


    def evaluate(app: AppData, params: Params) -> Outcome:
        n = len(app.stages)
        return make_result(
            severity=params.stages.severity_of(n), value=n, title=f"{n} stages", advice="merge"
        )
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in list(sys.modules):
        if name.startswith("sparkscope_test_plugin"):
            del sys.modules[name]


def test_third_party_heuristic_loads_through_entry_point(site: Path) -> None:
    from tests.heuristics.builders import make_stage

    _install_dist(
        site,
        "sparkscope_test_plugin",
        {"many_stages": "sparkscope_test_plugin_mod"},
        {"sparkscope_test_plugin_mod": PLUGIN},
    )
    registry = build_registry({"many_stages": {"stages": {"low": 2}}})
    assert "many_stages" in registry.names
    assert set(registry.names) >= {h.name for h in builtin_heuristics()}
    results = {r.name: r for r in registry.run(make_app(stages=[make_stage(0), make_stage(1)]))}
    found = results["many_stages"]
    assert (found.severity, found.title, found.advice) == (Severity.MODERATE, "2 stages", "merge")
    assert found.thresholds["stages"]["low"] == 2.0  # type: ignore[index]
    described = {d["name"]: d for d in registry.describe()}
    assert described["many_stages"]["version"] == 3
    assert described["many_stages"]["param_docs"] == {"stages": "stage attempts (count; ascending)"}


@pytest.mark.parametrize(
    ("target", "modules", "message"),
    [
        ("sparkscope_test_plugin_missing", {}, "cannot load"),
        (
            "sparkscope_test_plugin_bad",
            {"sparkscope_test_plugin_bad": '"""Doc."""\nNAME = 1\n'},
            "NAME must be an identifier",
        ),
        (
            "sparkscope_test_plugin_clash",
            {"sparkscope_test_plugin_clash": PLUGIN.replace('"many_stages"', '"stage_skew"')},
            "two heuristics",
        ),
    ],
)
def test_broken_third_party_heuristic_is_a_config_error(
    site: Path, target: str, modules: dict[str, str], message: str
) -> None:
    _install_dist(site, "sparkscope_test_plugin", {"broken": target}, modules)
    with pytest.raises(ConfigError, match=message):
        build_registry({})


def test_raising_heuristic_becomes_internal_error() -> None:
    def boom(app: object, params: object) -> Outcome:
        raise ZeroDivisionError("division by zero")

    def fine(app: object, params: object) -> Outcome:
        return no_data("nothing")

    def wrong(app: object, params: object) -> object:
        return "not an outcome"

    modules = (_fake_module("boom", boom), _fake_module("fine", fine), _fake_module("wrong", wrong))
    results = build_registry({}, heuristics=modules).run(make_app())
    assert [r.name for r in results] == ["boom", "fine", "wrong"]
    assert results[0].severity == Severity.NONE
    assert results[0].title.startswith("internal error: ZeroDivisionError")
    assert results[0].thresholds == {"ratio": Thresholds(1, 2, 3, 4).to_dict()}
    assert results[1].title == "nothing"
    assert results[2].title == "internal error: TypeError: evaluate returned str, not Outcome"


def test_run_on_empty_app_gives_none_everywhere() -> None:
    results = build_registry({}).run(make_app(executors=()))
    assert all(r.severity == Severity.NONE for r in results)
    assert not any(r.title.startswith("internal error") for r in results)


def test_describe_has_docs_and_params() -> None:
    described = build_registry({"stage_skew": {"min_max_task_ms": 1}}).describe()
    assert [d["name"] for d in described] == [h.name for h in builtin_heuristics()]
    skew = next(d for d in described if d["name"] == "stage_skew")
    assert skew["version"] == stage_skew.VERSION
    assert skew["param_docs"]["min_max_task_ms"].startswith("gate:")  # type: ignore[index]
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
    assert set(by_name) == {h.name for h in builtin_heuristics()}
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
