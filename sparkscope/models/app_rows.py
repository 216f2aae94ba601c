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
from sparkscope.models.sql import SqlExecution, SqlFetch, SqlNode, SqlStage
from sparkscope.models.whatif import WhatIfInput

APP_CHILD_TABLES = (
    WhatIfInput,
    AnalysisInput,
    Analysis,
    AnalysisResult,
    StageTaskTimes,
    StageParent,
    SqlStage,
    SqlNode,
    SqlExecution,
    SqlFetch,
    Task,
    StageExecutor,
    StageTaskDistribution,
    Stage,
    Job,
    Executor,
    EnvironmentProperty,
)
