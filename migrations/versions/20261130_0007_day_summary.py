"""day summary: per-day counts and sums the dashboard adds up instead of scanning its period

One row per UTC day of start x dimension (worst severity, user, queue, heuristic of a finding) x
key, with the number of applications (findings for heuristics), their totals and wasted
core-hours. The upgrade fills it from the stored applications; from then on the loader and the
analysis keep it up to date (sparkscope.accounting.day_summary).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_DAY = "CASE WHEN a.start_time_ms >= 0 THEN a.start_time_ms / 86400000 ELSE -1 END"
_SUMS = (
    "COUNT(*), COALESCE(SUM(a.num_executors), 0), COALESCE(SUM(a.num_jobs), 0), "
    "COALESCE(SUM(a.num_stages), 0), COALESCE(SUM(a.num_tasks), 0), "
    "COALESCE(SUM(a.wasted_core_hours), 0), COUNT(a.wasted_core_hours)"
)


PART_DAY = ["id", "spark_user", "queue", "wasted_core_hours"]


def _count(name: str, comment: str) -> sa.Column:
    return sa.Column(name, sa.BigInteger(), server_default="0", nullable=False, comment=comment)


def upgrade() -> None:
    op.create_table(
        "day_summary",
        sa.Column(
            "dimension", sa.String(16), nullable=False, comment="severity, user, queue or heuristic"
        ),
        sa.Column(
            "day",
            sa.Integer(),
            nullable=False,
            comment="start_time_ms // 86400000 (UTC day); -1 when unknown",
        ),
        sa.Column(
            "key",
            sa.String(255),
            nullable=False,
            comment="worst severity (0-4, '' unanalysed), user, queue ('' none) or heuristic name",
        ),
        _count("apps", "applications (heuristic: findings above NONE) of the day and key"),
        _count("executors", "sum of num_executors"),
        _count("jobs", "sum of num_jobs"),
        _count("stages", "sum of num_stages"),
        _count("tasks", "sum of num_tasks"),
        sa.Column(
            "wasted_core_hours",
            sa.Float(),
            server_default="0",
            nullable=False,
            comment="sum of wasted core-hours",
        ),
        _count("wasted_apps", "applications whose wasted core-hours are known"),
        sa.PrimaryKeyConstraint("dimension", "day", "key", name=op.f("pk_day_summary")),
        comment="per day x (severity | user | queue | heuristic): application counts and sums",
    )
    selects = [
        f"SELECT '{dim}', {_DAY}, {key}, {_SUMS} FROM application a GROUP BY 2, 3"
        for dim, key in (
            ("severity", "COALESCE(CAST(a.worst_severity AS VARCHAR(8)), '')"),
            ("user", "COALESCE(a.spark_user, '')"),
            ("queue", "COALESCE(a.queue, '')"),
        )
    ]
    selects.append(
        f"SELECT 'heuristic', {_DAY}, r.heuristic, COUNT(*), 0, 0, 0, 0, 0, 0 "
        "FROM analysis_result r JOIN application a ON a.id = r.application_id "
        "WHERE r.severity > 0 GROUP BY 2, 3"
    )
    op.execute(
        "INSERT INTO day_summary (dimension, day, key, apps, executors, jobs, stages, tasks, "
        "wasted_core_hours, wasted_apps) " + " UNION ALL ".join(selects)
    )

    if op.get_bind().dialect.name == "postgresql":
        # The part day the dashboard reads from the applications, severities included, as an
        # index-only scan; the fleet totals come from day_summary, no longer from an index.
        _index("ix_application_start_waste", PART_DAY + ["worst_severity"])
        _index("ix_application_start_time_ms", [])


def _index(name: str, include: list[str]) -> None:
    op.drop_index(name, table_name="application")
    op.create_index(name, "application", ["start_time_ms"], postgresql_include=include)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _index("ix_application_start_waste", PART_DAY)
        _index(
            "ix_application_start_time_ms", ["num_executors", "num_jobs", "num_stages", "num_tasks"]
        )
    op.drop_table("day_summary")
