"""Everything a heuristic module imports, in one place.

The parts live by responsibility: inputs in :mod:`heuristics.appdata`, outcomes and severities in
:mod:`heuristics.result`, params and their parsing in :mod:`heuristics.params`, shared measures and
formatting in :mod:`heuristics.stats`.
"""

from __future__ import annotations

from heuristics.appdata import (
    DISTRIBUTION_METRICS,
    INPUT_TASKS,
    AppData,
    ExecutorSummary,
    JobSummary,
    StageSummary,
    TaskDistribution,
    TaskSelection,
    TaskSummary,
)
from heuristics.params import (
    ConfigError,
    param,
    param_docs,
    params_from_mapping,
    params_to_dict,
    params_view,
)
from heuristics.result import (
    ASCENDING,
    DESCENDING,
    LEVELS,
    Details,
    HeuristicResult,
    Impact,
    Outcome,
    Severity,
    Thresholds,
    app_severity,
    make_result,
    no_data,
)
from heuristics.stats import (
    approximate_task_values,
    fmt_bytes,
    fmt_count,
    fmt_ms,
    fmt_ratio,
    median,
    quantile_value,
    round2,
    safe_ratio,
    stage_duration_ms,
    task_executors,
    total_task_cores,
)

__all__ = [
    "ASCENDING",
    "DESCENDING",
    "DISTRIBUTION_METRICS",
    "INPUT_TASKS",
    "LEVELS",
    "AppData",
    "ConfigError",
    "Details",
    "ExecutorSummary",
    "HeuristicResult",
    "Impact",
    "JobSummary",
    "Outcome",
    "Severity",
    "StageSummary",
    "TaskDistribution",
    "TaskSelection",
    "TaskSummary",
    "Thresholds",
    "app_severity",
    "approximate_task_values",
    "fmt_bytes",
    "fmt_count",
    "fmt_ms",
    "fmt_ratio",
    "make_result",
    "median",
    "no_data",
    "param",
    "param_docs",
    "params_from_mapping",
    "params_to_dict",
    "params_view",
    "quantile_value",
    "round2",
    "safe_ratio",
    "stage_duration_ms",
    "task_executors",
    "total_task_cores",
]
