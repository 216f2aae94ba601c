"""Migrations: one head, up and down on both databases, no drift from the models."""

from __future__ import annotations

from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from sparkscope import migrate
from sparkscope.db import make_engine
from sparkscope.models import Base


def test_single_head() -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1


def test_every_revision_has_a_downgrade() -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    for rev in script.walk_revisions():
        source = Path(rev.path).read_text()
        assert "def downgrade() -> None:" in source
        assert "    pass\n" not in source.split("def downgrade() -> None:")[1], rev.revision


def test_upgrade_check_downgrade_roundtrip(fresh_db_url: str) -> None:
    # fresh_db_url is already at head (both PostgreSQL and SQLite)
    engine = make_engine(fresh_db_url)
    tables = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= tables
    migrate.check(fresh_db_url)  # raises when models and migrations drift
    migrate.downgrade(fresh_db_url, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(fresh_db_url)
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    engine.dispose()
