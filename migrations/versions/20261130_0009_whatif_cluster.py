"""what-if: per-server prior of contention and executor start-up, for applications without
history at other sizes (and each key's own two terms as columns of its model row; models fitted
before this revision get them at their next refit)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30 23:00:00
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Each key's own terms, so the prior is a median over two columns, not a parse of every model.
    with op.batch_alter_table("whatif_model") as batch:
        batch.add_column(
            sa.Column(
                "contention",
                sa.Float(),
                nullable=True,
                comment="relative contention c (work per byte grows as 1 + c*slots); null: unknown",
            )
        )
        batch.add_column(
            sa.Column(
                "startup_per_executor_ms",
                sa.Float(),
                nullable=True,
                comment="start-up per added executor, ms; null: unknown",
            )
        )
    _fill_terms()
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


def _fill_terms() -> None:
    """The two terms of the models already stored, from their JSON (overheads.work = [a, b]:
    c = b / a; overheads.startup = [a, b]: b ms per executor). The server's prior itself is
    fitted by the next fetch or `sparkscope whatif-fit`."""
    bind = op.get_bind()
    model = sa.table(
        "whatif_model",
        sa.column("server_id", sa.Integer()),
        sa.column("name", sa.String()),
        sa.column("model", sa.Text()),
        sa.column("contention", sa.Float()),
        sa.column("startup_per_executor_ms", sa.Float()),
    )
    rows = bind.execute(sa.select(model.c.server_id, model.c.name, model.c.model)).all()
    for server_id, name, text in rows:
        try:
            overheads = json.loads(text).get("overheads") or {}
        except ValueError:
            continue
        work, startup = overheads.get("work"), overheads.get("startup")
        c = float(work[1]) / float(work[0]) if work and float(work[0]) > 0 else None
        s = float(startup[1]) if startup else None
        bind.execute(
            model.update()
            .where(model.c.server_id == server_id, model.c.name == name)
            .values(contention=c, startup_per_executor_ms=s)
        )


def downgrade() -> None:
    op.drop_table("whatif_cluster")
    with op.batch_alter_table("whatif_model") as batch:
        batch.drop_column("startup_per_executor_ms")
        batch.drop_column("contention")
