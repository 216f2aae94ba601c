"""pipeline ledger: derived work still to do (predictions, what-if models), queued in the
transaction of the load that makes it necessary and removed by the one that does it; every
server with applications gets both steps queued once, so that what an earlier version left
undone (a killed fetch's what-if refit) is done by the next run

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 09:00:00
"""

import time
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    table = op.create_table(
        "pipeline_pending",
        sa.Column(
            "step",
            sa.String(32),
            nullable=False,
            comment="pipeline step (sparkscope.pipeline.steps)",
        ),
        sa.Column(
            "server_id",
            sa.Integer(),
            nullable=False,
            comment="history_server.id the work belongs to",
        ),
        sa.Column(
            "subject",
            sa.String(1000),
            nullable=False,
            comment="what the step works on: a recurring key, an application id, '' for the server",
        ),
        sa.Column(
            "queued_at_ms",
            sa.BigInteger(),
            nullable=False,
            comment="when the work was first asked for (epoch ms)",
        ),
        sa.Column(
            "attempts",
            sa.Integer(),
            server_default="0",
            nullable=False,
            comment="failed attempts so far",
        ),
        sa.Column(
            "last_error", sa.Text(), nullable=True, comment="why the last attempt failed (one line)"
        ),
        sa.Column(
            "last_attempt_ms",
            sa.BigInteger(),
            nullable=True,
            comment="when the last attempt failed (epoch ms)",
        ),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["history_server.id"],
            name=op.f("fk_pipeline_pending_server_id_history_server"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("step", "server_id", "subject", name=op.f("pk_pipeline_pending")),
        comment="derived work still to do: step x server x subject",
    )
    servers = op.get_bind().execute(sa.text("SELECT DISTINCT server_id FROM application")).all()
    now = int(time.time() * 1000)
    op.bulk_insert(
        table,
        [
            {"step": step, "server_id": sid, "subject": "", "queued_at_ms": now, "attempts": 0}
            for (sid,) in servers
            for step in ("predictions", "whatif")
        ],
    )


def downgrade() -> None:
    op.drop_table("pipeline_pending")
