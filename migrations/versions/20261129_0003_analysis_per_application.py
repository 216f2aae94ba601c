"""analysis per application: all results in one row, findings table keeps only findings, inputs cache

Re-scoring used to write 13 rows per application (one per heuristic, NONE ones included, each with
its JSON); now it writes one `analysis` row (every result, one JSON array) plus a row in
`analysis_result` only for findings above NONE, which is what search and dashboards read.
`analysis_input` caches each application's encoded heuristic inputs; it starts empty and fills as
applications are fetched or analysed. `heuristics_config` records the configs results were computed
under, so that a re-score keeps the results of heuristics whose params did not change.

The upgrade moves the stored results; the downgrade moves them back.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 22:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RESULTS_COMMENT = (
    "JSON array of results (name, severity, value, title, details, advice, impact); their "
    "thresholds are the params of the config the application's fingerprint names"
)


def _create_per_application_table(name: str, comment: str, *columns: sa.Column) -> None:
    """A table of one row per application, deleted with it."""
    op.create_table(
        name,
        sa.Column(
            "application_id",
            sa.Integer(),
            nullable=False,
            comment="application.id this row belongs to",
        ),
        *columns,
        sa.ForeignKeyConstraint(
            ["application_id"],
            ["application.id"],
            name=op.f(f"fk_{name}_application_id_application"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("application_id", name=op.f(f"pk_{name}")),
        comment=comment,
    )


def upgrade() -> None:
    bind = op.get_bind()
    pg = bind.dialect.name == "postgresql"
    _create_per_application_table(
        "analysis",
        "all heuristic results of an application, NONE ones included",
        sa.Column(
            "analyzed_at_ms",
            sa.BigInteger(),
            nullable=False,
            comment="when these results were computed (a re-score giving the same keeps it)",
        ),
        sa.Column("results", sa.Text(), nullable=False, comment=RESULTS_COMMENT),
    )
    _create_per_application_table(
        "analysis_input",
        "heuristic inputs per application, encoded (rebuildable cache)",
        sa.Column(
            "format",
            sa.String(length=64),
            nullable=False,
            comment="encoding and input-fields version",
        ),
        sa.Column("data", sa.LargeBinary(), nullable=False, comment="the encoded inputs"),
    )
    op.create_table(
        "heuristics_config",
        sa.Column(
            "fingerprint",
            sa.String(length=64),
            nullable=False,
            comment="fingerprint of the config (and engine version)",
        ),
        sa.Column(
            "digests",
            sa.Text(),
            nullable=False,
            comment="JSON: heuristic name -> digest of its params and the engine version",
        ),
        sa.Column("config", sa.Text(), nullable=False, comment="JSON: the effective config"),
        sa.Column(
            "first_used_at_ms",
            sa.BigInteger(),
            nullable=False,
            comment="when results were first computed under it, epoch ms",
        ),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_heuristics_config")),
        comment="heuristics configs results were computed under",
    )
    if pg:
        # lz4 TOAST compression decompresses several times faster than the default pglz; used when
        # the server was built with it (PostgreSQL >= 14 lists it among the settings' values).
        has_lz4 = bind.scalar(
            sa.text(
                "SELECT count(*) FROM pg_settings WHERE name = 'default_toast_compression' "
                "AND 'lz4' = ANY(enumvals)"
            )
        )
        if has_lz4:
            op.execute("ALTER TABLE analysis_input ALTER COLUMN data SET COMPRESSION lz4")
            op.execute("ALTER TABLE analysis ALTER COLUMN results SET COMPRESSION lz4")
        # Every re-score updates each application's fingerprint (and severity, core-hours): room
        # on each page lets PostgreSQL do that in place (a HOT update) instead of adding entries
        # to each of the table's indexes.
        op.execute("ALTER TABLE application SET (fillfactor = 80)")
        op.execute(
            "INSERT INTO analysis (application_id, analyzed_at_ms, results) "
            "SELECT application_id, max(analyzed_at_ms), json_agg(result ORDER BY heuristic)::text "
            "FROM analysis_result GROUP BY application_id"
        )
    else:
        op.execute(
            "INSERT INTO analysis (application_id, analyzed_at_ms, results) "
            "SELECT application_id, max(analyzed_at_ms), json_group_array(json(result)) "
            "FROM (SELECT * FROM analysis_result ORDER BY application_id, heuristic) "
            "GROUP BY application_id"
        )
    op.execute("DELETE FROM analysis_result WHERE severity <= 0")
    op.drop_index("ix_analysis_result_found", table_name="analysis_result")
    with op.batch_alter_table("analysis_result") as batch:
        batch.drop_column("result")
        batch.drop_column("fingerprint")
        batch.drop_column("analyzed_at_ms")
        batch.alter_column(
            "severity",
            existing_type=sa.Integer(),
            existing_nullable=False,
            comment="1 LOW, 2 MODERATE, 3 SEVERE, 4 CRITICAL",
            existing_comment="0 NONE, 1 LOW, 2 MODERATE, 3 SEVERE, 4 CRITICAL",
        )
    if pg:  # SQLite has no table comments
        op.create_table_comment(
            "analysis_result",
            "findings above NONE: one row per application x heuristic that found something",
            existing_comment="findings: one row per application x heuristic",
        )


def downgrade() -> None:
    bind = op.get_bind()
    pg = bind.dialect.name == "postgresql"
    if pg:
        op.execute("ALTER TABLE application RESET (fillfactor)")
    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    with op.batch_alter_table("analysis_result") as batch:
        batch.add_column(
            sa.Column(
                "result",
                json_type,
                nullable=True,
                comment="the whole result: thresholds, details table, advice, impact",
            )
        )
        batch.add_column(
            sa.Column(
                "fingerprint",
                sa.String(length=64),
                nullable=True,
                comment="heuristics config fingerprint",
            )
        )
        batch.add_column(
            sa.Column(
                "analyzed_at_ms",
                sa.BigInteger(),
                nullable=True,
                comment="when computed, epoch ms",
            )
        )
    op.execute("DELETE FROM analysis_result")
    if pg:
        op.execute(
            "INSERT INTO analysis_result (application_id, heuristic, severity, value, title, "
            "impact_core_hours, impact_wall_seconds, result, fingerprint, analyzed_at_ms) "
            "SELECT a.application_id, r->>'name', (r->>'severity')::int, (r->>'value')::float, "
            "r->>'title', (r->'impact'->>'core_hours')::float, "
            "(r->'impact'->>'wall_seconds')::float, r, coalesce(app.analysis_fingerprint, ''), "
            "a.analyzed_at_ms FROM analysis a JOIN application app ON app.id = a.application_id "
            "CROSS JOIN LATERAL jsonb_array_elements(a.results::jsonb) AS r"
        )
    else:
        op.execute(
            "INSERT INTO analysis_result (application_id, heuristic, severity, value, title, "
            "impact_core_hours, impact_wall_seconds, result, fingerprint, analyzed_at_ms) "
            "SELECT a.application_id, json_extract(r.value, '$.name'), "
            "json_extract(r.value, '$.severity'), json_extract(r.value, '$.value'), "
            "json_extract(r.value, '$.title'), json_extract(r.value, '$.impact.core_hours'), "
            "json_extract(r.value, '$.impact.wall_seconds'), r.value, "
            "coalesce(app.analysis_fingerprint, ''), a.analyzed_at_ms "
            "FROM analysis a JOIN application app ON app.id = a.application_id, "
            "json_each(a.results) AS r"
        )
    with op.batch_alter_table("analysis_result") as batch:
        for name in ("result", "fingerprint", "analyzed_at_ms"):
            batch.alter_column(name, nullable=False)
        batch.alter_column(
            "severity",
            existing_type=sa.Integer(),
            existing_nullable=False,
            comment="0 NONE, 1 LOW, 2 MODERATE, 3 SEVERE, 4 CRITICAL",
            existing_comment="1 LOW, 2 MODERATE, 3 SEVERE, 4 CRITICAL",
        )
    if pg:
        op.create_table_comment(
            "analysis_result",
            "findings: one row per application x heuristic",
            existing_comment="findings above NONE: one row per application x heuristic that found something",
        )
    op.create_index(
        "ix_analysis_result_found",
        "analysis_result",
        ["application_id", "heuristic"],
        postgresql_where=sa.text("severity > 0"),
        sqlite_where=sa.text("severity > 0"),
    )
    op.drop_table("heuristics_config")
    op.drop_table("analysis_input")
    op.drop_table("analysis")
