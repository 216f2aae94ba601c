"""The tables that hold rows of one application, children before parents: what a re-fetch
replaces and what deleting an application removes."""

from __future__ import annotations

from sparkscope.models.analysis import Analysis, AnalysisInput, AnalysisResult
from sparkscope.models.application import (
    EnvironmentProperty,
    Executor,
    Job,
    Stage,
    StageExecutor,
    StageTaskDistribution,
    Task,
)
from sparkscope.models.eventlog import StageParent, StageTaskTimes

APP_CHILD_TABLES = (
    AnalysisInput,
    Analysis,
    AnalysisResult,
    StageTaskTimes,
    StageParent,
    Task,
    StageExecutor,
    StageTaskDistribution,
    Stage,
    Job,
    Executor,
    EnvironmentProperty,
)
