"""Spark's own hierarchy under an application attempt: environment, executors, jobs,
stage attempts, their task distributions, per-executor summaries and a bounded set of task rows."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from sparkscope.models.base import Base, Json, _app_fk, _count
from sparkscope.models.fetch import HistoryServer

#: The sort keys of search's "impact" and "waste" orders, as their indexes hold them.
IMPACT_RANK_SQL = "coalesce(impact_core_hours, -1)"
WASTE_RANK_SQL = "coalesce(wasted_core_hours, -1)"


class Application(Base):
    """One attempt of a Spark application (attempt_id '' when the SHS lists none)."""

    __tablename__ = "application"
    __table_args__ = (
        UniqueConstraint("server_id", "app_id", "attempt_id"),
        Index("ix_application_start_time_ms", "start_time_ms"),
        Index("ix_application_end_time_ms", "end_time_ms"),
        Index("ix_application_name_start", "name", "start_time_ms"),
        Index("ix_application_spark_user", "spark_user"),
        Index("ix_application_queue", "queue"),
        Index("ix_application_app_id", "app_id"),
        Index("ix_application_worst_severity_start", "worst_severity", "start_time_ms"),
        Index("ix_application_duration_ms", "duration_ms"),
        Index("ix_application_wasted_core_hours", "wasted_core_hours"),
        # Search orders applications found through their findings by start time, reading start and
        # worst severity from here instead of each application's row (migration 0008).
        Index("ix_application_id_start_severity", "id", "start_time_ms", "worst_severity"),
        # The dashboard's part day (severities, waste by user and queue, ids for the findings)
        # as index-only scans; its whole days come from day_summary.
        Index(
            "ix_application_start_waste",
            "start_time_ms",
            postgresql_include=["id", "spark_user", "queue", "wasted_core_hours", "worst_severity"],
        ),
        # Search ranked by impact or by waste (unknown below every known figure), ties by start
        # and id: read in index order, in either direction (migration 0012). An expression on
        # both databases, since SQLite's indexes know no NULLS LAST.
        Index("ix_application_impact_rank", text(IMPACT_RANK_SQL), "start_time_ms", "id"),
        Index("ix_application_waste_rank", text(WASTE_RANK_SQL), "start_time_ms", "id"),
        {"comment": "one row per application attempt, with its totals"},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="surrogate key")
    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"), comment="history_server.id"
    )
    app_id: Mapped[str] = mapped_column(String(255), comment="Spark application id")
    attempt_id: Mapped[str] = mapped_column(
        String(64),
        default="",
        server_default="",
        comment="attempt id ('' when none, e.g. local mode)",
    )
    name: Mapped[str] = mapped_column(String(1000), comment="application name (spark.app.name)")
    spark_user: Mapped[str | None] = mapped_column(String(255), comment="user that ran it")
    queue: Mapped[str | None] = mapped_column(String(255), comment="spark.yarn.queue, if set")
    spark_version: Mapped[str | None] = mapped_column(String(64), comment="appSparkVersion")
    start_time_ms: Mapped[int | None] = mapped_column(BigInteger, comment="start, epoch ms")
    end_time_ms: Mapped[int | None] = mapped_column(BigInteger, comment="end, epoch ms")
    duration_ms: Mapped[int | None] = mapped_column(BigInteger, comment="wall-clock duration, ms")
    last_updated_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="SHS lastUpdated, epoch ms; a change means re-fetch"
    )
    completed: Mapped[bool] = mapped_column(Boolean, default=True, comment="attempt completed")
    fetched_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when loaded, epoch ms")
    num_jobs: Mapped[int] = _count("jobs")
    num_failed_jobs: Mapped[int] = _count("jobs that failed")
    num_stages: Mapped[int] = _count("stage attempts")
    num_failed_stages: Mapped[int] = _count("stage attempts that failed")
    num_tasks: Mapped[int] = _count("task attempts, summed over stage attempts")
    num_failed_tasks: Mapped[int] = _count("failed task attempts")
    num_executors: Mapped[int] = _count("executors, the driver excluded unless local mode")
    executor_run_time_ms: Mapped[int] = _count("sum of task executorRunTime, ms")
    executor_cpu_time_ns: Mapped[int] = _count("sum of task executorCpuTime, ns")
    jvm_gc_time_ms: Mapped[int] = _count("sum of task jvmGcTime, ms")
    input_bytes: Mapped[int] = _count("bytes read from input")
    output_bytes: Mapped[int] = _count("bytes written to output")
    shuffle_read_bytes: Mapped[int] = _count("shuffle bytes read")
    shuffle_write_bytes: Mapped[int] = _count("shuffle bytes written")
    memory_bytes_spilled: Mapped[int] = _count("bytes spilled from memory (deserialized size)")
    disk_bytes_spilled: Mapped[int] = _count("bytes spilled to disk (serialized size)")
    worst_severity: Mapped[int | None] = mapped_column(
        Integer, comment="max severity over the findings (0-4); NULL until analysed"
    )
    analysis_fingerprint: Mapped[str | None] = mapped_column(
        String(64), comment="fingerprint of the heuristics config that produced the findings"
    )
    allocated_core_hours: Mapped[float | None] = mapped_column(
        Float, comment="executor (and driver) cores x lifetime, hours"
    )
    wasted_core_hours: Mapped[float | None] = mapped_column(
        Float, comment="allocated core-hours not used by tasks"
    )
    impact_core_hours: Mapped[float | None] = mapped_column(
        Float,
        comment="core-hours of its costliest finding (0 when none has a cost); NULL until analysed",
    )
    raw: Mapped[dict[str, Any] | None] = mapped_column(Json, comment="listing entry as fetched")

    server: Mapped[HistoryServer] = relationship()


class EnvironmentProperty(Base):
    """One property of the application's /environment (secrets already redacted)."""

    __tablename__ = "environment_property"
    __table_args__ = {"comment": "Spark, Hadoop, system and metrics properties of an application"}

    application_id: Mapped[int] = _app_fk()
    section: Mapped[str] = mapped_column(
        String(32), primary_key=True, comment="spark, hadoop, system, metrics or runtime"
    )
    name: Mapped[str] = mapped_column(String(500), primary_key=True, comment="property key")
    value: Mapped[str | None] = mapped_column(Text, comment="property value, redacted if secret")


class Executor(Base):
    """One executor (or the driver) from /allexecutors, dead ones included."""

    __tablename__ = "executor"
    __table_args__ = {"comment": "executors and the driver, with their totals"}

    application_id: Mapped[int] = _app_fk()
    executor_id: Mapped[str] = mapped_column(
        String(64), primary_key=True, comment="'driver' or a number"
    )
    is_driver: Mapped[bool] = mapped_column(Boolean, comment="this is the driver's entry")
    host_port: Mapped[str | None] = mapped_column(String(500), comment="host:port")
    total_cores: Mapped[int] = _count("cores (task slots)")
    max_memory_bytes: Mapped[int] = _count("storage memory available, bytes")
    add_time_ms: Mapped[int | None] = mapped_column(BigInteger, comment="added, epoch ms")
    remove_time_ms: Mapped[int | None] = mapped_column(BigInteger, comment="removed, epoch ms")
    remove_reason: Mapped[str | None] = mapped_column(Text, comment="why it was removed")
    total_duration_ms: Mapped[int] = _count("sum of task durations, ms")
    total_gc_time_ms: Mapped[int] = _count("sum of task GC time, ms")
    total_tasks: Mapped[int] = _count("tasks run")
    failed_tasks: Mapped[int] = _count("tasks failed")
    completed_tasks: Mapped[int] = _count("tasks completed")
    total_input_bytes: Mapped[int] = _count("input bytes read")
    total_shuffle_read_bytes: Mapped[int] = _count("shuffle bytes read")
    total_shuffle_write_bytes: Mapped[int] = _count("shuffle bytes written")
    peak_jvm_heap_bytes: Mapped[int | None] = mapped_column(
        BigInteger, comment="peakMemoryMetrics.JVMHeapMemory"
    )
    peak_jvm_offheap_bytes: Mapped[int | None] = mapped_column(
        BigInteger, comment="peakMemoryMetrics.JVMOffHeapMemory"
    )
    raw: Mapped[dict[str, Any] | None] = mapped_column(Json, comment="executor JSON as fetched")


class Job(Base):
    """One Spark job."""

    __tablename__ = "job"
    __table_args__ = {"comment": "jobs of an application"}

    application_id: Mapped[int] = _app_fk()
    job_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="Spark job id")
    name: Mapped[str | None] = mapped_column(Text, comment="job name (call site)")
    description: Mapped[str | None] = mapped_column(Text, comment="job description")
    status: Mapped[str] = mapped_column(String(32), comment="SUCCEEDED, FAILED, RUNNING or UNKNOWN")
    submission_time_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="submitted, epoch ms"
    )
    completion_time_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="completed, epoch ms"
    )
    num_tasks: Mapped[int] = _count("tasks")
    num_failed_tasks: Mapped[int] = _count("failed tasks")
    num_failed_stages: Mapped[int] = _count("failed stages")
    stage_ids: Mapped[list[int] | None] = mapped_column(Json, comment="stage ids of this job")
    raw: Mapped[dict[str, Any] | None] = mapped_column(Json, comment="job JSON as fetched")


class Stage(Base):
    """One stage attempt with its task-metric totals."""

    __tablename__ = "stage"
    __table_args__ = {"comment": "stage attempts of an application"}

    application_id: Mapped[int] = _app_fk()
    stage_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="Spark stage id")
    attempt_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage attempt id")
    name: Mapped[str | None] = mapped_column(Text, comment="stage name (call site)")
    status: Mapped[str] = mapped_column(
        String(32), comment="COMPLETE, FAILED, SKIPPED, ACTIVE, PENDING"
    )
    num_tasks: Mapped[int] = _count("tasks")
    num_complete_tasks: Mapped[int] = _count("tasks completed")
    num_failed_tasks: Mapped[int] = _count("tasks failed")
    num_killed_tasks: Mapped[int] = _count("tasks killed")
    submission_time_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="submitted, epoch ms"
    )
    first_task_launched_time_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="first task launched, epoch ms"
    )
    completion_time_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="completed, epoch ms"
    )
    failure_reason: Mapped[str | None] = mapped_column(Text, comment="why the attempt failed")
    executor_run_time_ms: Mapped[int] = _count("sum of task run time, ms")
    executor_cpu_time_ns: Mapped[int] = _count("sum of task CPU time, ns")
    jvm_gc_time_ms: Mapped[int] = _count("sum of task GC time, ms")
    input_bytes: Mapped[int] = _count("input bytes")
    input_records: Mapped[int] = _count("input records")
    output_bytes: Mapped[int] = _count("output bytes")
    output_records: Mapped[int] = _count("output records")
    shuffle_read_bytes: Mapped[int] = _count("shuffle bytes read")
    shuffle_read_records: Mapped[int] = _count("shuffle records read")
    shuffle_write_bytes: Mapped[int] = _count("shuffle bytes written")
    shuffle_write_records: Mapped[int] = _count("shuffle records written")
    shuffle_fetch_wait_ms: Mapped[int] = _count("time tasks waited for shuffle data, ms")
    memory_bytes_spilled: Mapped[int] = _count("bytes spilled from memory")
    disk_bytes_spilled: Mapped[int] = _count("bytes spilled to disk")
    peak_execution_memory_bytes: Mapped[int] = _count("sum of task peak execution memory")
    raw: Mapped[dict[str, Any] | None] = mapped_column(Json, comment="stage JSON as fetched")


class StageTaskDistribution(Base):
    """Task-metric quantiles of one stage attempt (the SHS's taskSummary)."""

    __tablename__ = "stage_task_distribution"
    __table_args__ = (
        ForeignKeyConstraint(
            ["application_id", "stage_id", "attempt_id"],
            ["stage.application_id", "stage.stage_id", "stage.attempt_id"],
            ondelete="CASCADE",
        ),
        {"comment": "per-stage task quantile distributions"},
    )

    application_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="application.id")
    stage_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage id")
    attempt_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage attempt id")
    quantiles: Mapped[list[float]] = mapped_column(
        Json, comment="the quantile grid, e.g. 0, 0.05 .. 1"
    )
    metrics: Mapped[dict[str, list[float]]] = mapped_column(
        Json, comment="metric name -> one value per quantile (flattened, snake_case, units in name)"
    )
    executor_metrics: Mapped[dict[str, list[float]] | None] = mapped_column(
        Json, comment="per-executor totals of this stage at the same quantiles (task time, bytes)"
    )


class StageExecutor(Base):
    """What one executor did in one stage attempt."""

    __tablename__ = "stage_executor"
    __table_args__ = (
        ForeignKeyConstraint(
            ["application_id", "stage_id", "attempt_id"],
            ["stage.application_id", "stage.stage_id", "stage.attempt_id"],
            ondelete="CASCADE",
        ),
        {"comment": "per-stage per-executor summaries"},
    )

    application_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="application.id")
    stage_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage id")
    attempt_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage attempt id")
    executor_id: Mapped[str] = mapped_column(String(64), primary_key=True, comment="executor id")
    task_time_ms: Mapped[int] = _count("task time on this executor, ms")
    failed_tasks: Mapped[int] = _count("failed tasks")
    succeeded_tasks: Mapped[int] = _count("succeeded tasks")
    killed_tasks: Mapped[int] = _count("killed tasks")
    input_bytes: Mapped[int] = _count("input bytes")
    output_bytes: Mapped[int] = _count("output bytes")
    shuffle_read_bytes: Mapped[int] = _count("shuffle bytes read")
    shuffle_write_bytes: Mapped[int] = _count("shuffle bytes written")
    memory_bytes_spilled: Mapped[int] = _count("bytes spilled from memory")
    disk_bytes_spilled: Mapped[int] = _count("bytes spilled to disk")


class Task(Base):
    """A task attempt kept because it was among a stage's slowest or it failed."""

    __tablename__ = "task"
    __table_args__ = (
        ForeignKeyConstraint(
            ["application_id", "stage_id", "stage_attempt_id"],
            ["stage.application_id", "stage.stage_id", "stage.attempt_id"],
            ondelete="CASCADE",
        ),
        {"comment": "a bounded set of task attempts: the slowest and the failed"},
    )

    application_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="application.id")
    stage_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="stage id")
    stage_attempt_id: Mapped[int] = mapped_column(
        Integer, primary_key=True, comment="stage attempt id"
    )
    task_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, comment="Spark task id")
    index: Mapped[int] = mapped_column(Integer, comment="partition index")
    attempt: Mapped[int] = mapped_column(Integer, comment="task attempt number")
    executor_id: Mapped[str | None] = mapped_column(String(64), comment="executor id")
    host: Mapped[str | None] = mapped_column(String(500), comment="host")
    status: Mapped[str] = mapped_column(String(32), comment="SUCCESS, FAILED, KILLED, ...")
    kept_because: Mapped[str] = mapped_column(String(16), comment="slowest, failed or both")
    launch_time_ms: Mapped[int | None] = mapped_column(BigInteger, comment="launched, epoch ms")
    duration_ms: Mapped[int | None] = mapped_column(BigInteger, comment="duration, ms")
    executor_run_time_ms: Mapped[int | None] = mapped_column(BigInteger, comment="run time, ms")
    executor_cpu_time_ns: Mapped[int | None] = mapped_column(BigInteger, comment="CPU time, ns")
    jvm_gc_time_ms: Mapped[int | None] = mapped_column(BigInteger, comment="GC time, ms")
    input_bytes: Mapped[int] = _count("input bytes")
    shuffle_read_bytes: Mapped[int] = _count("shuffle bytes read")
    shuffle_write_bytes: Mapped[int] = _count("shuffle bytes written")
    shuffle_fetch_wait_ms: Mapped[int] = _count("shuffle fetch wait, ms")
    memory_bytes_spilled: Mapped[int] = _count("bytes spilled from memory")
    disk_bytes_spilled: Mapped[int] = _count("bytes spilled to disk")
    error_message: Mapped[str | None] = mapped_column(Text, comment="error of a failed attempt")
    raw: Mapped[dict[str, Any] | None] = mapped_column(Json, comment="task JSON as fetched")
