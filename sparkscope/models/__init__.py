"""Database schema: Spark's own hierarchy, keyed by Spark's natural keys.

history server -> application attempt -> environment properties, executors, jobs, stage attempts
(-> task quantile distributions, per-executor summaries, a bounded set of task rows), analysis results.
All Spark timestamps are epoch milliseconds (UTC) in ``*_ms`` columns; sizes are bytes.
"""

from sparkscope.models.analysis import Analysis, AnalysisInput, AnalysisResult, HeuristicsConfig
from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Executor,
    Job,
    Stage,
    StageExecutor,
    StageTaskDistribution,
    Task,
)
from sparkscope.models.base import NAMING_CONVENTION, Base, Json
from sparkscope.models.fetch import FetchFailure, FetchRun, FetchWatermark, HistoryServer
from sparkscope.models.predictions import PredictionModel, RecurringForecast, RunPrediction
from sparkscope.models.summary import ApplicationName, DaySummary
from sparkscope.models.whatif import WhatIfCluster, WhatIfInput, WhatIfModel

APP_CHILD_TABLES = (
    AnalysisInput,
    Analysis,
    AnalysisResult,
    Task,
    StageExecutor,
    StageTaskDistribution,
    Stage,
    Job,
    Executor,
    EnvironmentProperty,
)


__all__ = [
    "APP_CHILD_TABLES",
    "NAMING_CONVENTION",
    "Analysis",
    "AnalysisInput",
    "AnalysisResult",
    "Application",
    "ApplicationName",
    "Base",
    "DaySummary",
    "EnvironmentProperty",
    "Executor",
    "FetchFailure",
    "FetchRun",
    "FetchWatermark",
    "HeuristicsConfig",
    "HistoryServer",
    "Job",
    "Json",
    "PredictionModel",
    "RecurringForecast",
    "RunPrediction",
    "Stage",
    "StageExecutor",
    "StageTaskDistribution",
    "Task",
    "WhatIfCluster",
    "WhatIfInput",
    "WhatIfModel",
]
