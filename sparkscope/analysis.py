"""Stored rows -> heuristic inputs -> registry -> stored findings.

The web app calls :func:`ensure_analyzed` when it shows an application: findings computed with the
config now in force are reused; otherwise the application is re-scored and the new findings replace
the old ones in one transaction. ``sparkscope analyze`` and the fetcher use :func:`analyze_all`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from multiprocessing import get_context
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, insert, select
from sqlalchemy.orm import Session, sessionmaker

from heuristics import Registry, build_registry
from heuristics import base as hb
from heuristics.base import HeuristicResult
from sparkscope.config import ConfigError, load_heuristics_mapping
from sparkscope.db import now_ms
from sparkscope.models import (
    AnalysisResult,
    Application,
    EnvironmentProperty,
    Executor,
    Job,
    Stage,
    StageTaskDistribution,
    Task,
)
from sparkscope.resources import Resources, compute_resources

log = logging.getLogger(__name__)

BATCH_SIZE = 400


# ------------------------------------------------------------------------------ heuristics config


def load_heuristics(path: str) -> Registry:
    """Read and validate the heuristics YAML; raise ConfigError naming the file and key."""
    mapping, _digest = load_heuristics_mapping(path)
    try:
        return build_registry(mapping)
    except hb.ConfigError as exc:
        raise ConfigError(path, exc.path, exc.message) from None


class HeuristicsState:
    """The heuristics config in force for a long-running process, re-read when the file changes.

    A bad edit never takes effect: the last valid registry stays in force and :meth:`current`
    reports the error, so the page can say so.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._registry: Registry | None = None
        self._error: str | None = None

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def current(self) -> tuple[Registry, str | None]:
        """The registry in force and the error of the file on disk, if it is invalid."""
        stamp = self._file_stamp()
        with self._lock:
            if self._registry is None or stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._registry = load_heuristics(self.path)
                    self._error = None
                except ConfigError as exc:
                    self._error = (
                        f"heuristics config not applied, previous one still in force: {exc}"
                    )
                    log.error("%s", self._error)
                    if self._registry is None:
                        self._registry = build_registry({})
            return self._registry, self._error


# ------------------------------------------------------------------------------------- loading


def _props(rows: Iterable[Any]) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = defaultdict(dict)
    for app_pk, name, value in rows:
        out[app_pk][name] = value if value is not None else ""
    return out


def load_app_data(session: Session, application_ids: Sequence[int]) -> dict[int, hb.AppData]:
    """Build the heuristic inputs of several applications with one query per table."""
    ids = list(application_ids)
    if not ids:
        return {}
    apps = session.execute(
        select(
            Application.id,
            Application.app_id,
            Application.attempt_id,
            Application.name,
            Application.spark_user,
            Application.start_time_ms,
            Application.end_time_ms,
            Application.duration_ms,
        ).where(Application.id.in_(ids))
    ).all()
    props = _props(
        session.execute(
            select(
                EnvironmentProperty.application_id,
                EnvironmentProperty.name,
                EnvironmentProperty.value,
            )
            .where(EnvironmentProperty.application_id.in_(ids))
            .where(EnvironmentProperty.section == "spark")
        )
    )
    execs: dict[int, list[hb.ExecutorSummary]] = defaultdict(list)
    for er in session.execute(
        select(
            Executor.application_id,
            Executor.executor_id,
            Executor.is_driver,
            Executor.host_port,
            Executor.total_cores,
            Executor.max_memory_bytes,
            Executor.add_time_ms,
            Executor.remove_time_ms,
            Executor.remove_reason,
            Executor.total_duration_ms,
            Executor.total_gc_time_ms,
            Executor.total_tasks,
            Executor.failed_tasks,
            Executor.completed_tasks,
            Executor.total_input_bytes,
            Executor.total_shuffle_read_bytes,
            Executor.total_shuffle_write_bytes,
            Executor.peak_jvm_heap_bytes,
            Executor.peak_jvm_offheap_bytes,
        ).where(Executor.application_id.in_(ids))
    ):
        host = er.host_port.rsplit(":", 1)[0] if er.host_port else None
        execs[er.application_id].append(
            hb.ExecutorSummary(
                executor_id=er.executor_id,
                is_driver=er.is_driver,
                host=host,
                total_cores=er.total_cores,
                max_memory_bytes=er.max_memory_bytes,
                add_time_ms=er.add_time_ms,
                remove_time_ms=er.remove_time_ms,
                remove_reason=er.remove_reason,
                total_duration_ms=er.total_duration_ms,
                total_gc_time_ms=er.total_gc_time_ms,
                total_tasks=er.total_tasks,
                failed_tasks=er.failed_tasks,
                completed_tasks=er.completed_tasks,
                total_input_bytes=er.total_input_bytes,
                total_shuffle_read_bytes=er.total_shuffle_read_bytes,
                total_shuffle_write_bytes=er.total_shuffle_write_bytes,
                peak_jvm_heap_bytes=er.peak_jvm_heap_bytes,
                peak_jvm_offheap_bytes=er.peak_jvm_offheap_bytes,
            )
        )
    jobs: dict[int, list[hb.JobSummary]] = defaultdict(list)
    for jr in session.execute(
        select(
            Job.application_id,
            Job.job_id,
            Job.name,
            Job.status,
            Job.submission_time_ms,
            Job.completion_time_ms,
            Job.num_tasks,
            Job.num_failed_tasks,
            Job.num_failed_stages,
            Job.stage_ids,
        )
        .where(Job.application_id.in_(ids))
        .order_by(Job.application_id, Job.job_id)
    ):
        jobs[jr.application_id].append(
            hb.JobSummary(
                job_id=jr.job_id,
                name=jr.name or "",
                status=jr.status,
                submission_time_ms=jr.submission_time_ms,
                completion_time_ms=jr.completion_time_ms,
                num_tasks=jr.num_tasks,
                num_failed_tasks=jr.num_failed_tasks,
                num_failed_stages=jr.num_failed_stages,
                stage_ids=tuple(jr.stage_ids or ()),
            )
        )
    dists: dict[tuple[int, int, int], hb.TaskDistribution] = {}
    metric_cols = [StageTaskDistribution.metrics[k] for k in hb.DISTRIBUTION_METRICS]
    for dr in session.execute(
        select(
            StageTaskDistribution.application_id,
            StageTaskDistribution.stage_id,
            StageTaskDistribution.attempt_id,
            StageTaskDistribution.quantiles,
            *metric_cols,
        ).where(StageTaskDistribution.application_id.in_(ids))
    ):
        metrics = {
            k: v for k, v in zip(hb.DISTRIBUTION_METRICS, dr[4:], strict=True) if v is not None
        }
        dists[(dr[0], dr[1], dr[2])] = hb.TaskDistribution(quantiles=dr[3], metrics=metrics)
    stages: dict[int, list[hb.StageSummary]] = defaultdict(list)
    for sr in session.execute(
        select(
            Stage.application_id,
            Stage.stage_id,
            Stage.attempt_id,
            Stage.name,
            Stage.status,
            Stage.num_tasks,
            Stage.num_complete_tasks,
            Stage.num_failed_tasks,
            Stage.num_killed_tasks,
            Stage.submission_time_ms,
            Stage.first_task_launched_time_ms,
            Stage.completion_time_ms,
            Stage.executor_run_time_ms,
            Stage.executor_cpu_time_ns,
            Stage.jvm_gc_time_ms,
            Stage.input_bytes,
            Stage.output_bytes,
            Stage.shuffle_read_bytes,
            Stage.shuffle_write_bytes,
            Stage.shuffle_fetch_wait_ms,
            Stage.memory_bytes_spilled,
            Stage.disk_bytes_spilled,
            Stage.failure_reason,
        )
        .where(Stage.application_id.in_(ids))
        .order_by(Stage.application_id, Stage.stage_id, Stage.attempt_id)
    ):
        stages[sr.application_id].append(
            hb.StageSummary(
                stage_id=sr.stage_id,
                attempt_id=sr.attempt_id,
                name=sr.name or "",
                status=sr.status,
                num_tasks=sr.num_tasks,
                num_complete_tasks=sr.num_complete_tasks,
                num_failed_tasks=sr.num_failed_tasks,
                num_killed_tasks=sr.num_killed_tasks,
                submission_time_ms=sr.submission_time_ms,
                first_task_launched_time_ms=sr.first_task_launched_time_ms,
                completion_time_ms=sr.completion_time_ms,
                executor_run_time_ms=sr.executor_run_time_ms,
                executor_cpu_time_ns=sr.executor_cpu_time_ns,
                jvm_gc_time_ms=sr.jvm_gc_time_ms,
                input_bytes=sr.input_bytes,
                output_bytes=sr.output_bytes,
                shuffle_read_bytes=sr.shuffle_read_bytes,
                shuffle_write_bytes=sr.shuffle_write_bytes,
                shuffle_fetch_wait_ms=sr.shuffle_fetch_wait_ms,
                memory_bytes_spilled=sr.memory_bytes_spilled,
                disk_bytes_spilled=sr.disk_bytes_spilled,
                failure_reason=sr.failure_reason,
                distribution=dists.get((sr.application_id, sr.stage_id, sr.attempt_id)),
            )
        )
    tasks: dict[int, list[hb.TaskSummary]] = defaultdict(list)
    for tr in session.execute(
        select(
            Task.application_id,
            Task.stage_id,
            Task.stage_attempt_id,
            Task.task_id,
            Task.index.label("task_index"),
            Task.attempt,
            Task.executor_id,
            Task.status,
            Task.duration_ms,
            Task.executor_run_time_ms,
            Task.input_bytes,
            Task.shuffle_read_bytes,
            Task.memory_bytes_spilled,
            Task.disk_bytes_spilled,
            Task.error_message,
        )
        .where(Task.application_id.in_(ids))
        .order_by(Task.application_id, Task.stage_id, Task.task_id)
    ):
        tasks[tr.application_id].append(
            hb.TaskSummary(
                stage_id=tr.stage_id,
                stage_attempt_id=tr.stage_attempt_id,
                task_id=tr.task_id,
                index=tr.task_index,
                attempt=tr.attempt,
                executor_id=tr.executor_id,
                status=tr.status,
                duration_ms=tr.duration_ms,
                executor_run_time_ms=tr.executor_run_time_ms,
                input_bytes=tr.input_bytes,
                shuffle_read_bytes=tr.shuffle_read_bytes,
                memory_bytes_spilled=tr.memory_bytes_spilled,
                disk_bytes_spilled=tr.disk_bytes_spilled,
                error_message=tr.error_message,
            )
        )
    out: dict[int, hb.AppData] = {}
    for a in apps:
        out[a.id] = hb.AppData(
            app_id=a.app_id,
            attempt_id=a.attempt_id or None,
            name=a.name,
            user=a.spark_user,
            start_time_ms=a.start_time_ms,
            end_time_ms=a.end_time_ms,
            duration_ms=a.duration_ms or 0,
            spark_properties=props.get(a.id, {}),
            executors=tuple(execs.get(a.id, ())),
            jobs=tuple(jobs.get(a.id, ())),
            stages=tuple(stages.get(a.id, ())),
            tasks=tuple(tasks.get(a.id, ())),
        )
    return out


# ------------------------------------------------------------------------------------- scoring


def _store(
    session: Session,
    scored: dict[int, list[HeuristicResult]],
    fingerprint: str,
    resources: dict[int, Resources],
) -> None:
    ids = list(scored)
    session.execute(delete(AnalysisResult).where(AnalysisResult.application_id.in_(ids)))
    at = now_ms()
    rows: list[dict[str, Any]] = []
    for app_pk, results in scored.items():
        for r in results:
            impact = r.impact
            rows.append(
                {
                    "application_id": app_pk,
                    "heuristic": r.name,
                    "severity": int(r.severity),
                    "value": r.value,
                    "title": r.title,
                    "impact_core_hours": impact.core_hours if impact else None,
                    "impact_wall_seconds": impact.wall_seconds if impact else None,
                    "result": r.to_dict(),
                    "fingerprint": fingerprint,
                    "analyzed_at_ms": at,
                }
            )
    if rows:
        # Core insert of the table: one multi-row statement per batch (the ORM form goes row by row).
        session.execute(insert(cast(Table, AnalysisResult.__table__)), rows)
    table = cast(Table, Application.__table__)
    session.execute(
        table.update()
        .where(table.c.id == bindparam("b_pk"))
        .values(
            worst_severity=bindparam("b_worst"),
            analysis_fingerprint=bindparam("b_fp"),
            allocated_core_hours=bindparam("b_alloc"),
            wasted_core_hours=bindparam("b_waste"),
        ),
        [
            {
                "b_pk": app_pk,
                "b_worst": int(hb.app_severity(results)),
                "b_fp": fingerprint,
                "b_alloc": resources[app_pk].allocated_core_hours if app_pk in resources else None,
                "b_waste": resources[app_pk].wasted_core_hours if app_pk in resources else None,
            }
            for app_pk, results in scored.items()
        ],
    )


def analyze_apps(
    session: Session, application_ids: Sequence[int], registry: Registry
) -> dict[int, list[HeuristicResult]]:
    """Score the given applications and replace their findings (the caller commits)."""
    data = load_app_data(session, application_ids)
    scored = {pk: registry.run(app) for pk, app in data.items()}
    resources = {pk: compute_resources(app) for pk, app in data.items()}
    if scored:
        _store(session, scored, registry.fingerprint, resources)
    return scored


def stored_results(session: Session, application_id: int) -> list[HeuristicResult]:
    """The stored findings of one application, worst first."""
    rows = session.scalars(
        select(AnalysisResult.result).where(AnalysisResult.application_id == application_id)
    ).all()
    results = [HeuristicResult.from_dict(r) for r in rows]
    results.sort(key=lambda r: (-int(r.severity), r.name))
    return results


def ensure_analyzed(
    session: Session, application_id: int, registry: Registry
) -> list[HeuristicResult]:
    """Findings of one application under the config in force, re-scoring (and committing) if stale."""
    fingerprint = session.scalar(
        select(Application.analysis_fingerprint).where(Application.id == application_id)
    )
    if fingerprint != registry.fingerprint:
        analyze_apps(session, [application_id], registry)
        session.commit()
    return stored_results(session, application_id)


@dataclass(frozen=True)
class AnalyzeStats:
    """What a bulk re-score did."""

    analysed: int
    skipped: int
    seconds: float


def analyze_all(
    factory: sessionmaker[Session],
    registry: Registry,
    app_ids: Sequence[str] | None = None,
    force: bool = False,
    batch_size: int = BATCH_SIZE,
    workers: int = 1,
) -> AnalyzeStats:
    """Re-score stored applications in batches, one transaction per batch.

    With ``workers`` > 1 the batches are spread over that many processes (scoring is CPU-bound
    Python, so threads would not help); each process opens its own database connection.
    """
    started = time.perf_counter()
    with factory() as session:
        query = select(Application.id, Application.analysis_fingerprint)
        if app_ids:
            query = query.where(Application.app_id.in_(list(app_ids)))
        rows = session.execute(query.order_by(Application.id)).all()
    todo = [pk for pk, fp in rows if force or fp != registry.fingerprint]
    batches = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
    if workers > 1 and len(batches) > 1:
        bind = factory.kw["bind"]
        url = bind.url.render_as_string(hide_password=False)
        config = registry.effective_config()
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
            for _ in pool.map(_analyze_batch_in_worker, repeat(url), repeat(config), batches):
                pass
    else:
        for batch in batches:
            with factory() as session, session.begin():
                analyze_apps(session, batch, registry)
    return AnalyzeStats(len(todo), len(rows) - len(todo), time.perf_counter() - started)


_WORKER: dict[str, tuple[sessionmaker[Session], Registry]] = {}


def _analyze_batch_in_worker(url: str, config: dict[str, Any], ids: list[int]) -> None:
    """One batch in a worker process, which keeps its engine and registry between batches."""
    state = _WORKER.get(url)
    if state is None:
        from sparkscope.db import make_engine, make_sessionmaker

        state = (make_sessionmaker(make_engine(url)), build_registry(config))
        _WORKER[url] = state
    factory, registry = state
    with factory() as session, session.begin():
        analyze_apps(session, ids, registry)
