"""Database schema: Spark's own hierarchy, keyed by Spark's natural keys.

history server -> application attempt -> environment properties, executors, jobs, stage attempts
(-> task quantile distributions, per-executor summaries, a bounded set of task rows), analysis results.
All Spark timestamps are epoch milliseconds (UTC) in ``*_ms`` columns; sizes are bytes.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: JSON on SQLite, JSONB on PostgreSQL.
Json = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    """Declarative base with a naming convention, so Alembic gets stable constraint names."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _app_fk() -> Mapped[int]:
    return mapped_column(
        ForeignKey("application.id", ondelete="CASCADE"),
        primary_key=True,
        comment="application.id this row belongs to",
    )


def _count(comment: str) -> Mapped[int]:
    return mapped_column(BigInteger, nullable=False, default=0, server_default="0", comment=comment)


class HistoryServer(Base):
    """A Spark History Server that applications are fetched from."""

    __tablename__ = "history_server"
    __table_args__ = {"comment": "Spark History Servers applications come from"}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="surrogate key")
    name: Mapped[str] = mapped_column(String(200), unique=True, comment="configured short name")
    url: Mapped[str] = mapped_column(String(1000), comment="base URL (or folder) last fetched from")
    created_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when first seen, epoch ms")


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


class AnalysisResult(Base):
    """One finding (a heuristic result above NONE) of one application: what search and dashboards
    filter, count and badge. Every result, NONE ones included, is in :class:`Analysis`."""

    __tablename__ = "analysis_result"
    __table_args__ = (
        # Search's heuristic filter: the applications with a finding of a heuristic at a severity,
        # from the index alone (migration 0008).
        Index(
            "ix_analysis_result_heuristic_severity_app", "heuristic", "severity", "application_id"
        ),
        {
            "comment": "findings above NONE: one row per application x heuristic that found something"
        },
    )

    application_id: Mapped[int] = _app_fk()
    heuristic: Mapped[str] = mapped_column(String(64), primary_key=True, comment="heuristic name")
    severity: Mapped[int] = mapped_column(
        Integer, comment="1 LOW, 2 MODERATE, 3 SEVERE, 4 CRITICAL"
    )
    value: Mapped[float | None] = mapped_column(
        Float, comment="the measured value the severity came from"
    )
    title: Mapped[str] = mapped_column(Text, comment="one-line summary")
    impact_core_hours: Mapped[float | None] = mapped_column(
        Float, comment="estimated core-hours the problem cost"
    )
    impact_wall_seconds: Mapped[float | None] = mapped_column(
        Float, comment="estimated wall-clock seconds the problem cost"
    )


class Analysis(Base):
    """Every heuristic result of one application, as one JSON document.

    The config that produced them is ``application.analysis_fingerprint``. One row per application
    rather than one per heuristic: re-scoring writes one row per application, and the application
    page reads one.
    """

    __tablename__ = "analysis"
    __table_args__ = {"comment": "all heuristic results of an application, NONE ones included"}

    application_id: Mapped[int] = _app_fk()
    analyzed_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="when these results were computed (a re-score giving the same keeps it)"
    )
    results: Mapped[str] = mapped_column(
        Text,
        comment="JSON array of results (name, severity, value, title, details, advice, impact); "
        "their thresholds are the params of the config the application's fingerprint names",
    )


class AnalysisInput(Base):
    """The heuristic inputs of one application, kept ready to score (a derived cache).

    Built from the application's rows when it is fetched or first analysed; re-scoring reads this
    one row instead of about a hundred. ``format`` names the encoding and the input fields it was
    written with: a row of another format is ignored and rebuilt from the rows, which stay the
    source of truth.
    """

    __tablename__ = "analysis_input"
    __table_args__ = {"comment": "heuristic inputs per application, encoded (rebuildable cache)"}

    application_id: Mapped[int] = _app_fk()
    format: Mapped[str] = mapped_column(String(64), comment="encoding and input-fields version")
    data: Mapped[bytes] = mapped_column(LargeBinary, comment="the encoded inputs")


class HeuristicsConfig(Base):
    """A heuristics config that results were computed under, by fingerprint.

    ``digests`` lets a re-score under a new config keep the stored results of the heuristics
    whose params did not change (heuristics are pure functions of the application and params).
    """

    __tablename__ = "heuristics_config"
    __table_args__ = {"comment": "heuristics configs results were computed under"}

    fingerprint: Mapped[str] = mapped_column(
        String(64), primary_key=True, comment="fingerprint of the config (and engine version)"
    )
    digests: Mapped[str] = mapped_column(
        Text, comment="JSON: heuristic name -> digest of its params and the engine version"
    )
    config: Mapped[str] = mapped_column(Text, comment="JSON: the effective config")
    first_used_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="when results were first computed under it, epoch ms"
    )


class FetchRun(Base):
    """One run of the fetcher against one server."""

    __tablename__ = "fetch_run"
    __table_args__ = (
        Index("ix_fetch_run_server_started", "server_id", "started_at_ms"),
        {"comment": "fetch runs with their counts and errors"},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="surrogate key")
    server_id: Mapped[int | None] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"), comment="history_server.id"
    )
    started_at_ms: Mapped[int] = mapped_column(BigInteger, comment="start, epoch ms")
    finished_at_ms: Mapped[int | None] = mapped_column(BigInteger, comment="end, epoch ms")
    status: Mapped[str] = mapped_column(
        String(16), comment="running, ok, partial (some apps failed), failed or locked"
    )
    apps_seen: Mapped[int] = _count("completed apps listed")
    apps_loaded: Mapped[int] = _count("apps loaded")
    apps_skipped: Mapped[int] = _count("apps already current")
    apps_failed: Mapped[int] = _count("apps that failed")
    requests: Mapped[int] = _count("HTTP requests made")
    bytes: Mapped[int] = _count("response bytes read")
    error: Mapped[str | None] = mapped_column(Text, comment="why the run failed, if it did")
    failed_apps: Mapped[list[Any] | None] = mapped_column(
        Json, comment="[app id, error] of failed apps"
    )

    server: Mapped[HistoryServer | None] = relationship()


class FetchFailure(Base):
    """An application that failed to load, retried on later runs up to a bound."""

    __tablename__ = "fetch_failure"
    __table_args__ = {"comment": "apps that failed to fetch or load, with the last reason"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    app_id: Mapped[str] = mapped_column(
        String(255), primary_key=True, comment="Spark application id"
    )
    attempt_id: Mapped[str] = mapped_column(
        String(64), primary_key=True, comment="attempt id or ''"
    )
    failures: Mapped[int] = mapped_column(Integer, comment="how many runs failed on it")
    last_error: Mapped[str] = mapped_column(Text, comment="the last error")
    last_failed_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="when it last failed, epoch ms"
    )
    last_updated_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="SHS lastUpdated at that time; a change resets the count"
    )


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


# --- fleet summary (dashboard at scale)


class DaySummary(Base):
    """Per UTC day of start, the fleet's counts and sums along one dimension: what the dashboard
    adds up instead of scanning every application of its period.

    Maintained by :mod:`sparkscope.summary` whenever applications are loaded, analysed or deleted;
    rebuilt from scratch by :func:`sparkscope.summary.rebuild`.
    """

    __tablename__ = "day_summary"
    __table_args__ = {
        "comment": "per day x (severity | user | queue | heuristic): application counts and sums"
    }

    dimension: Mapped[str] = mapped_column(
        String(16), primary_key=True, comment="severity, user, queue or heuristic"
    )
    day: Mapped[int] = mapped_column(
        Integer, primary_key=True, comment="start_time_ms // 86400000 (UTC day); -1 when unknown"
    )
    key: Mapped[str] = mapped_column(
        String(255),
        primary_key=True,
        comment="worst severity (0-4, '' unanalysed), user, queue ('' none) or heuristic name",
    )
    apps: Mapped[int] = _count("applications (heuristic: findings above NONE) of the day and key")
    executors: Mapped[int] = _count("sum of num_executors")
    jobs: Mapped[int] = _count("sum of num_jobs")
    stages: Mapped[int] = _count("sum of num_stages")
    tasks: Mapped[int] = _count("sum of num_tasks")
    wasted_core_hours: Mapped[float] = mapped_column(
        Float, nullable=False, default=0.0, server_default="0", comment="sum of wasted core-hours"
    )
    wasted_apps: Mapped[int] = _count("applications whose wasted core-hours are known")


# --- fetch watermark (issue 10)


class FetchWatermark(Base):
    """How much of one server's listing is loaded: the incremental fetch resumes from here."""

    __tablename__ = "fetch_watermark"
    __table_args__ = {
        "comment": "per server: the end-time range within which every listed app is stored or "
        "recorded as failed"
    }

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    covered_from_ms: Mapped[int] = mapped_column(
        BigInteger, comment="lowest end time of the covered range, epoch ms (0: from the start)"
    )
    covered_to_ms: Mapped[int] = mapped_column(
        BigInteger, comment="highest end time of the covered range, epoch ms: the watermark"
    )
    reconciled_at_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="when a listing of the reconciliation window last completed, epoch ms"
    )
    updated_at_ms: Mapped[int] = mapped_column(BigInteger, comment="last change, epoch ms")


# --- predictions (recurring applications: expected duration, verdict, next-run forecast)


class RunPrediction(Base):
    """The expected duration of one run, from the earlier runs of its recurring key only."""

    __tablename__ = "run_prediction"
    __table_args__ = (
        Index("ix_run_prediction_key_start", "server_id", "key", "start_time_ms"),
        Index("ix_run_prediction_verdict_start", "verdict", "start_time_ms"),
        {"comment": "expected duration, interval and verdict per run (computed at fetch/analyze)"},
    )

    application_id: Mapped[int] = _app_fk()
    server_id: Mapped[int] = mapped_column(Integer, comment="history_server.id")
    key: Mapped[str] = mapped_column(String(1000), comment="recurring key (normalised name)")
    start_time_ms: Mapped[int] = mapped_column(BigInteger, comment="run start, epoch ms")
    duration_ms: Mapped[int | None] = mapped_column(BigInteger, comment="actual duration, ms")
    succeeded: Mapped[bool] = mapped_column(Boolean, comment="may train models")
    fetched_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="application.fetched_at_ms this was computed from"
    )
    features: Mapped[dict[str, Any]] = mapped_column(Json, comment="run features (RunFeatures)")
    vector: Mapped[list[float]] = mapped_column(
        Json, comment="the numeric features, in the models' order (what training reads)"
    )
    candidates: Mapped[dict[str, float]] = mapped_column(
        Json, comment="every model's out-of-sample prediction, ms"
    )
    forecasts: Mapped[dict[str, float]] = mapped_column(
        Json, comment="every forecast candidate for this run made before it, ms"
    )
    forecast_ms: Mapped[float | None] = mapped_column(
        Float, comment="served next-run forecast made before this run, ms"
    )
    expected_ms: Mapped[float | None] = mapped_column(Float, comment="served prediction, ms")
    low_ms: Mapped[float | None] = mapped_column(Float, comment="interval bottom, ms")
    high_ms: Mapped[float | None] = mapped_column(Float, comment="interval top, ms")
    level: Mapped[float] = mapped_column(Float, comment="nominal interval level")
    model: Mapped[str] = mapped_column(String(32), comment="serving model")
    n_train: Mapped[int] = mapped_column(Integer, comment="successful earlier runs trained on")
    verdict: Mapped[str] = mapped_column(
        String(24), comment="normal, regression, improvement or insufficient_history"
    )
    excess_pct: Mapped[float | None] = mapped_column(Float, comment="actual vs expected, %")
    causes: Mapped[list[str]] = mapped_column(Json, comment="causes of a regression")
    computed_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when computed, epoch ms")


class RecurringForecast(Base):
    """The next-run forecast of one recurring key."""

    __tablename__ = "recurring_forecast"
    __table_args__ = {"comment": "next-run duration forecast per recurring key"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    key: Mapped[str] = mapped_column(String(1000), primary_key=True, comment="recurring key")
    n_runs: Mapped[int] = mapped_column(Integer, comment="runs of the key it was computed from")
    expected_ms: Mapped[float | None] = mapped_column(Float, comment="forecast, ms")
    low_ms: Mapped[float | None] = mapped_column(Float, comment="interval bottom, ms")
    high_ms: Mapped[float | None] = mapped_column(Float, comment="interval top, ms")
    level: Mapped[float] = mapped_column(Float, comment="nominal interval level")
    model: Mapped[str] = mapped_column(String(32), comment="serving forecast model")
    next_start_ms: Mapped[int | None] = mapped_column(BigInteger, comment="expected next start")
    computed_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when computed, epoch ms")


class PredictionModel(Base):
    """The class-aware model last fitted for a server, reused until its training set grew."""

    __tablename__ = "prediction_model"
    __table_args__ = {"comment": "fitted class-aware model per server (a rebuildable cache)"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    fitted_before_ms: Mapped[int] = mapped_column(
        BigInteger, comment="every training run started before this, epoch ms"
    )
    n_train: Mapped[int] = mapped_column(Integer, comment="successful runs it was fitted on")
    blob: Mapped[bytes] = mapped_column(
        LargeBinary, comment="the pickled model (written here only)"
    )
    fitted_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when fitted, epoch ms")


# --- what-if and sizing (issue 14)


class WhatIfModel(Base):
    """The history-calibrated duration model of one recurring application (name per server),
    fitted at fetch/analyze time so that pages only evaluate it."""

    __tablename__ = "whatif_model"
    __table_args__ = {"comment": "history-calibrated what-if models, one per name and server"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    name: Mapped[str] = mapped_column(String(1000), primary_key=True, comment="application name")
    fitted_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when fitted, epoch ms")
    n_train: Mapped[int] = mapped_column(Integer, comment="runs it was fitted on")
    model: Mapped[str] = mapped_column(
        Text, comment="JSON: terms, coefficients, reference input, out-of-sample residuals"
    )


class WhatIfInput(Base):
    """The what-if input of one application (stages' task-time quantiles, totals, slowest tasks,
    times, executors), encoded at fetch time so a what-if request reads one row."""

    __tablename__ = "whatif_input"
    __table_args__ = {"comment": "encoded what-if inputs, one row per application"}

    application_id: Mapped[int] = mapped_column(
        ForeignKey("application.id", ondelete="CASCADE"),
        primary_key=True,
        comment="application.id",
    )
    format: Mapped[str] = mapped_column(String(64), comment="encoding version")
    data: Mapped[bytes] = mapped_column(LargeBinary, comment="zlib-compressed marshal of tuples")


# --- application names (name search at scale)


class ApplicationName(Base):
    """Every distinct application name, for name search: a substring match (ILIKE '%x%') runs
    over the distinct names (20,000 for a million applications) and the applications are then
    read by name from ``ix_application_name_start``.

    Filled by database triggers on ``application`` (insert, and update of ``name``), created by
    migration 0008; names of deleted applications may stay (they match no application).
    """

    __tablename__ = "application_name"
    __table_args__ = (
        # Case-insensitive substring search on PostgreSQL; a plain index on SQLite, which has no
        # trigram indexes (its scan of the small table is what it does instead).
        Index(
            "ix_application_name_name_trgm",
            "name",
            postgresql_using="gin",
            postgresql_ops={"name": "gin_trgm_ops"},
            postgresql_with={"fastupdate": "off"},
        ),
        {"comment": "distinct application names (kept by triggers on application)"},
    )

    name: Mapped[str] = mapped_column(String(1000), primary_key=True, comment="application name")
