"""what-if: per-server prior of contention and executor start-up, for applications without
history at other sizes

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "whatif_cluster",
        sa.Column(
            "server_id",
            sa.Integer(),
            sa.ForeignKey("history_server.id", ondelete="CASCADE"),
            primary_key=True,
            comment="history_server.id",
        ),
        sa.Column("fitted_at_ms", sa.BigInteger(), nullable=False, comment="when fitted, epoch ms"),
        sa.Column("n_keys", sa.Integer(), nullable=False, comment="applications it rests on"),
        sa.Column(
            "model",
            sa.Text(),
            nullable=False,
            comment="JSON: relative contention per slot, start-up per executor (ms)",
        ),
        comment="per-server contention and start-up prior of the what-if",
    )


def downgrade() -> None:
    op.drop_table("whatif_cluster")
