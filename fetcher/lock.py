"""The database-wide fetch lock: one fetch run at a time per database."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from sparkscope.db import DatabaseProblem, is_postgres

#: Key of the PostgreSQL advisory lock that serialises fetch runs on one database.
ADVISORY_LOCK_KEY = 0x5350_4B53_434F_5045 & 0x7FFF_FFFF_FFFF_FFFF


class FetchLocked(Exception):
    """Another fetch run holds the lock on this database."""


@contextmanager
def fetch_lock(engine: Engine) -> Iterator[None]:
    """Hold the database-wide fetch lock: a PostgreSQL advisory lock, or a file lock for SQLite."""
    if is_postgres(engine):
        with engine.connect() as conn:
            got = conn.execute(
                text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_LOCK_KEY}
            ).scalar()
            conn.commit()
            if not got:
                raise FetchLocked("another fetch holds the PostgreSQL advisory lock")
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_LOCK_KEY})
                conn.commit()
        return
    database = make_url(str(engine.url)).database
    lock_path = Path(f"{database}.fetch-lock") if database and database != ":memory:" else None
    if lock_path is None:
        yield
        return
    try:
        fh = open(lock_path, "a+")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise DatabaseProblem(
            f"cannot open the fetch lock {lock_path} ({exc.strerror}): the SQLite database's "
            "folder must be writable"
        ) from None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FetchLocked(f"another fetch holds {lock_path}") from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
