"""Recurring applications: expected duration, verdict, next-run forecast and fitted models."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base, Json, _app_fk


class RunPrediction(Base):
    """The expected duration of one run, from the earlier runs of its recurring key only."""

    __tablename__ = "run_prediction"
    __table_args__ = (
        Index("ix_run_prediction_key_start", "server_id", "key", "start_time_ms"),
        Index("ix_run_prediction_verdict_start", "verdict", "start_time_ms"),
        {"comment": "expected duration, interval and verdict per run (computed at fetch/analyze)"},
    )

    application_id: Mapped[int] = _app_fk()
    server_id: Mapped[int] = mapped_column(Integer, comment="history_server.id")
    key: Mapped[str] = mapped_column(String(1000), comment="recurring key (normalised name)")
    start_time_ms: Mapped[int] = mapped_column(BigInteger, comment="run start, epoch ms")
    duration_ms: Mapped[int | None] = mapped_column(BigInteger, comment="actual duration, ms")
    succeeded: Mapped[bool] = mapped_column(Boolean, comment="may train models")
    fetched_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="application.fetched_at_ms this was computed from"
    )
    features: Mapped[dict[str, Any]] = mapped_column(Json, comment="run features (RunFeatures)")
    vector: Mapped[list[float]] = mapped_column(
        Json, comment="the numeric features, in the models' order (what training reads)"
    )
    candidates: Mapped[dict[str, float]] = mapped_column(
        Json, comment="every model's out-of-sample prediction, ms"
    )
    forecasts: Mapped[dict[str, float]] = mapped_column(
        Json, comment="every forecast candidate for this run made before it, ms"
    )
    forecast_ms: Mapped[float | None] = mapped_column(
        Float, comment="served next-run forecast made before this run, ms"
    )
    expected_ms: Mapped[float | None] = mapped_column(Float, comment="served prediction, ms")
    low_ms: Mapped[float | None] = mapped_column(Float, comment="interval bottom, ms")
    high_ms: Mapped[float | None] = mapped_column(Float, comment="interval top, ms")
    level: Mapped[float] = mapped_column(Float, comment="nominal interval level")
    model: Mapped[str] = mapped_column(String(32), comment="serving model")
    n_train: Mapped[int] = mapped_column(Integer, comment="successful earlier runs trained on")
    verdict: Mapped[str] = mapped_column(
        String(24), comment="normal, regression, improvement or insufficient_history"
    )
    regime: Mapped[str] = mapped_column(
        String(16), server_default="new_key", comment="interpolation, extrapolation or new_key"
    )
    regime_ratio: Mapped[float | None] = mapped_column(
        Float, comment="extrapolation: the run's size over the nearest end of the range seen"
    )
    regime_feature: Mapped[str | None] = mapped_column(
        String(32), comment="extrapolation: the size feature furthest outside the range"
    )
    difficulty: Mapped[float] = mapped_column(
        Float,
        server_default="1",
        comment="sqrt(1 + leverage) against the training runs (interval scale)",
    )
    excess_pct: Mapped[float | None] = mapped_column(Float, comment="actual vs expected, %")
    causes: Mapped[list[str]] = mapped_column(Json, comment="causes of a regression")
    changes: Mapped[dict[str, Any] | None] = mapped_column(
        Json,
        nullable=True,
        comment="what changed against the runs it was predicted from (settings, input, stages, "
        "findings); NULL: not computed yet",
    )
    computed_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when computed, epoch ms")


class RecurringForecast(Base):
    """The next-run forecast of one recurring key."""

    __tablename__ = "recurring_forecast"
    __table_args__ = {"comment": "next-run duration forecast per recurring key"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    key: Mapped[str] = mapped_column(String(1000), primary_key=True, comment="recurring key")
    n_runs: Mapped[int] = mapped_column(Integer, comment="runs of the key it was computed from")
    expected_ms: Mapped[float | None] = mapped_column(Float, comment="forecast, ms")
    low_ms: Mapped[float | None] = mapped_column(Float, comment="interval bottom, ms")
    high_ms: Mapped[float | None] = mapped_column(Float, comment="interval top, ms")
    level: Mapped[float] = mapped_column(Float, comment="nominal interval level")
    model: Mapped[str] = mapped_column(String(32), comment="serving forecast model")
    next_start_ms: Mapped[int | None] = mapped_column(BigInteger, comment="expected next start")
    basis: Mapped[dict[str, Any] | None] = mapped_column(
        Json, comment="what the forecast assumes of the next run, and its line for other sizes"
    )
    computed_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when computed, epoch ms")


class PredictionModel(Base):
    """The class-aware model last fitted for a server, reused until its training set grew."""

    __tablename__ = "prediction_model"
    __table_args__ = {"comment": "fitted class-aware model per server (a rebuildable cache)"}

    server_id: Mapped[int] = mapped_column(
        ForeignKey("history_server.id", ondelete="CASCADE"),
        primary_key=True,
        comment="history_server.id",
    )
    fitted_before_ms: Mapped[int] = mapped_column(
        BigInteger, comment="every training run started before this, epoch ms"
    )
    n_train: Mapped[int] = mapped_column(Integer, comment="successful runs it was fitted on")
    blob: Mapped[bytes] = mapped_column(
        LargeBinary, comment="the pickled model (written here only)"
    )
    fitted_at_ms: Mapped[int] = mapped_column(BigInteger, comment="when fitted, epoch ms")
