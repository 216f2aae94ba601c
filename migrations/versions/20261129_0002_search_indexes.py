"""search and dashboard indexes: trigram name search, wasted core-hours, found findings, totals

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # pg_trgm is a trusted extension (PostgreSQL >= 13): the database owner may create it.
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.create_index(
            "ix_application_name_trgm",
            "application",
            ["name"],
            postgresql_using="gin",
            postgresql_ops={"name": "gin_trgm_ops"},
        )
    else:
        op.create_index("ix_application_name_trgm", "application", ["name"])
    op.create_index("ix_application_wasted_core_hours", "application", ["wasted_core_hours"])
    op.create_index(
        "ix_application_start_waste",
        "application",
        ["start_time_ms"],
        postgresql_include=["id", "spark_user", "queue", "wasted_core_hours"],
    )
    op.create_index(
        "ix_analysis_result_found",
        "analysis_result",
        ["application_id", "heuristic"],
        postgresql_where=sa.text("severity > 0"),
        sqlite_where=sa.text("severity > 0"),
    )
    if bind.dialect.name == "postgresql":
        op.drop_index("ix_application_start_time_ms", table_name="application")
        op.create_index(
            "ix_application_start_time_ms",
            "application",
            ["start_time_ms"],
            postgresql_include=["num_executors", "num_jobs", "num_stages", "num_tasks"],
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_application_start_time_ms", table_name="application")
        op.create_index("ix_application_start_time_ms", "application", ["start_time_ms"])
    op.drop_index("ix_analysis_result_found", table_name="analysis_result")
    op.drop_index("ix_application_start_waste", table_name="application")
    op.drop_index("ix_application_wasted_core_hours", table_name="application")
    op.drop_index("ix_application_name_trgm", table_name="application")
    # The extension may serve other tables: it is left installed.
