"""Run Alembic migrations programmatically (used by `sparkscope db` and the tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(database_url: str) -> AlembicConfig:
    """An Alembic config pointing at our migrations folder and the given database."""
    cfg = AlembicConfig(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser treats % specially; URLs can hold escaped characters.
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    """Upgrade the schema to ``revision``."""
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    """Downgrade the schema to ``revision`` (``base`` removes everything)."""
    command.downgrade(alembic_config(database_url), revision)


def current(database_url: str) -> None:
    """Print the current revision."""
    command.current(alembic_config(database_url), verbose=False)


def check(database_url: str) -> None:
    """Fail when the models differ from what the migrations create."""
    command.check(alembic_config(database_url))
