"""The declarative base (with the constraint naming convention) and shared column helpers."""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, ForeignKey, MetaData
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: JSON on SQLite, JSONB on PostgreSQL.
Json = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    """Declarative base with a naming convention, so Alembic gets stable constraint names."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _app_fk() -> Mapped[int]:
    return mapped_column(
        ForeignKey("application.id", ondelete="CASCADE"),
        primary_key=True,
        comment="application.id this row belongs to",
    )


def _count(comment: str) -> Mapped[int]:
    return mapped_column(BigInteger, nullable=False, default=0, server_default="0", comment=comment)
