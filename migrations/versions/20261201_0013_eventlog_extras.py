"""event logs: every task of a stage attempt (packed), the stage DAG, and the per-source record
of the logs read (path, size, modification time)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _app_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["application_id"],
        ["application.id"],
        name=op.f(f"fk_{table}_application_id_application"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "stage_task_times",
        sa.Column(
            "application_id",
            sa.Integer(),
            nullable=False,
            comment="application.id this row belongs to",
        ),
        sa.Column("stage_id", sa.Integer(), nullable=False, comment="stage id"),
        sa.Column("attempt_id", sa.Integer(), nullable=False, comment="stage attempt id"),
        sa.Column("num_tasks", sa.Integer(), nullable=False, comment="task attempts the log holds"),
        sa.Column(
            "num_stored", sa.Integer(), nullable=False, comment="task attempts in data (capped)"
        ),
        sa.Column(
            "first_launch_ms",
            sa.BigInteger(),
            nullable=True,
            comment="first task launch, epoch ms (launch offsets count from it)",
        ),
        sa.Column("format", sa.String(16), nullable=False, comment="encoding version"),
        sa.Column(
            "data",
            sa.LargeBinary(),
            nullable=False,
            comment="zlib: executor ids, then int64 columns (TASK_TIME_COLUMNS)",
        ),
        _app_fk("stage_task_times"),
        sa.PrimaryKeyConstraint(
            "application_id", "stage_id", "attempt_id", name=op.f("pk_stage_task_times")
        ),
        comment="all task times of a stage attempt, from the event log",
    )
    op.create_table(
        "stage_parent",
        sa.Column(
            "application_id",
            sa.Integer(),
            nullable=False,
            comment="application.id this row belongs to",
        ),
        sa.Column("stage_id", sa.Integer(), nullable=False, comment="stage id"),
        sa.Column("parent_id", sa.Integer(), nullable=False, comment="parent stage id"),
        _app_fk("stage_parent"),
        sa.PrimaryKeyConstraint(
            "application_id", "stage_id", "parent_id", name=op.f("pk_stage_parent")
        ),
        comment="stage DAG edges from the event log (skipped stages included)",
    )
    op.create_table(
        "eventlog_file",
        sa.Column(
            "server_id",
            sa.Integer(),
            nullable=False,
            comment="history_server.id of the event-log source",
        ),
        sa.Column("path", sa.String(2000), nullable=False, comment="log path or URL"),
        sa.Column("size", sa.BigInteger(), nullable=False, comment="bytes when read (all files)"),
        sa.Column(
            "mtime_ms", sa.BigInteger(), nullable=False, comment="modification time when read"
        ),
        sa.Column("app_id", sa.String(255), nullable=False, comment="application id the log holds"),
        sa.Column("attempt_id", sa.String(64), nullable=False, comment="attempt id ('' when none)"),
        sa.Column("state", sa.String(16), nullable=False, comment="loaded or failed"),
        sa.Column("read_at_ms", sa.BigInteger(), nullable=False, comment="when read, epoch ms"),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["history_server.id"],
            name=op.f("fk_eventlog_file_server_id_history_server"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("server_id", "path", name=op.f("pk_eventlog_file")),
        comment="event logs read per source, with the size and time read at",
    )


def downgrade() -> None:
    op.drop_table("eventlog_file")
    op.drop_table("stage_parent")
    op.drop_table("stage_task_times")
