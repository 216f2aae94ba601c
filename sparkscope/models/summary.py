"""Fleet-level tables kept for pages at scale: per-day summaries and distinct application names."""

from __future__ import annotations

from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from sparkscope.models.base import Base, _count


class DaySummary(Base):
    """Per UTC day of start, the fleet's counts and sums along one dimension: what the dashboard
    adds up instead of scanning every application of its period.

    Maintained by :mod:`sparkscope.accounting.day_summary` whenever applications are loaded, analysed or deleted;
    rebuilt from scratch by :func:`sparkscope.accounting.day_summary.rebuild`.
    """

    __tablename__ = "day_summary"
    __table_args__ = {
        "comment": "per day x (severity | user | queue | heuristic): application counts and sums"
    }

    dimension: Mapped[str] = mapped_column(
        String(16), primary_key=True, comment="severity, user, queue or heuristic"
    )
    day: Mapped[int] = mapped_column(
        Integer, primary_key=True, comment="start_time_ms // 86400000 (UTC day); -1 when unknown"
    )
    key: Mapped[str] = mapped_column(
        String(255),
        primary_key=True,
        comment="worst severity (0-4, '' unanalysed), user, queue ('' none) or heuristic name",
    )
    apps: Mapped[int] = _count("applications (heuristic: findings above NONE) of the day and key")
    executors: Mapped[int] = _count("sum of num_executors")
    jobs: Mapped[int] = _count("sum of num_jobs")
    stages: Mapped[int] = _count("sum of num_stages")
    tasks: Mapped[int] = _count("sum of num_tasks")
    wasted_core_hours: Mapped[float] = mapped_column(
        Float, nullable=False, default=0.0, server_default="0", comment="sum of wasted core-hours"
    )
    wasted_apps: Mapped[int] = _count("applications whose wasted core-hours are known")


class ApplicationName(Base):
    """Every distinct application name, for name search: a substring match (ILIKE '%x%') runs
    over the distinct names (20,000 for a million applications) and the applications are then
    read by name from ``ix_application_name_start``.

    Filled by database triggers on ``application`` (insert, and update of ``name``), created by
    migration 0008; names of deleted applications may stay (they match no application).
    """

    __tablename__ = "application_name"
    __table_args__ = (
        # Case-insensitive substring search on PostgreSQL; a plain index on SQLite, which has no
        # trigram indexes (its scan of the small table is what it does instead).
        Index(
            "ix_application_name_name_trgm",
            "name",
            postgresql_using="gin",
            postgresql_ops={"name": "gin_trgm_ops"},
            postgresql_with={"fastupdate": "off"},
        ),
        {"comment": "distinct application names (kept by triggers on application)"},
    )

    name: Mapped[str] = mapped_column(String(1000), primary_key=True, comment="application name")
