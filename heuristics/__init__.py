"""Sparkscope's diagnosis engine: pure heuristics over typed application data.

Build a registry from the parsed `config/heuristics.yaml` mapping (overrides of the defaults)
with `build_registry(config)`, then call `registry.run(app)`. Importing this package has no side
effects: the heuristics (this package's modules that define `evaluate`, plus those installed
under the `sparkscope.heuristics` entry-point group) are found when a registry is built.
"""

from __future__ import annotations

from heuristics.params import ConfigError
from heuristics.registry import (
    ENTRY_POINT_GROUP,
    ContractError,
    Entry,
    Heuristic,
    ModuleHeuristic,
    Registry,
    available_heuristics,
    build_registry,
    builtin_heuristics,
    from_module,
    plugin_heuristics,
)
from heuristics.result import app_severity

__all__ = [
    "ENTRY_POINT_GROUP",
    "ConfigError",
    "ContractError",
    "Entry",
    "Heuristic",
    "ModuleHeuristic",
    "Registry",
    "app_severity",
    "available_heuristics",
    "build_registry",
    "builtin_heuristics",
    "from_module",
    "plugin_heuristics",
]
