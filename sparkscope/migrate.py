"""Run Alembic migrations programmatically (used by `sparkscope db` and the tests), and tell whether a
database's schema is the one this code needs.

Migrations run one at a time per database: under a PostgreSQL advisory lock, or a file lock
beside a SQLite file. A second upgrade started meanwhile waits, then finds the schema at head and
does nothing (two first-ever runs racing on a new database both end with it migrated once).
"""

from __future__ import annotations

import fcntl
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import SAWarning, SQLAlchemyError

from sparkscope import assets
from sparkscope.db import (
    URL_HINT,
    DatabaseProblem,
    describe_error,
    error_reason,
    make_engine,
    safe_url,
    sqlite_path,
)

MIGRATIONS_DIR = assets.folder("migrations")
#: Key of the PostgreSQL advisory lock held while a migration runs.
MIGRATION_LOCK_KEY = 0x5350_4B53_4D49_4752


def alembic_config(database_url: str) -> AlembicConfig:
    """An Alembic config pointing at our migrations folder and the given database."""
    alembic_config = AlembicConfig(str(MIGRATIONS_DIR / "alembic.ini"))
    alembic_config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # alembic.ini prepends the source tree to sys.path for `alembic -c`; Sparkscope is importable
    # here already, and inside an installed package that entry would expose its modules top-level.
    alembic_config.set_main_option("prepend_sys_path", "")
    # ConfigParser treats % specially; URLs can hold escaped characters.
    alembic_config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return alembic_config


@contextmanager
def migration_lock(database_url: str) -> Iterator[Any]:
    """Hold the database's migration lock (waiting for it); yield the PostgreSQL connection
    that holds it, for the migration to run on, or None."""
    path = sqlite_path(database_url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fh = open(f"{path}.migrate-lock", "a+")  # noqa: SIM115 - closed below
        except OSError:  # a read-only folder: nothing can be migrated there anyway
            yield None
            return
        with fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield None
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return
    engine = make_engine(database_url)
    try:
        if engine.dialect.name != "postgresql":
            yield None
            return
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
            conn.commit()
            try:
                yield conn
            finally:
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
                conn.commit()
    finally:
        engine.dispose()


def _run(database_url: str, run: Any, revision: str) -> None:
    with migration_lock(database_url) as conn, warnings.catch_warnings():
        # SQLite's batch mode reflects the tables a changed one refers to; the application
        # table's indexes on expressions cannot be reflected there, and are not touched.
        warnings.filterwarnings(
            "ignore", "Skipped unsupported reflection of expression-based index", SAWarning
        )
        cfg = alembic_config(database_url)
        if conn is not None:
            cfg.attributes["connection"] = conn
        run(cfg, revision)


def upgrade(database_url: str, revision: str = "head") -> None:
    """Upgrade the schema to ``revision`` (waiting for a migration already running)."""
    _run(database_url, command.upgrade, revision)


def downgrade(database_url: str, revision: str) -> None:
    """Downgrade the schema to ``revision`` (``base`` removes everything)."""
    _run(database_url, command.downgrade, revision)


def current(database_url: str) -> None:
    """Print the current revision."""
    command.current(alembic_config(database_url), verbose=False)


def check(database_url: str) -> None:
    """Fail when the models differ from what the migrations create.

    SQLite cannot reflect an index on an expression (search's rank indexes), so those are compared
    on PostgreSQL only."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "Skipped unsupported reflection of expression-based index", SAWarning
        )
        warnings.filterwarnings(
            "ignore", "autogenerate skipping metadata-specified expression-based index", UserWarning
        )
        command.check(alembic_config(database_url))


@cache
def code_heads() -> tuple[str, ...]:
    """The schema revision(s) this code needs: the migrations' head(s)."""
    return tuple(sorted(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads()))


def stored_revisions(engine: Engine) -> tuple[str, ...] | None:
    """The revision(s) recorded in the database, or None when it has no Alembic table at all."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
        return tuple(sorted(rows))


def check_schema(engine: Engine, shown_url: str | None = None) -> None:
    """Raise :class:`DatabaseProblem` unless the database is reachable and at this code's head.

    Connection errors (unreachable server, refused login, missing database) propagate as SQLAlchemy
    errors, which :func:`sparkscope.db.describe_error` turns into one line.
    """
    url = safe_url(shown_url or engine.url)
    stored = stored_revisions(engine)
    heads = code_heads()
    if stored == heads:
        return
    upgrade_hint = "run `sparkscope db upgrade`"
    if not stored:
        raise DatabaseProblem(f"the database at {url} has no Sparkscope tables: {upgrade_hint}")
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    known = {rev.revision for rev in script.walk_revisions()}
    unknown = [rev for rev in stored if rev not in known]
    if unknown:
        raise DatabaseProblem(
            f"the database at {url} is at schema revision {', '.join(unknown)}, newer than this "
            f"version of Sparkscope knows (it needs {', '.join(heads)}): upgrade Sparkscope"
        )
    raise DatabaseProblem(
        f"the database at {url} is at schema revision {', '.join(stored)}, older than this "
        f"version of Sparkscope needs ({', '.join(heads)}): {upgrade_hint}"
    )


def database_problem(url: str, engine: Engine | None = None, schema: bool = True) -> str | None:
    """None when the database at ``url`` can be used (reachable and, with ``schema``, at this code's
    head), else one line naming it (password hidden) and the fix. Never creates a SQLite file."""
    own = engine is None
    if engine is None:
        engine = make_engine(url, create=False)
    try:
        if schema:
            check_schema(engine, url)
        else:
            with engine.connect():
                pass
    except DatabaseProblem as exc:
        return str(exc)
    except SQLAlchemyError as exc:
        reason = error_reason(getattr(exc, "orig", None) or exc)
        return describe_error(url, exc) or (
            f"cannot use the database {safe_url(url)} ({reason}): check it and its URL {URL_HINT}"
        )
    finally:
        if own:
            engine.dispose()
    return None
