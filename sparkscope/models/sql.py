"""The SQL part of an application: how its ``/sql`` answer went, its SQL executions, their plan
nodes with parsed metrics, and which stages each execution and node ran in."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, ForeignKeyConstraint, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base, Json, _app_fk


class SqlFetch(Base):
    """How the application's SQL executions were fetched (one row per fetched application)."""

    __tablename__ = "sql_fetch"
    __table_args__ = {"comment": "outcome of an application's /sql answer"}

    application_id: Mapped[int] = _app_fk()
    status: Mapped[str] = mapped_column(
        String(16), comment="ok, partial (see notes), none, unavailable (no /sql) or failed"
    )
    executions: Mapped[int] = mapped_column(Integer, comment="executions stored")
    pages: Mapped[int] = mapped_column(Integer, comment="/sql pages requested")
    notes: Mapped[list[str] | None] = mapped_column(Json, comment="what could not be read")
    error: Mapped[str | None] = mapped_column(Text, comment="why the answer failed")


class SqlExecution(Base):
    """One SQL execution (a query or DataFrame action) with its plan text and graph edges."""

    __tablename__ = "sql_execution"
    __table_args__ = {"comment": "SQL executions of an application"}

    application_id: Mapped[int] = _app_fk()
    execution_id: Mapped[int] = mapped_column(
        BigInteger, primary_key=True, comment="Spark SQL execution id"
    )
    status: Mapped[str] = mapped_column(String(32), comment="COMPLETED, FAILED, RUNNING, ...")
    description: Mapped[str] = mapped_column(Text, comment="description (first 4,000 chars)")
    submission_time_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="submitted, epoch ms"
    )
    duration_ms: Mapped[int | None] = mapped_column(BigInteger, comment="wall-clock, ms")
    success_job_ids: Mapped[list[int]] = mapped_column(Json, comment="jobs that succeeded")
    failed_job_ids: Mapped[list[int]] = mapped_column(Json, comment="jobs that failed")
    running_job_ids: Mapped[list[int]] = mapped_column(Json, comment="jobs still running")
    edges: Mapped[list[list[int]]] = mapped_column(
        Json, comment="plan graph edges [child node id, parent node id]"
    )
    plan_text: Mapped[str | None] = mapped_column(
        Text, comment="physical plan description, first 64 KiB"
    )
    plan_chars: Mapped[int] = mapped_column(Integer, comment="length of the whole plan text")
    adaptive: Mapped[bool] = mapped_column(Boolean, comment="planned by adaptive execution")
    error_message: Mapped[str | None] = mapped_column(Text, comment="error of a failed execution")
    notes: Mapped[list[str] | None] = mapped_column(
        Json, comment="what of the execution could not be read"
    )


class SqlNode(Base):
    """One node of an execution's plan graph with its metrics parsed."""

    __tablename__ = "sql_node"
    __table_args__ = (
        ForeignKeyConstraint(
            ["application_id", "execution_id"],
            ["sql_execution.application_id", "sql_execution.execution_id"],
            ondelete="CASCADE",
        ),
        {"comment": "plan graph nodes of the SQL executions"},
    )

    application_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="application.id")
    execution_id: Mapped[int] = mapped_column(
        BigInteger, primary_key=True, comment="SQL execution id"
    )
    node_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, comment="graph node id")
    name: Mapped[str] = mapped_column(String(500), comment="operator, e.g. SortMergeJoin")
    codegen_id: Mapped[int | None] = mapped_column(Integer, comment="whole-stage codegen id")
    op_id: Mapped[int | None] = mapped_column(Integer, comment="operator id (n) in the plan text")
    metrics: Mapped[dict[str, list[Any]]] = mapped_column(
        Json,
        comment="name -> [unit, total, min, med, max, stage id, stage attempt, task id, raw]; "
        "bytes, ms or count; raw only when unreadable",
    )
    detail: Mapped[dict[str, str] | None] = mapped_column(
        Json, comment="the operator's plan-text fields (Location, PartitionFilters, ...)"
    )
    in_cached_plan: Mapped[bool] = mapped_column(
        Boolean, comment="below an InMemoryTableScan: the cached plan, not run here"
    )


class SqlStage(Base):
    """A stage one SQL execution ran, with the nodes of its plan that ran in it."""

    __tablename__ = "sql_stage"
    __table_args__ = (
        ForeignKeyConstraint(
            ["application_id", "execution_id"],
            ["sql_execution.application_id", "sql_execution.execution_id"],
            ondelete="CASCADE",
        ),
        {"comment": "stage links of the SQL executions and their plan nodes"},
    )

    application_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="application.id")
    execution_id: Mapped[int] = mapped_column(
        BigInteger, primary_key=True, comment="SQL execution id"
    )
    stage_id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="Spark stage id")
    node_ids: Mapped[list[int]] = mapped_column(
        Json, comment="graph nodes that ran in the stage (empty: linked by job only)"
    )
