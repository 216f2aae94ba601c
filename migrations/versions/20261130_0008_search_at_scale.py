"""search at scale: distinct application names kept by triggers, covering indexes for findings

Name search is a case-insensitive substring match (ILIKE '%x%'). Over a million applications it
cost a trigram bitmap scan and a recheck of every matching row (or an ILIKE per row); over the
distinct names (about 50 times fewer) it costs a few milliseconds, and the applications of the
matching names are then read from ``ix_application_name_start``. The trigram index moves from
``application`` to the names table.

The heuristic filter reads the applications with a finding from
``ix_analysis_result_heuristic_severity_app`` and their start time and worst severity from
``ix_application_id_start_severity``: index-only, instead of a row of each table per finding.

Triggers keep the names table: every insert of an application, and every change of its name, adds
the name if missing (PostgreSQL: a PL/pgSQL trigger function; SQLite: INSERT OR IGNORE). Names of
deleted applications stay and match no application. Concurrent loaders cannot deadlock on a new
name: they already hold the summary writers' advisory lock when they insert an application.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30 21:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PG_FUNCTION = """
CREATE FUNCTION application_name_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO application_name (name) VALUES (NEW.name) ON CONFLICT (name) DO NOTHING;
    RETURN NULL;
END
$$
"""
_PG_TRIGGERS = (
    "CREATE TRIGGER application_name_on_insert AFTER INSERT ON application"
    " FOR EACH ROW EXECUTE FUNCTION application_name_keep()",
    "CREATE TRIGGER application_name_on_update AFTER UPDATE OF name ON application"
    " FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)"
    " EXECUTE FUNCTION application_name_keep()",
)
_SQLITE_TRIGGERS = (
    "CREATE TRIGGER application_name_on_insert AFTER INSERT ON application"
    " BEGIN INSERT OR IGNORE INTO application_name (name) VALUES (NEW.name); END",
    "CREATE TRIGGER application_name_on_update AFTER UPDATE OF name ON application"
    " WHEN OLD.name IS NOT NEW.name"
    " BEGIN INSERT OR IGNORE INTO application_name (name) VALUES (NEW.name); END",
)


def _finding_indexes() -> None:
    op.drop_index("ix_analysis_result_heuristic_severity", table_name="analysis_result")
    op.create_index(
        "ix_analysis_result_heuristic_severity_app",
        "analysis_result",
        ["heuristic", "severity", "application_id"],
    )
    op.create_index(
        "ix_application_id_start_severity", "application", ["id", "start_time_ms", "worst_severity"]
    )


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    _finding_indexes()
    op.create_table(
        "application_name",
        sa.Column("name", sa.String(1000), nullable=False, comment="application name"),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_application_name")),
        comment="distinct application names (kept by triggers on application)",
    )
    op.execute("INSERT INTO application_name (name) SELECT DISTINCT name FROM application")
    if postgres:
        op.execute(_PG_FUNCTION)
        for statement in _PG_TRIGGERS:
            op.execute(statement)
        op.drop_index("ix_application_name_trgm", table_name="application")
        op.create_index(
            "ix_application_name_name_trgm",
            "application_name",
            ["name"],
            postgresql_using="gin",
            postgresql_ops={"name": "gin_trgm_ops"},
            # no pending list: new names go straight into the index, so no later read or
            # autovacuum pass has to merge a pending list (a write at read time)
            postgresql_with={"fastupdate": "off"},
        )
        op.execute("ANALYZE application_name")
    else:
        for statement in _SQLITE_TRIGGERS:
            op.execute(statement)
        op.drop_index("ix_application_name_trgm", table_name="application")
        op.create_index("ix_application_name_name_trgm", "application_name", ["name"])


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.drop_index("ix_application_id_start_severity", table_name="application")
    op.drop_index("ix_analysis_result_heuristic_severity_app", table_name="analysis_result")
    op.create_index(
        "ix_analysis_result_heuristic_severity", "analysis_result", ["heuristic", "severity"]
    )
    op.drop_index("ix_application_name_name_trgm", table_name="application_name")
    if postgres:
        op.execute("DROP TRIGGER application_name_on_update ON application")
        op.execute("DROP TRIGGER application_name_on_insert ON application")
        op.execute("DROP FUNCTION application_name_keep()")
        op.create_index(
            "ix_application_name_trgm",
            "application",
            ["name"],
            postgresql_using="gin",
            postgresql_ops={"name": "gin_trgm_ops"},
        )
    else:
        op.execute("DROP TRIGGER application_name_on_update")
        op.execute("DROP TRIGGER application_name_on_insert")
        op.create_index("ix_application_name_trgm", "application", ["name"])
    op.drop_table("application_name")
