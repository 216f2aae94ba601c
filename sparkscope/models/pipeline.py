"""The post-load pipeline's ledger: work derived from stored applications that is still to do."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base


class PipelinePending(Base):
    """One unit of derived work still to do (a step for one subject of one server).

    Written in the transaction that makes the work necessary (an application's load), deleted in
    the transaction that does it: whatever kills a run in between, the row stays and the next
    ``fetch`` or ``analyze`` does the work.
    """

    __tablename__ = "pipeline_pending"
    __table_args__ = {"comment": "derived work still to do: step x server x subject"}

    step: Mapped[str] = mapped_column(
        String(32), primary_key=True, comment="pipeline step (sparkscope.pipeline.steps)"
    )
    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id the work belongs to",
    )
    subject: Mapped[str] = mapped_column(
        String(1000),
        primary_key=True,
        comment="what the step works on: a recurring key, an application id, '' for the server",
    )
    queued_at_ms: Mapped[int] = mapped_column(
        BigInteger, nullable=False, comment="when the work was first asked for (epoch ms)"
    )
    attempts: Mapped[int] = mapped_column(
        Integer, nullable=False, default=0, server_default="0", comment="failed attempts so far"
    )
    last_error: Mapped[str | None] = mapped_column(
        Text, nullable=True, comment="why the last attempt failed (one line)"
    )
    last_attempt_ms: Mapped[int | None] = mapped_column(
        BigInteger, nullable=True, comment="when the last attempt failed (epoch ms)"
    )
