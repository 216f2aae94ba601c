"""notifications outbox: every alert and digest message, written in the transaction that decides
it, with its idempotency key (unique), delivery state, attempts and last error

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "notify_outbox",
        sa.Column("id", sa.Integer(), nullable=False, comment="surrogate key"),
        sa.Column(
            "idempotency_key",
            sa.String(400),
            nullable=False,
            comment="alert:<occurrence>:<channel>, folded:<rule>:<hour>:<channel> or "
            "digest:<digest>:<period start>:<channel>",
        ),
        sa.Column(
            "event_id",
            sa.String(36),
            nullable=False,
            comment="UUID a receiver deduplicates on (uuid5 of the key), same every try",
        ),
        sa.Column("kind", sa.String(16), nullable=False, comment="alert, folded or digest"),
        sa.Column("rule", sa.String(64), nullable=True, comment="rule that fired (alerts)"),
        sa.Column("digest", sa.String(64), nullable=True, comment="digest name (digests)"),
        sa.Column("channel", sa.String(64), nullable=False, comment="channel name in the config"),
        sa.Column(
            "occurrence_id",
            sa.String(36),
            nullable=True,
            comment="id of what happened (an alert's event), for re-decisions",
        ),
        sa.Column(
            "period_start_ms",
            sa.BigInteger(),
            nullable=True,
            comment="start of a digest's period, epoch ms",
        ),
        sa.Column(
            "summary", sa.String(300), nullable=False, comment="one line: the message's subject"
        ),
        sa.Column(
            "payload",
            _json(),
            nullable=False,
            comment="what is rendered (events.to_json of the envelope); never a secret",
        ),
        sa.Column(
            "state",
            sa.String(16),
            server_default="pending",
            nullable=False,
            comment="pending, sending, sent, failed, dead, muted or folded",
        ),
        sa.Column(
            "attempts",
            sa.Integer(),
            server_default="0",
            nullable=False,
            comment="attempts made (counted at claim)",
        ),
        sa.Column("created_ms", sa.BigInteger(), nullable=False, comment="when decided, epoch ms"),
        sa.Column(
            "next_attempt_ms",
            sa.BigInteger(),
            nullable=False,
            comment="due from then on, epoch ms (a fold: the end of its hour)",
        ),
        sa.Column(
            "claimed_ms",
            sa.BigInteger(),
            nullable=True,
            comment="while sending: when the run claimed it (the lease's start)",
        ),
        sa.Column(
            "last_attempt_ms", sa.BigInteger(), nullable=True, comment="last claim, epoch ms"
        ),
        sa.Column("sent_ms", sa.BigInteger(), nullable=True, comment="when delivered, epoch ms"),
        sa.Column(
            "last_error",
            sa.Text(),
            nullable=True,
            comment="why the last attempt failed, which mute silenced it, or its fold (no secrets)",
        ),
        sa.CheckConstraint(
            "state IN ('pending', 'sending', 'sent', 'failed', 'dead', 'muted', 'folded')",
            name=op.f("ck_notify_outbox_state"),
        ),
        sa.CheckConstraint(
            "kind IN ('alert', 'folded', 'digest')", name=op.f("ck_notify_outbox_kind")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notify_outbox")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_notify_outbox_idempotency_key")),
        comment="notification messages to send, being sent, sent, failed or muted",
    )
    op.create_index(
        "ix_notify_outbox_state_next", "notify_outbox", ["state", "next_attempt_ms"], unique=False
    )
    op.create_index(
        "ix_notify_outbox_rule_created", "notify_outbox", ["rule", "created_ms"], unique=False
    )
    op.create_index(
        "ix_notify_outbox_occurrence_id", "notify_outbox", ["occurrence_id"], unique=False
    )
    op.create_index(
        "ix_notify_outbox_digest_period",
        "notify_outbox",
        ["digest", "period_start_ms"],
        unique=False,
    )
    op.create_index("ix_notify_outbox_created_ms", "notify_outbox", ["created_ms"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_notify_outbox_created_ms", table_name="notify_outbox")
    op.drop_index("ix_notify_outbox_digest_period", table_name="notify_outbox")
    op.drop_index("ix_notify_outbox_occurrence_id", table_name="notify_outbox")
    op.drop_index("ix_notify_outbox_rule_created", table_name="notify_outbox")
    op.drop_index("ix_notify_outbox_state_next", table_name="notify_outbox")
    op.drop_table("notify_outbox")
