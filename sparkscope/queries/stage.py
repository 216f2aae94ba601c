"""The stage page: one stage attempt of an application, read from the stored tables only (its row,
task distributions, kept tasks, per-executor summary, the findings naming it, its SQL queries
and, for an application read from its event log, every task's times). Nothing is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from heuristics.registry import Registry
from heuristics.result import HeuristicResult
from sparkscope.analysis.scoring import ensure_analyzed
from sparkscope.models.application import (
    Application,
    Stage,
    StageExecutor,
    StageTaskDistribution,
    Task,
)
from sparkscope.models.fetch import HistoryServer
from sparkscope.present.answer import finding_stages, rank_findings
from sparkscope.queries.errors import NotFoundError
from sparkscope.queries.sql import StageQuery, queries_for_stage
from sparkscope.queries.stage_tasks import StageTasks, stage_task_times

#: Kept tasks shown (the fetcher keeps a bounded set per stage: its slowest and failed ones).
TASK_LIMIT = 200


@dataclass
class StageDetail:
    """Everything the stage page shows."""

    app: Application
    server: HistoryServer
    stage: Stage
    #: Attempt ids of the same stage id, ascending (this one included).
    attempts: list[int]
    quantiles: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    tasks: list[Any] = field(default_factory=list)
    executors: list[Any] = field(default_factory=list)
    findings: list[HeuristicResult] = field(default_factory=list)
    queries: list[StageQuery] = field(default_factory=list)
    task_times: StageTasks | None = None


def _stage_findings(
    session: Session, app_pk: int, registry: Registry, stage_id: int, attempt_id: int
) -> list[HeuristicResult]:
    """The application's findings (scored in memory when stale) that name this stage attempt."""
    found = [
        f
        for f in ensure_analyzed(session, app_pk, registry)
        if (stage_id, attempt_id) in finding_stages(f)
    ]
    return rank_findings(found)


def _tasks(session: Session, app_pk: int, stage_id: int, attempt_id: int) -> list[Any]:
    cols = (
        Task.task_id,
        Task.index,
        Task.attempt,
        Task.executor_id,
        Task.host,
        Task.status,
        Task.kept_because,
        Task.launch_time_ms,
        Task.duration_ms,
        Task.executor_run_time_ms,
        Task.jvm_gc_time_ms,
        Task.input_bytes,
        Task.shuffle_read_bytes,
        Task.shuffle_write_bytes,
        Task.memory_bytes_spilled,
        Task.disk_bytes_spilled,
        Task.error_message,
    )
    return list(
        session.execute(
            select(*cols)
            .where(
                Task.application_id == app_pk,
                Task.stage_id == stage_id,
                Task.stage_attempt_id == attempt_id,
            )
            .order_by(Task.duration_ms.desc().nulls_last(), Task.task_id)
            .limit(TASK_LIMIT)
        ).all()
    )


def _executors(session: Session, app_pk: int, stage_id: int, attempt_id: int) -> list[Any]:
    cols = [c for c in StageExecutor.__table__.c if c.name not in ("application_id", "stage_id")]
    rows = session.execute(
        select(*cols).where(
            StageExecutor.application_id == app_pk,
            StageExecutor.stage_id == stage_id,
            StageExecutor.attempt_id == attempt_id,
        )
    ).all()
    return sorted(rows, key=lambda r: (-r.task_time_ms, r.executor_id))


def stage_detail(
    session: Session, app: Application, registry: Registry, stage_id: int, attempt_id: int
) -> StageDetail:
    """One stage attempt's page; :class:`NotFoundError` when the application has no such stage."""
    stage = session.get(Stage, (app.id, stage_id, attempt_id))
    if stage is None:
        raise NotFoundError(f"no stage {stage_id} attempt {attempt_id} in {app.app_id!r}")
    server = session.get(HistoryServer, app.server_id)
    assert server is not None  # the foreign key guarantees it
    attempts = list(
        session.scalars(
            select(Stage.attempt_id)
            .where(Stage.application_id == app.id, Stage.stage_id == stage_id)
            .order_by(Stage.attempt_id)
        )
    )
    dist = session.get(StageTaskDistribution, (app.id, stage_id, attempt_id))
    return StageDetail(
        app=app,
        server=server,
        stage=stage,
        attempts=attempts,
        quantiles=list(dist.quantiles) if dist is not None else [],
        metrics=dict(dist.metrics) if dist is not None else {},
        tasks=_tasks(session, app.id, stage_id, attempt_id),
        executors=_executors(session, app.id, stage_id, attempt_id),
        findings=_stage_findings(session, app.id, registry, stage_id, attempt_id),
        queries=queries_for_stage(session, app.id, stage_id),
        task_times=stage_task_times(session, app.id, stage_id, attempt_id),
    )
