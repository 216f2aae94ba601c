"""predictions: expected duration, interval and verdict per run; next-run forecast per key

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "run_prediction",
        sa.Column(
            "application_id",
            sa.Integer(),
            nullable=False,
            comment="application.id this row belongs to",
        ),
        sa.Column("server_id", sa.Integer(), nullable=False, comment="history_server.id"),
        sa.Column(
            "key", sa.String(length=1000), nullable=False, comment="recurring key (normalised name)"
        ),
        sa.Column("start_time_ms", sa.BigInteger(), nullable=False, comment="run start, epoch ms"),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True, comment="actual duration, ms"),
        sa.Column("succeeded", sa.Boolean(), nullable=False, comment="may train models"),
        sa.Column(
            "fetched_at_ms",
            sa.BigInteger(),
            nullable=False,
            comment="application.fetched_at_ms this was computed from",
        ),
        sa.Column("features", _json(), nullable=False, comment="run features (RunFeatures)"),
        sa.Column(
            "vector",
            _json(),
            nullable=False,
            comment="the numeric features, in the models' order (what training reads)",
        ),
        sa.Column(
            "candidates",
            _json(),
            nullable=False,
            comment="every model's out-of-sample prediction, ms",
        ),
        sa.Column(
            "forecasts",
            _json(),
            nullable=False,
            comment="every forecast candidate for this run made before it, ms",
        ),
        sa.Column(
            "forecast_ms",
            sa.Float(),
            nullable=True,
            comment="served next-run forecast made before this run, ms",
        ),
        sa.Column("expected_ms", sa.Float(), nullable=True, comment="served prediction, ms"),
        sa.Column("low_ms", sa.Float(), nullable=True, comment="interval bottom, ms"),
        sa.Column("high_ms", sa.Float(), nullable=True, comment="interval top, ms"),
        sa.Column("level", sa.Float(), nullable=False, comment="nominal interval level"),
        sa.Column("model", sa.String(length=32), nullable=False, comment="serving model"),
        sa.Column(
            "n_train", sa.Integer(), nullable=False, comment="successful earlier runs trained on"
        ),
        sa.Column(
            "verdict",
            sa.String(length=24),
            nullable=False,
            comment="normal, regression, improvement or insufficient_history",
        ),
        sa.Column("excess_pct", sa.Float(), nullable=True, comment="actual vs expected, %"),
        sa.Column("causes", _json(), nullable=False, comment="causes of a regression"),
        sa.Column(
            "computed_at_ms", sa.BigInteger(), nullable=False, comment="when computed, epoch ms"
        ),
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["application.id"],
            name=op.f("fk_run_prediction_application_id_application"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("application_id", name=op.f("pk_run_prediction")),
        comment="expected duration, interval and verdict per run (computed at fetch/analyze)",
    )
    op.create_index(
        "ix_run_prediction_key_start",
        "run_prediction",
        ["server_id", "key", "start_time_ms"],
        unique=False,
    )
    op.create_index(
        "ix_run_prediction_verdict_start",
        "run_prediction",
        ["verdict", "start_time_ms"],
        unique=False,
    )
    op.create_table(
        "recurring_forecast",
        sa.Column("server_id", sa.Integer(), nullable=False, comment="history_server.id"),
        sa.Column("key", sa.String(length=1000), nullable=False, comment="recurring key"),
        sa.Column(
            "n_runs", sa.Integer(), nullable=False, comment="runs of the key it was computed from"
        ),
        sa.Column("expected_ms", sa.Float(), nullable=True, comment="forecast, ms"),
        sa.Column("low_ms", sa.Float(), nullable=True, comment="interval bottom, ms"),
        sa.Column("high_ms", sa.Float(), nullable=True, comment="interval top, ms"),
        sa.Column("level", sa.Float(), nullable=False, comment="nominal interval level"),
        sa.Column("model", sa.String(length=32), nullable=False, comment="serving forecast model"),
        sa.Column("next_start_ms", sa.BigInteger(), nullable=True, comment="expected next start"),
        sa.Column(
            "computed_at_ms", sa.BigInteger(), nullable=False, comment="when computed, epoch ms"
        ),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["history_server.id"],
            name=op.f("fk_recurring_forecast_server_id_history_server"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("server_id", "key", name=op.f("pk_recurring_forecast")),
        comment="next-run duration forecast per recurring key",
    )
    op.create_table(
        "prediction_model",
        sa.Column("server_id", sa.Integer(), nullable=False, comment="history_server.id"),
        sa.Column(
            "fitted_before_ms",
            sa.BigInteger(),
            nullable=False,
            comment="every training run started before this, epoch ms",
        ),
        sa.Column(
            "n_train", sa.Integer(), nullable=False, comment="successful runs it was fitted on"
        ),
        sa.Column(
            "blob",
            sa.LargeBinary(),
            nullable=False,
            comment="the pickled model (written here only)",
        ),
        sa.Column("fitted_at_ms", sa.BigInteger(), nullable=False, comment="when fitted, epoch ms"),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["history_server.id"],
            name=op.f("fk_prediction_model_server_id_history_server"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("server_id", name=op.f("pk_prediction_model")),
        comment="fitted class-aware model per server (a rebuildable cache)",
    )


def downgrade() -> None:
    op.drop_table("prediction_model")
    op.drop_table("recurring_forecast")
    op.drop_index("ix_run_prediction_verdict_start", table_name="run_prediction")
    op.drop_index("ix_run_prediction_key_start", table_name="run_prediction")
    op.drop_table("run_prediction")
