"""The notifications outbox: every alert and digest message, written in the transaction that
decides it and moved through its delivery states by ``sparkscope notify``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base, Json


class NotifyOutbox(Base):
    """One message for one channel: an alert (event x rule x channel), a burst of a rule's
    alerts folded into one message of a clock hour, or a digest (digest x period x channel).

    The idempotency key is unique, so deciding the same thing twice (a re-run after a kill, a
    re-fetch) never makes a second message; ``event_id`` is derived from it and is what a
    receiver sees, the same on every attempt. ``payload`` is exactly what is rendered: no
    channel setting and no secret is ever stored here."""

    __tablename__ = "notify_outbox"
    __table_args__ = (
        CheckConstraint(
            "state IN ('pending', 'sending', 'sent', 'failed', 'dead', 'muted', 'folded')",
            name="state",
        ),
        CheckConstraint("kind IN ('alert', 'folded', 'digest')", name="kind"),
        # The claim: due rows oldest first.
        Index("ix_notify_outbox_state_next", "state", "next_attempt_ms"),
        # The throttle's count of a rule's recent alerts.
        Index("ix_notify_outbox_rule_created", "rule", "created_ms"),
        # Whether an occurrence was decided already.
        Index("ix_notify_outbox_occurrence_id", "occurrence_id"),
        # The newest period of a digest, and retention by age.
        Index("ix_notify_outbox_digest_period", "digest", "period_start_ms"),
        Index("ix_notify_outbox_created_ms", "created_ms"),
        {"comment": "notification messages to send, being sent, sent, failed or muted"},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="surrogate key")
    idempotency_key: Mapped[str] = mapped_column(
        String(400),
        unique=True,
        comment="alert:<occurrence>:<channel>, folded:<rule>:<hour>:<channel> or "
        "digest:<digest>:<period start>:<channel>",
    )
    event_id: Mapped[str] = mapped_column(
        String(36), comment="UUID a receiver deduplicates on (uuid5 of the key), same every try"
    )
    kind: Mapped[str] = mapped_column(String(16), comment="alert, folded or digest")
    rule: Mapped[str | None] = mapped_column(String(64), comment="rule that fired (alerts)")
    digest: Mapped[str | None] = mapped_column(String(64), comment="digest name (digests)")
    channel: Mapped[str] = mapped_column(String(64), comment="channel name in the config")
    occurrence_id: Mapped[str | None] = mapped_column(
        String(36), comment="id of what happened (an alert's event), for re-decisions"
    )
    period_start_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="start of a digest's period, epoch ms"
    )
    summary: Mapped[str] = mapped_column(String(300), comment="one line: the message's subject")
    payload: Mapped[dict[str, Any]] = mapped_column(
        Json, comment="what is rendered (events.to_json of the envelope); never a secret"
    )
    state: Mapped[str] = mapped_column(
        String(16),
        default="pending",
        server_default="pending",
        comment="pending, sending, sent, failed, dead, muted or folded",
    )
    attempts: Mapped[int] = mapped_column(
        Integer, default=0, server_default="0", comment="attempts made (counted at claim)"
    )
    created_ms: Mapped[int] = mapped_column(BigInteger, comment="when decided, epoch ms")
    next_attempt_ms: Mapped[int] = mapped_column(
        BigInteger, comment="due from then on, epoch ms (a fold: the end of its hour)"
    )
    claimed_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="while sending: when the run claimed it (the lease's start)"
    )
    last_attempt_ms: Mapped[int | None] = mapped_column(BigInteger, comment="last claim, epoch ms")
    sent_ms: Mapped[int | None] = mapped_column(BigInteger, comment="when delivered, epoch ms")
    last_error: Mapped[str | None] = mapped_column(
        Text,
        comment="why the last attempt failed, which mute silenced it, or its fold (no secrets)",
    )
