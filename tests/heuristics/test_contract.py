"""The heuristic contract: what a heuristic module must define, discovery of the built-ins,
and third-party heuristics through the entry-point group."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from heuristics.contract import INPUT_FIELDS, ContractError, from_module
from heuristics.params import HeuristicsConfigError
from heuristics.registry import ENTRY_POINT_GROUP, build_registry, builtin_heuristics
from heuristics.result import Severity, make_result, no_data
from tests.heuristics.builders import fake_module, kitchen_sink_app, make_app

HEURISTICS_DIR = Path(__file__).resolve().parents[2] / "heuristics"
YAML_PATH = HEURISTICS_DIR.parent / "config" / "heuristics.yaml"


def test_every_param_has_a_default_and_a_doc() -> None:
    for h in builtin_heuristics():
        params = h.params_type()
        for f in dataclasses.fields(params):
            assert f.metadata.get("doc"), f"{h.name}.{f.name} has no doc"
        assert dataclasses.fields(params), h.name


def test_builtins_are_the_package_modules_that_define_evaluate() -> None:
    files = {
        p.stem
        for p in (HEURISTICS_DIR / "builtin").rglob("*.py")
        if "\ndef evaluate(" in p.read_text(encoding="utf-8")
    }
    found = builtin_heuristics()
    assert {h.module.__name__.rsplit(".", 1)[1] for h in found} == files  # type: ignore[attr-defined]
    assert len(files) >= 13  # the thirteen shipped ones, and any added since
    assert [h.name for h in found] == sorted(h.name for h in found)
    for h in found:
        assert h.inputs <= INPUT_FIELDS and h.version >= 1 and h.title and len(h.doc) > 200


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
    module = fake_module("fake", lambda app, params: no_data("x"))
    setattr(module, attr, value)
    with pytest.raises(ContractError, match=attr):
        from_module(module)


def test_contract_needs_a_docstring_and_defaults() -> None:
    undocumented = fake_module("fake", lambda app, params: no_data("x"))
    undocumented.__doc__ = None
    with pytest.raises(ContractError, match="docstring"):
        from_module(undocumented)

    @dataclasses.dataclass(frozen=True)
    class NoDefaults:
        ratio: float

    with pytest.raises(ContractError, match="defaults"):
        from_module(fake_module("fake", lambda app, params: None, Params=NoDefaults))


def test_declared_inputs_suffice() -> None:
    """Each heuristic gives the same result when every AppData field outside its INPUTS is
    blanked: INPUTS names all it reads."""
    app = kitchen_sink_app()
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

    from heuristics import AppData, Outcome, Thresholds, make_result, param

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
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
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
    docs = described["many_stages"]["param_docs"]
    assert docs["stages"] == "stage attempts (count; ascending)"  # type: ignore[index]
    assert set(docs) == {"stages", "cost_caps.wall_seconds", "cost_caps.core_hours"}  # type: ignore[arg-type]


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
    with pytest.raises(HeuristicsConfigError, match=message):
        build_registry({})
