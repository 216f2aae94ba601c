"""sql executions: each application's /sql outcome, its SQL executions (bounded plan text, graph
edges), their plan nodes with parsed metrics and operator details, and the stages each execution
and node ran in; all children of the application, replaced by a re-fetch

Applications stored before this revision have no rows here until they are fetched again.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "sql_execution",
        sa.Column(
            "application_id",
            sa.Integer(),
            nullable=False,
            comment="application.id this row belongs to",
        ),
        sa.Column(
            "execution_id", sa.BigInteger(), nullable=False, comment="Spark SQL execution id"
        ),
        sa.Column(
            "status",
            sa.String(length=32),
            nullable=False,
            comment="COMPLETED, FAILED, RUNNING, ...",
        ),
        sa.Column(
            "description", sa.Text(), nullable=False, comment="description (first 4,000 chars)"
        ),
        sa.Column(
            "submission_time_ms", sa.BigInteger(), nullable=True, comment="submitted, epoch ms"
        ),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True, comment="wall-clock, ms"),
        sa.Column("success_job_ids", _json(), nullable=False, comment="jobs that succeeded"),
        sa.Column("failed_job_ids", _json(), nullable=False, comment="jobs that failed"),
        sa.Column("running_job_ids", _json(), nullable=False, comment="jobs still running"),
        sa.Column(
            "edges",
            _json(),
            nullable=False,
            comment="plan graph edges [child node id, parent node id]",
        ),
        sa.Column(
            "plan_text", sa.Text(), nullable=True, comment="physical plan description, first 64 KiB"
        ),
        sa.Column(
            "plan_chars", sa.Integer(), nullable=False, comment="length of the whole plan text"
        ),
        sa.Column(
            "adaptive", sa.Boolean(), nullable=False, comment="planned by adaptive execution"
        ),
        sa.Column("error_message", sa.Text(), nullable=True, comment="error of a failed execution"),
        sa.Column(
            "notes", _json(), nullable=True, comment="what of the execution could not be read"
        ),
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["application.id"],
            name=op.f("fk_sql_execution_application_id_application"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("application_id", "execution_id", name=op.f("pk_sql_execution")),
        comment="SQL executions of an application",
    )
    op.create_table(
        "sql_fetch",
        sa.Column(
            "application_id",
            sa.Integer(),
            nullable=False,
            comment="application.id this row belongs to",
        ),
        sa.Column(
            "status",
            sa.String(length=16),
            nullable=False,
            comment="ok, partial (see notes), none, unavailable (no /sql) or failed",
        ),
        sa.Column("executions", sa.Integer(), nullable=False, comment="executions stored"),
        sa.Column("pages", sa.Integer(), nullable=False, comment="/sql pages requested"),
        sa.Column("notes", _json(), nullable=True, comment="what could not be read"),
        sa.Column("error", sa.Text(), nullable=True, comment="why the answer failed"),
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["application.id"],
            name=op.f("fk_sql_fetch_application_id_application"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("application_id", name=op.f("pk_sql_fetch")),
        comment="outcome of an application's /sql answer",
    )
    op.create_table(
        "sql_node",
        sa.Column("application_id", sa.Integer(), nullable=False, comment="application.id"),
        sa.Column("execution_id", sa.BigInteger(), nullable=False, comment="SQL execution id"),
        sa.Column("node_id", sa.BigInteger(), nullable=False, comment="graph node id"),
        sa.Column(
            "name", sa.String(length=500), nullable=False, comment="operator, e.g. SortMergeJoin"
        ),
        sa.Column("codegen_id", sa.Integer(), nullable=True, comment="whole-stage codegen id"),
        sa.Column("op_id", sa.Integer(), nullable=True, comment="operator id (n) in the plan text"),
        sa.Column(
            "metrics",
            _json(),
            nullable=False,
            comment="name -> [unit, total, min, med, max, stage id, stage attempt, task id, raw]; bytes, ms or count; raw only when unreadable",
        ),
        sa.Column(
            "detail",
            _json(),
            nullable=True,
            comment="the operator's plan-text fields (Location, PartitionFilters, ...)",
        ),
        sa.Column(
            "in_cached_plan",
            sa.Boolean(),
            nullable=False,
            comment="below an InMemoryTableScan: the cached plan, not run here",
        ),
        sa.ForeignKeyConstraint(
            ["application_id", "execution_id"],
            ["sql_execution.application_id", "sql_execution.execution_id"],
            name=op.f("fk_sql_node_application_id_sql_execution"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "application_id", "execution_id", "node_id", name=op.f("pk_sql_node")
        ),
        comment="plan graph nodes of the SQL executions",
    )
    op.create_table(
        "sql_stage",
        sa.Column("application_id", sa.Integer(), nullable=False, comment="application.id"),
        sa.Column("execution_id", sa.BigInteger(), nullable=False, comment="SQL execution id"),
        sa.Column("stage_id", sa.Integer(), nullable=False, comment="Spark stage id"),
        sa.Column(
            "node_ids",
            _json(),
            nullable=False,
            comment="graph nodes that ran in the stage (empty: linked by job only)",
        ),
        sa.ForeignKeyConstraint(
            ["application_id", "execution_id"],
            ["sql_execution.application_id", "sql_execution.execution_id"],
            name=op.f("fk_sql_stage_application_id_sql_execution"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "application_id", "execution_id", "stage_id", name=op.f("pk_sql_stage")
        ),
        comment="stage links of the SQL executions and their plan nodes",
    )


def downgrade() -> None:
    op.drop_table("sql_stage")
    op.drop_table("sql_node")
    op.drop_table("sql_fetch")
    op.drop_table("sql_execution")
