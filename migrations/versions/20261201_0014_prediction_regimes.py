"""predictions: each run's regime (inside its key's range, outside it and how far, new key) and
difficulty, and the next-run forecast's basis (the sizes it assumes and the line that evaluates
others); the run features gained the iterations, so every stored prediction (a rebuildable
cache) is dropped and recomputed by the next fetch or `sparkscope analyze`

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 09:00:00
"""

import time
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The stored vectors have one feature fewer than the models now read: recompute them all.
    op.execute("DELETE FROM run_prediction")
    op.execute("DELETE FROM recurring_forecast")
    op.execute("DELETE FROM prediction_model")
    with op.batch_alter_table("run_prediction") as batch:
        batch.add_column(
            sa.Column(
                "regime",
                sa.String(16),
                nullable=False,
                server_default="new_key",
                comment="interpolation, extrapolation or new_key",
            )
        )
        batch.add_column(
            sa.Column(
                "regime_ratio",
                sa.Float(),
                nullable=True,
                comment="extrapolation: the run's size over the nearest end of the range seen",
            )
        )
        batch.add_column(
            sa.Column(
                "regime_feature",
                sa.String(32),
                nullable=True,
                comment="extrapolation: the size feature furthest outside the range",
            )
        )
        batch.add_column(
            sa.Column(
                "difficulty",
                sa.Float(),
                nullable=False,
                server_default="1",
                comment="sqrt(1 + leverage) against the training runs (interval scale)",
            )
        )
    with op.batch_alter_table("recurring_forecast") as batch:
        batch.add_column(
            sa.Column(
                "basis",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
                comment="what the forecast assumes of the next run, and its line for other sizes",
            )
        )
    pending = sa.table(
        "pipeline_pending",
        sa.column("step", sa.String),
        sa.column("server_id", sa.Integer),
        sa.column("subject", sa.String),
        sa.column("queued_at_ms", sa.BigInteger),
        sa.column("attempts", sa.Integer),
    )
    bind = op.get_bind()
    servers = bind.execute(sa.text("SELECT DISTINCT server_id FROM application")).all()
    queued = {
        sid
        for (sid,) in bind.execute(
            sa.text("SELECT server_id FROM pipeline_pending WHERE step = 'predictions'")
        ).all()
    }
    now = int(time.time() * 1000)
    rows = [
        {"step": "predictions", "server_id": sid, "subject": "", "queued_at_ms": now, "attempts": 0}
        for (sid,) in servers
        if sid not in queued
    ]
    if rows:
        op.bulk_insert(pending, rows)


def downgrade() -> None:
    with op.batch_alter_table("recurring_forecast") as batch:
        batch.drop_column("basis")
    with op.batch_alter_table("run_prediction") as batch:
        batch.drop_column("difficulty")
        batch.drop_column("regime_feature")
        batch.drop_column("regime_ratio")
        batch.drop_column("regime")
