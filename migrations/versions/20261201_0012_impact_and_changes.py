"""impact and changes: each application's costliest finding, search orders by impact and by waste,
and what changed in every predicted run

``application.impact_core_hours`` is the core-hours of the application's costliest finding (0 when
no finding has a cost, NULL until analysed), filled here from the stored findings; the analysis
keeps it from then on. Two indexes read search's "impact" and "waste" orders in index order, with
unknown figures below every known one on both databases (an expression, as SQLite's indexes know
no NULLS LAST).

``run_prediction.changes`` is what changed in a run against the runs it was predicted from
(settings, input, stage time per byte, findings), for every predicted run. Rows stored before this
revision have none (NULL): ``sparkscope analyze`` (or a fetch that loads runs of their server)
recomputes them.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.add_column(
        "application",
        sa.Column(
            "impact_core_hours",
            sa.Float(),
            nullable=True,
            comment="core-hours of its costliest finding (0 when none has a cost); "
            "NULL until analysed",
        ),
    )
    op.execute(
        "UPDATE application SET impact_core_hours = COALESCE(("
        "SELECT MAX(r.impact_core_hours) FROM analysis_result r"
        " WHERE r.application_id = application.id), 0)"
        " WHERE analysis_fingerprint IS NOT NULL"
    )
    op.create_index(
        "ix_application_impact_rank",
        "application",
        [sa.text("coalesce(impact_core_hours, -1)"), "start_time_ms", "id"],
    )
    op.create_index(
        "ix_application_waste_rank",
        "application",
        [sa.text("coalesce(wasted_core_hours, -1)"), "start_time_ms", "id"],
    )
    json_type = postgresql.JSONB() if postgres else sa.JSON()
    op.add_column(
        "run_prediction",
        sa.Column(
            "changes",
            json_type,
            nullable=True,
            comment="what changed against the runs it was predicted from (settings, input, "
            "stages, findings); NULL: not computed yet",
        ),
    )


def downgrade() -> None:
    op.drop_index("ix_application_waste_rank", table_name="application")
    op.drop_index("ix_application_impact_rank", table_name="application")
    # SQLite (3.35+) drops a column in place: a batch copy of `application` would lose its triggers.
    for table, column in (("run_prediction", "changes"), ("application", "impact_core_hours")):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
