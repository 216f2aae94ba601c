"""what-if: the history-calibrated duration model of each recurring application, and each
application's encoded what-if input

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "whatif_model",
        sa.Column(
            "server_id",
            sa.Integer(),
            sa.ForeignKey("history_server.id", ondelete="CASCADE"),
            primary_key=True,
            comment="history_server.id",
        ),
        sa.Column("name", sa.String(1000), primary_key=True, comment="application name"),
        sa.Column("fitted_at_ms", sa.BigInteger(), nullable=False, comment="when fitted, epoch ms"),
        sa.Column("n_train", sa.Integer(), nullable=False, comment="runs it was fitted on"),
        sa.Column(
            "model",
            sa.Text(),
            nullable=False,
            comment="JSON: terms, coefficients, reference input, out-of-sample residuals",
        ),
        comment="history-calibrated what-if models, one per name and server",
    )
    op.create_table(
        "whatif_input",
        sa.Column(
            "application_id",
            sa.Integer(),
            sa.ForeignKey("application.id", ondelete="CASCADE"),
            primary_key=True,
            comment="application.id",
        ),
        sa.Column("format", sa.String(64), nullable=False, comment="encoding version"),
        sa.Column(
            "data", sa.LargeBinary(), nullable=False, comment="zlib-compressed marshal of tuples"
        ),
        comment="encoded what-if inputs, one row per application",
    )


def downgrade() -> None:
    op.drop_table("whatif_input")
    op.drop_table("whatif_model")
