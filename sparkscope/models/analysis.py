"""Heuristic results of an application, its encoded inputs, and the configs they ran under."""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base, _app_fk


class AnalysisResult(Base):
    """One finding (a heuristic result above NONE) of one application: what search and dashboards
    filter, count and badge. Every result, NONE ones included, is in :class:`Analysis`."""

    __tablename__ = "analysis_result"
    __table_args__ = (
        # Search's heuristic filter: the applications with a finding of a heuristic at a severity,
        # from the index alone (migration 0008).
        Index(
            "ix_analysis_result_heuristic_severity_app", "heuristic", "severity", "application_id"
        ),
        {
            "comment": "findings above NONE: one row per application x heuristic that found something"
        },
    )

    application_id: Mapped[int] = _app_fk()
    heuristic: Mapped[str] = mapped_column(String(64), primary_key=True, comment="heuristic name")
    severity: Mapped[int] = mapped_column(
        Integer, comment="1 LOW, 2 MODERATE, 3 SEVERE, 4 CRITICAL"
    )
    value: Mapped[float | None] = mapped_column(
        Float, comment="the measured value the severity came from"
    )
    title: Mapped[str] = mapped_column(Text, comment="one-line summary")
    impact_core_hours: Mapped[float | None] = mapped_column(
        Float, comment="estimated core-hours the problem cost"
    )
    impact_wall_seconds: Mapped[float | None] = mapped_column(
        Float, comment="estimated wall-clock seconds the problem cost"
    )


class Analysis(Base):
    """Every heuristic result of one application, as one JSON document.

    The config that produced them is ``application.analysis_fingerprint``. One row per application
    rather than one per heuristic: re-scoring writes one row per application, and the application
    page reads one.
    """

    __tablename__ = "analysis"
    __table_args__ = {"comment": "all heuristic results of an application, NONE ones included"}

    application_id: Mapped[int] = _app_fk()
    analyzed_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="when these results were computed (a re-score giving the same keeps it)"
    )
    results: Mapped[str] = mapped_column(
        Text,
        comment="JSON array of results (name, severity, value, title, details, advice, impact); "
        "their thresholds are the params of the config the application's fingerprint names",
    )


class AnalysisInput(Base):
    """The heuristic inputs of one application, kept ready to score (a derived cache).

    Built from the application's rows when it is fetched or first analysed; re-scoring reads this
    one row instead of about a hundred. ``format`` names the encoding and the input fields it was
    written with: a row of another format is ignored and rebuilt from the rows, which stay the
    source of truth.
    """

    __tablename__ = "analysis_input"
    __table_args__ = {"comment": "heuristic inputs per application, encoded (rebuildable cache)"}

    application_id: Mapped[int] = _app_fk()
    format: Mapped[str] = mapped_column(String(64), comment="encoding and input-fields version")
    data: Mapped[bytes] = mapped_column(LargeBinary, comment="the encoded inputs")


class HeuristicsConfig(Base):
    """A heuristics config that results were computed under, by fingerprint.

    ``digests`` lets a re-score under a new config keep the stored results of the heuristics
    whose params did not change (heuristics are pure functions of the application and params).
    """

    __tablename__ = "heuristics_config"
    __table_args__ = {"comment": "heuristics configs results were computed under"}

    fingerprint: Mapped[str] = mapped_column(
        String(64), primary_key=True, comment="fingerprint of the config (and engine version)"
    )
    digests: Mapped[str] = mapped_column(
        Text, comment="JSON: heuristic name -> digest of its params and the engine version"
    )
    config: Mapped[str] = mapped_column(Text, comment="JSON: the effective config")
    first_used_at_ms: Mapped[int] = mapped_column(
        BigInteger, comment="when results were first computed under it, epoch ms"
    )
