"""What-if and sizing: history-calibrated models and encoded inputs."""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base


class WhatIfModel(Base):
    """The history-calibrated duration model of one recurring application (name per server),
    fitted at fetch/analyze time so that pages only evaluate it."""

    __tablename__ = "whatif_model"
    __table_args__ = {"comment": "history-calibrated what-if models, one per name and server"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    name: Mapped[str] = mapped_column(String(1000), primary_key=True, comment="application name")
    fitted_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when fitted, epoch ms")
    n_train: Mapped[int] = mapped_column(Integer, comment="runs it was fitted on")
    model: Mapped[str] = mapped_column(
        Text, comment="JSON: terms, coefficients, reference input, out-of-sample residuals"
    )
    contention: Mapped[float | None] = mapped_column(
        Float, comment="relative contention c (work per byte grows as 1 + c*slots); null: unknown"
    )
    startup_per_executor_ms: Mapped[float | None] = mapped_column(
        Float, comment="start-up per added executor, ms; null: unknown"
    )


class WhatIfCluster(Base):
    """What the recurring applications of one server agree on about contention and executor
    start-up (medians over the applications whose history covers several sizes): the correction
    of a single-run what-if for an application without such history. Fitted with the models."""

    __tablename__ = "whatif_cluster"
    __table_args__ = {"comment": "per-server contention and start-up prior of the what-if"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    fitted_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when fitted, epoch ms")
    n_keys: Mapped[int] = mapped_column(Integer, comment="applications it rests on")
    model: Mapped[str] = mapped_column(
        Text, comment="JSON: relative contention per slot, start-up per executor (ms)"
    )


class WhatIfInput(Base):
    """The what-if input of one application (stages' task-time quantiles, totals, slowest tasks,
    times, executors), encoded at fetch time so a what-if request reads one row."""

    __tablename__ = "whatif_input"
    __table_args__ = {"comment": "encoded what-if inputs, one row per application"}

    application_id: Mapped[int] = mapped_column(
        ForeignKey("application.id", ondelete="CASCADE"),
        primary_key=True,
        comment="application.id",
    )
    format: Mapped[str] = mapped_column(String(64), comment="encoding version")
    data: Mapped[bytes] = mapped_column(LargeBinary, comment="zlib-compressed marshal of tuples")
