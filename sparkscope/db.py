"""Engine and session handling shared by the web app, the fetcher and the CLI (no Flask here)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def now_ms() -> int:
    """Current time in epoch milliseconds."""
    return int(time.time() * 1000)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # Foreign keys are off by default in SQLite; WAL lets the web app read while the fetcher writes.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine; for SQLite, create the file's folder and set the pragmas we rely on."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """A sessionmaker whose objects stay readable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def is_postgres(engine_or_session: Engine | Session) -> bool:
    """True when the bound database is PostgreSQL."""
    bind = (
        engine_or_session.get_bind()
        if isinstance(engine_or_session, Session)
        else engine_or_session
    )
    return bind.dialect.name == "postgresql"


def dialect_insert(session: Session, table: Any) -> Any:
    """INSERT with ON CONFLICT support, in the session's dialect (PostgreSQL or SQLite)."""
    return (postgresql.insert if is_postgres(session) else sqlite.insert)(table)
