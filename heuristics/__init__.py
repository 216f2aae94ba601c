"""Sparkscope's diagnosis engine: pure heuristics over typed application data.

This package's namespace is the documented contract for heuristic plugins (a module installed
under the ``sparkscope.heuristics`` entry-point group): a plugin imports what it needs from here.
Sparkscope's own code imports each name from the module that defines it:

- :mod:`heuristics.appdata` -- the inputs (one application's data as immutable types);
- :mod:`heuristics.result` -- severities, findings and ``make_result``;
- :mod:`heuristics.thresholds` -- the thresholds a measure is rated by;
- :mod:`heuristics.costcap` -- the caps on severity by a finding's cost;
- :mod:`heuristics.params` -- ``param()`` for a ``Params`` field with its docs, and their parsing;
- :mod:`heuristics.contract` -- the ``Heuristic`` protocol and the module form of a heuristic;
- :mod:`heuristics.registry` -- discovery and the registry;
- :mod:`heuristics.sparkconf`, :mod:`heuristics.tuning` -- Spark's settings, defaults by version,
  and the settings for the next run;
- :mod:`heuristics.builtin` -- the built-in checks, one module each.

A heuristic's ``make_result(severity=...)`` is how bad the pattern is; with an ``impact`` (wall
seconds, core-hours) the registry caps that severity by the cost, as for the built-ins. ``conf``
gives the settings for the next run and ``stages`` the stage attempts the finding is about.

Build a registry from the parsed ``config/heuristics.yaml`` mapping (overrides of the defaults)
with ``build_registry(config)``, then call ``registry.run(app)``. Importing this package has no
side effects: heuristics are found when a registry is built.
"""

from __future__ import annotations

from heuristics.appdata import (
    AppData,
    ExecutorSummary,
    JobSummary,
    StageSummary,
    TaskDistribution,
    TaskSummary,
)
from heuristics.contract import Heuristic
from heuristics.params import param
from heuristics.registry import ENTRY_POINT_GROUP, Registry, build_registry
from heuristics.result import (
    Details,
    HeuristicResult,
    Impact,
    Outcome,
    Severity,
    make_result,
    no_data,
)
from heuristics.thresholds import ASCENDING, DESCENDING, Thresholds

__all__ = [
    "ASCENDING",
    "DESCENDING",
    "ENTRY_POINT_GROUP",
    "AppData",
    "Details",
    "ExecutorSummary",
    "Heuristic",
    "HeuristicResult",
    "Impact",
    "JobSummary",
    "Outcome",
    "Registry",
    "Severity",
    "StageSummary",
    "TaskDistribution",
    "TaskSummary",
    "Thresholds",
    "build_registry",
    "make_result",
    "no_data",
    "param",
]
