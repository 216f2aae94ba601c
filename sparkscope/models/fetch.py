"""Where applications come from and how fetching went: servers, runs, failures, watermarks."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from sparkscope.models.base import Base, Json, _count


class HistoryServer(Base):
    """A Spark History Server that applications are fetched from."""

    __tablename__ = "history_server"
    __table_args__ = {"comment": "Spark History Servers applications come from"}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="surrogate key")
    name: Mapped[str] = mapped_column(String(200), unique=True, comment="configured short name")
    url: Mapped[str] = mapped_column(String(1000), comment="base URL (or folder) last fetched from")
    created_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when first seen, epoch ms")


class FetchRun(Base):
    """One run of the fetcher against one server."""

    __tablename__ = "fetch_run"
    __table_args__ = (
        Index("ix_fetch_run_server_started", "server_id", "started_at_ms"),
        {"comment": "fetch runs with their counts and errors"},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, comment="surrogate key")
    server_id: Mapped[int | None] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"), comment="history_server.id"
    )
    started_at_ms: Mapped[int] = mapped_column(BigInteger, comment="start, epoch ms")
    finished_at_ms: Mapped[int | None] = mapped_column(BigInteger, comment="end, epoch ms")
    status: Mapped[str] = mapped_column(
        String(16), comment="running, ok, partial (some apps failed), failed or locked"
    )
    apps_seen: Mapped[int] = _count("completed apps listed")
    apps_loaded: Mapped[int] = _count("apps loaded")
    apps_skipped: Mapped[int] = _count("apps already current")
    apps_failed: Mapped[int] = _count("apps that failed")
    requests: Mapped[int] = _count("HTTP requests made")
    bytes: Mapped[int] = _count("response bytes read")
    error: Mapped[str | None] = mapped_column(Text, comment="why the run failed, if it did")
    failed_apps: Mapped[list[Any] | None] = mapped_column(
        Json, comment="[app id, error] of failed apps"
    )

    server: Mapped[HistoryServer | None] = relationship()


class FetchFailure(Base):
    """An application that failed to load, retried on later runs up to a bound."""

    __tablename__ = "fetch_failure"
    __table_args__ = {"comment": "apps that failed to fetch or load, with the last reason"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    app_id: Mapped[str] = mapped_column(
        String(255), primary_key=True, comment="Spark application id"
    )
    attempt_id: Mapped[str] = mapped_column(
        String(64), primary_key=True, comment="attempt id or ''"
    )
    failures: Mapped[int] = mapped_column(Integer, comment="how many runs failed on it")
    last_error: Mapped[str] = mapped_column(Text, comment="the last error")
    last_failed_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="when it last failed, epoch ms"
    )
    last_updated_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="SHS lastUpdated at that time; a change resets the count"
    )


class FetchWatermark(Base):
    """How much of one server's listing is loaded: the incremental fetch resumes from here."""

    __tablename__ = "fetch_watermark"
    __table_args__ = {
        "comment": "per server: the end-time range within which every listed app is stored or "
        "recorded as failed"
    }

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    covered_from_ms: Mapped[int] = mapped_column(
        BigInteger, comment="lowest end time of the covered range, epoch ms (0: from the start)"
    )
    covered_to_ms: Mapped[int] = mapped_column(
        BigInteger, comment="highest end time of the covered range, epoch ms: the watermark"
    )
    reconciled_at_ms: Mapped[int | None] = mapped_column(
        BigInteger, comment="when a listing of the reconciliation window last completed, epoch ms"
    )
    updated_at_ms: Mapped[int] = mapped_column(BigInteger, comment="last change, epoch ms")
