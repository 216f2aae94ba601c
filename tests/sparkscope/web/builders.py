"""Builders that insert realistic rows through the ORM: a server, applications with stages,
executors, environment properties and findings."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.db import now_ms
from sparkscope.models.analysis import Analysis, AnalysisResult
from sparkscope.models.application import Application, EnvironmentProperty, Executor, Stage
from sparkscope.models.fetch import FetchRun, HistoryServer

HOUR_MS = 3_600_000


def server(
    session: Session, name: str = "prod", url: str = "http://shs.example:18080"
) -> HistoryServer:
    """A History Server row."""
    row = HistoryServer(name=name, url=url, created_at_ms=now_ms())
    session.add(row)
    session.flush()
    return row


def fetch_run(
    session: Session, srv: HistoryServer, status: str = "ok", loaded: int = 3
) -> FetchRun:
    """A finished fetch run of ``srv``."""
    started = now_ms() - 600_000
    row = FetchRun(
        server_id=srv.id,
        started_at_ms=started,
        finished_at_ms=started + 30_000,
        status=status,
        apps_seen=loaded,
        apps_loaded=loaded,
    )
    session.add(row)
    session.flush()
    return row


def application(
    session: Session,
    srv: HistoryServer,
    app_id: str,
    name: str = "daily_sales_etl",
    user: str = "alice",
    queue: str | None = "etl",
    start_ms: int | None = None,
    duration_ms: int = 20 * 60_000,
    attempt_id: str = "",
    num_stages: int = 3,
    num_executors: int = 2,
    props: dict[str, str] | None = None,
    **totals: Any,
) -> Application:
    """An application with stages, executors (and the driver) and Spark properties."""
    start = start_ms if start_ms is not None else now_ms() - 2 * HOUR_MS
    end = start + duration_ms
    run_ms = totals.pop("executor_run_time_ms", duration_ms * num_executors * 2 // 3)
    app = Application(
        server_id=srv.id,
        app_id=app_id,
        attempt_id=attempt_id,
        name=name,
        spark_user=user,
        queue=queue,
        spark_version="4.0.1",
        start_time_ms=start,
        end_time_ms=end,
        duration_ms=duration_ms,
        last_updated_ms=end,
        completed=True,
        fetched_at_ms=end + 1000,
        num_jobs=totals.pop("num_jobs", 2),
        num_stages=num_stages,
        num_tasks=totals.pop("num_tasks", num_stages * 200),
        num_executors=num_executors,
        executor_run_time_ms=run_ms,
        executor_cpu_time_ns=totals.pop("executor_cpu_time_ns", run_ms * 800_000),
        jvm_gc_time_ms=totals.pop("jvm_gc_time_ms", run_ms // 20),
        input_bytes=totals.pop("input_bytes", 12 * 1024**3),
        output_bytes=totals.pop("output_bytes", 2 * 1024**3),
        shuffle_read_bytes=totals.pop("shuffle_read_bytes", 3 * 1024**3),
        shuffle_write_bytes=totals.pop("shuffle_write_bytes", 3 * 1024**3),
        memory_bytes_spilled=totals.pop("memory_bytes_spilled", 0),
        disk_bytes_spilled=totals.pop("disk_bytes_spilled", 0),
        allocated_core_hours=totals.pop("allocated_core_hours", None),
        wasted_core_hours=totals.pop("wasted_core_hours", None),
        **totals,
    )
    session.add(app)
    session.flush()
    spark_props = {
        "spark.app.name": name,
        "spark.master": "yarn",
        "spark.executor.memory": "4g",
        "spark.executor.cores": "4",
        "spark.executor.instances": str(num_executors),
        "spark.sql.shuffle.partitions": "200",
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.dynamicAllocation.enabled": "false",
    }
    if queue:
        spark_props["spark.yarn.queue"] = queue
    spark_props.update(props or {})
    for key, value in spark_props.items():
        session.add(
            EnvironmentProperty(application_id=app.id, section="spark", name=key, value=value)
        )
    session.add(
        EnvironmentProperty(
            application_id=app.id, section="system", name="java.version", value="17.0.12"
        )
    )
    session.add(
        Executor(
            application_id=app.id,
            executor_id="driver",
            is_driver=True,
            host_port="driver-host:40000",
            total_cores=0,
            max_memory_bytes=2 * 1024**3,
            add_time_ms=start,
        )
    )
    for i in range(1, num_executors + 1):
        session.add(
            Executor(
                application_id=app.id,
                executor_id=str(i),
                is_driver=False,
                host_port=f"worker-{i}:41000",
                total_cores=4,
                max_memory_bytes=2 * 1024**3,
                add_time_ms=start + 5000,
                remove_time_ms=end,
                total_duration_ms=run_ms // max(1, num_executors),
                total_gc_time_ms=run_ms // max(1, num_executors) // 20,
                total_tasks=num_stages * 200 // max(1, num_executors),
                completed_tasks=num_stages * 200 // max(1, num_executors),
                total_input_bytes=12 * 1024**3 // max(1, num_executors),
                peak_jvm_heap_bytes=3 * 1024**3,
                peak_jvm_offheap_bytes=200 * 1024**2,
            )
        )
    step = duration_ms // max(1, num_stages + 1)
    for s in range(num_stages):
        submitted = start + 10_000 + s * step
        session.add(
            Stage(
                application_id=app.id,
                stage_id=s,
                attempt_id=0,
                name=f"save at etl.py:{100 + s}",
                status="COMPLETE",
                num_tasks=200,
                num_complete_tasks=200,
                submission_time_ms=submitted,
                first_task_launched_time_ms=submitted + 50,
                completion_time_ms=submitted + step - 1000,
                executor_run_time_ms=run_ms // max(1, num_stages),
                executor_cpu_time_ns=run_ms // max(1, num_stages) * 800_000,
                jvm_gc_time_ms=run_ms // max(1, num_stages) // 20,
                input_bytes=(12 * 1024**3) // max(1, num_stages),
                shuffle_read_bytes=1024**3,
                shuffle_write_bytes=1024**3,
            )
        )
    session.flush()
    return app


def finding(
    session: Session,
    app: Application,
    heuristic: str,
    severity: Severity,
    title: str,
    value: float | None = 3.5,
    impact_core_hours: float | None = None,
    impact_wall_seconds: float | None = None,
    details: dict[str, Any] | None = None,
    advice: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """A stored result, as the analysis stores it: added to the application's results document
    (shaped as `HeuristicResult.to_dict()`), and a finding row when above NONE."""
    impact = (
        None
        if impact_core_hours is None and impact_wall_seconds is None
        else {
            "wall_seconds": impact_wall_seconds,
            "core_hours": impact_core_hours,
            "formula": "straggler time beyond the median × idle slots",
        }
    )
    result = {
        "name": heuristic,
        "severity": int(severity),
        "value": value,
        "title": title,
        "thresholds": {"low": 2.0, "moderate": 4.0, "severe": 8.0, "critical": 16.0},
        "details": details,
        "advice": advice,
        "impact": impact,
        **extra,  # e.g. conf / stages, fields of newer results
    }
    document = session.get(Analysis, app.id)
    if document is None:
        document = Analysis(application_id=app.id, analyzed_at_ms=now_ms(), results="[]")
        session.add(document)
    document.results = json.dumps([*json.loads(document.results), result])
    if severity > Severity.NONE:
        session.add(
            AnalysisResult(
                application_id=app.id,
                heuristic=heuristic,
                severity=int(severity),
                value=value,
                title=title,
                impact_core_hours=impact_core_hours,
                impact_wall_seconds=impact_wall_seconds,
            )
        )
    session.flush()
    return result


def mark_analyzed(
    session: Session, app: Application, fingerprint: str, worst: Severity | None = None
) -> None:
    """Record that ``app`` was scored under ``fingerprint`` (so pages do not re-score it)."""
    session.flush()
    rows = session.query(AnalysisResult).filter_by(application_id=app.id).all()
    if worst is None:
        worst = Severity(max((r.severity for r in rows), default=0))
    # As the analysis stores it: the core-hours of the costliest finding, 0 when none has any.
    app.impact_core_hours = max(
        (r.impact_core_hours for r in rows if r.impact_core_hours is not None), default=0.0
    )
    app.worst_severity = int(worst)
    app.analysis_fingerprint = fingerprint
    session.flush()
