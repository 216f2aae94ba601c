"""fetch watermark: per server, the end-time range within which every listed app is loaded

The incremental fetch used to resume from the newest stored end time, which skips for ever the
older applications a killed run had listed but not loaded. `fetch_watermark` holds, per server, the
range of end times within which every listed application is stored or recorded as failed; it only
advances in the transaction that completes that range. No row for a server (as right after this
upgrade) makes its next fetch list the whole history once, which also loads any application an
interrupted run of an earlier version left out.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "fetch_watermark",
        sa.Column("server_id", sa.Integer(), nullable=False, comment="history_server.id"),
        sa.Column(
            "covered_from_ms",
            sa.BigInteger(),
            nullable=False,
            comment="lowest end time of the covered range, epoch ms (0: from the start)",
        ),
        sa.Column(
            "covered_to_ms",
            sa.BigInteger(),
            nullable=False,
            comment="highest end time of the covered range, epoch ms: the watermark",
        ),
        sa.Column(
            "reconciled_at_ms",
            sa.BigInteger(),
            nullable=True,
            comment="when a listing of the reconciliation window last completed, epoch ms",
        ),
        sa.Column(
            "updated_at_ms", sa.BigInteger(), nullable=False, comment="last change, epoch ms"
        ),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["history_server.id"],
            name=op.f("fk_fetch_watermark_server_id_history_server"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("server_id", name=op.f("pk_fetch_watermark")),
        comment="per server: the end-time range within which every listed app is stored or "
        "recorded as failed",
    )


def downgrade() -> None:
    op.drop_table("fetch_watermark")
