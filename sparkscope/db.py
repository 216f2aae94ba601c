"""Engine and session handling shared by the web app, the fetcher and the CLI (no Flask here).

PostgreSQL is reached through psycopg 3 whatever driver a URL names (see ``normalize_url``), and
database problems (unreachable server, refused login, missing database or file) are described in one
line by ``describe_error``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, exc
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

#: Driver names that mean "PostgreSQL": all are served by psycopg 3, the one driver installed.
POSTGRES_DRIVERS = ("postgresql", "postgres", "postgresql+psycopg2", "postgresql+psycopg")
POSTGRES_DRIVER = "postgresql+psycopg"
CONNECT_TIMEOUT_S = 10
URL_HINT = "(database_url in the config, or SPARKSCOPE_DATABASE_URL)"


class DatabaseProblem(Exception):
    """The database cannot be used as it is; the message names it and says what to do (one line)."""


class StorageFault(DatabaseProblem):
    """The database refuses writes (read-only, full, failing I/O, no write permission): the
    command stops at the first failed write, as every later one would fail too."""


def now_ms() -> int:
    """Current time in epoch milliseconds."""
    return int(time.time() * 1000)


#: The page size of a SQLite database Sparkscope creates (SQLite's default is 4 KiB). A commit
#: writes every page it changed to the write-ahead log, frame by frame, and a fetch appends to a
#: score of tables at once: with 16 KiB pages a fetch's commits cost about a third less CPU
#: (docs/dev/benchmarks.md). A database made with other pages keeps them.
SQLITE_PAGE_SIZE = 16384


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # Foreign keys are off by default in SQLite; WAL lets the web app read while the fetcher writes.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    # only an empty database takes a page size (before WAL is on); on any other it is a no-op
    cur.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def normalize_url(url: str | URL) -> URL:
    """The URL as Sparkscope connects to it: any PostgreSQL form (``postgresql://``,
    ``postgres://``, ``postgresql+psycopg2://``) uses psycopg 3, whatever SQLAlchemy's default."""
    parsed = make_url(url)
    if parsed.drivername in POSTGRES_DRIVERS:
        parsed = parsed.set(drivername=POSTGRES_DRIVER)
    return parsed


def safe_url(url: str | URL) -> str:
    """A database URL with its password hidden, for messages."""
    return make_url(url).render_as_string(hide_password=True)


def sqlite_path(url: str | URL) -> Path | None:
    """The file of a SQLite URL (None for other databases and in-memory SQLite)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:" or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database).expanduser()


def make_engine(url: str | URL, *, create: bool = True, **kwargs: Any) -> Engine:
    """Create an engine; for SQLite, set the pragmas we rely on.

    ``create=False`` (the web app) never creates a SQLite file: it opens the file read-write only if
    it exists, and drops a pooled connection whose file was deleted or replaced since it was opened.
    With ``create=True`` (the CLI, the tests), the SQLite file and its folder are made when missing.
    """
    parsed = normalize_url(url)
    path = sqlite_path(parsed)
    if path is not None:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            parsed = parsed.set(
                database=f"file:{quote(str(path))}", query={"mode": "rw", "uri": "true"}
            )
        engine = create_engine(parsed, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        if not create:
            _watch_sqlite_file(engine, path)
        return engine
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(parsed, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.drivername == POSTGRES_DRIVER and "connect_timeout" not in parsed.query:
        kwargs.setdefault("connect_args", {}).setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    kwargs.setdefault("pool_pre_ping", True)
    engine = create_engine(parsed, **kwargs)
    if parsed.drivername == POSTGRES_DRIVER:
        event.listen(engine, "do_connect", _psycopg_connect)
    return engine


def _psycopg_connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    return _closing_connection_class().connect(*cargs, **cparams)


@cache
def _closing_connection_class() -> Any:
    import psycopg

    class ClosingConnection(psycopg.Connection):  # type: ignore[type-arg]
        """A psycopg 3 connection that closes itself when garbage-collected, as psycopg2's do,
        instead of warning: an engine dropped without ``dispose()`` then frees its server
        connections at once, as it did with psycopg2."""

        def __del__(self, *_args: Any) -> None:
            if not getattr(self, "closed", True):
                with suppress(Exception):
                    self.close()

    return ClosingConnection


def _watch_sqlite_file(engine: Engine, path: Path) -> None:
    # A connection keeps reading a deleted (or replaced) file through its open descriptor; drop it
    # at checkout so the next connection opens the file now at that path, or fails if there is none.
    def remember(_dbapi_conn: Any, record: Any) -> None:
        record.info["sqlite_inode"] = _inode(path)

    def verify(_dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        if _inode(path) != record.info.get("sqlite_inode"):
            raise exc.DisconnectionError(f"{path} was deleted or replaced")

    event.listen(engine, "connect", remember)
    event.listen(engine, "checkout", verify)


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


_UNREACHABLE = re.compile(
    r"connection refused|could not connect|connection failed|timeout expired|timed out|"
    r"could not translate host name|name or service not known|failed to resolve host|"
    r"no route to host|network is unreachable|server closed the connection|connection reset",
    re.I,
)
_LOGIN = re.compile(
    r"password authentication failed|no password supplied|authentication failed|"
    r'role ".*" does not exist|pg_hba.conf rejects',
    re.I,
)
_NO_DATABASE = re.compile(r'database "(?P<name>[^"]*)" does not exist', re.I)


def error_reason(error: BaseException) -> str:
    """The gist of a driver error, on one line: libpq's "connection to server at ... failed:
    FATAL:" preamble and the hint lines after the first are left out."""
    lines = [x.strip() for x in str(error).strip().splitlines() if x.strip()]
    if not lines:
        return type(error).__name__
    reason = re.sub(r"^.*?\bport \d+ failed:\s*", "", lines[0])
    return re.sub(r"^(FATAL|ERROR):\s*", "", reason)


def describe_error(url: str | URL, error: BaseException) -> str | None:
    """One line naming the database (password hidden) and the fix, for an error raised while
    connecting; None when the error is not one of those (a bug, not a database problem)."""
    if isinstance(error, DatabaseProblem):
        return str(error)
    shown = safe_url(url)
    orig = getattr(error, "orig", None) or error
    reason = error_reason(orig)
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        return (
            f"the SQLite database {shown} does not exist: run `sparkscope db upgrade` "
            f"(it creates it), or fix the URL {URL_HINT}"
        )
    fault = storage_fault(url, error)
    if fault is not None:
        return str(fault)
    if path is not None:
        if "unable to open" in reason:
            return (
                f"cannot open the SQLite database {shown} ({reason}): check the file's permissions"
            )
        return None
    if not isinstance(error, (exc.OperationalError, exc.InterfaceError)):
        return None
    if match := _NO_DATABASE.search(str(orig)):
        return (
            f'database "{match["name"]}" does not exist on the server of {shown}: create it '
            f"(e.g. createdb {match['name']}) and run `sparkscope db upgrade`, or fix the URL "
            f"{URL_HINT}"
        )
    if _LOGIN.search(str(orig)):
        return (
            f"the database server refused the login of {shown} ({reason}): fix the user name or "
            f"password {URL_HINT}"
        )
    if _UNREACHABLE.search(str(orig)):
        return (
            f"cannot reach the database server of {shown} ({reason}): start it, or fix the host "
            f"and port {URL_HINT}"
        )
    return None


#: SQLite's primary result codes of a database that cannot take writes, with what to do.
_SQLITE_FAULTS = {
    8: ("is read-only", "make the file and its folder writable"),  # SQLITE_READONLY
    10: ("cannot be written (I/O error)", "check the disk"),  # SQLITE_IOERR
    13: ("is full", "free space on its disk"),  # SQLITE_FULL
}
#: PostgreSQL's SQLSTATEs of the same.
_PG_FAULTS = {
    "25006": ("is read-only", "make it writable (default_transaction_read_only, a standby?)"),
    "53100": ("is full", "free space on the database server's disk"),
    "58030": ("cannot be written (I/O error)", "check the database server's disk"),
}


def storage_fault(url: str | URL, error: BaseException) -> StorageFault | None:
    """The one-line fault for an error raised because the database cannot take writes, else
    None (another database problem, or a bug)."""
    if isinstance(error, StorageFault):
        return error
    orig = getattr(error, "orig", None) or error
    fault = None
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        fault = _SQLITE_FAULTS.get(code & 0xFF)
    elif isinstance(state := getattr(orig, "sqlstate", None), str):
        fault = _PG_FAULTS.get(state)
    if fault is None:
        return None
    what, fix = fault
    shown = make_url(url)
    if shown.drivername == POSTGRES_DRIVER:  # as the user wrote it, not as we connect
        shown = shown.set(drivername="postgresql")
    return StorageFault(
        f"the database {safe_url(shown)} {what} ({error_reason(orig)}): stopped at the first "
        f"write that failed; {fix}, then run the command again"
    )


@contextmanager
def storage_faults(url: str | URL) -> Iterator[None]:
    """Raise a database's refusal to take writes in the block as :class:`StorageFault`."""
    try:
        yield
    except exc.SQLAlchemyError as error:
        fault = storage_fault(url, error)
        if fault is None:
            raise
        raise fault from error


def factory_url(factory: sessionmaker[Session]) -> URL:
    """The URL of the database a session factory is bound to."""
    bind = factory.kw["bind"]
    return bind.url if isinstance(bind, Engine) else bind.engine.url


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
