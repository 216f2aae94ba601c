"""Shared fixtures: a real PostgreSQL (started for the run when TEST_DATABASE_URL is unset), SQLite,
rolled-back sessions, and the Flask app/client/runner as in flaskr."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from sparkscope import migrate
from sparkscope.db import make_engine

ROOT = Path(__file__).resolve().parent.parent


def _server_url() -> str:
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        return url
    # No server given: start the throwaway one the Makefile uses (idempotent).
    out = subprocess.run(
        [str(ROOT / "scripts" / "pg-start.sh")], check=True, capture_output=True, text=True
    )
    url = out.stdout.strip().splitlines()[-1]
    os.environ["TEST_DATABASE_URL"] = url
    return url


def _admin_engine(server_url: str) -> Engine:
    return make_engine(server_url, isolation_level="AUTOCOMMIT")


def create_pg_database(server_url: str, template: str | None = None) -> str:
    """Create a uniquely named database (optionally from a template); return its URL."""
    name = f"sparkscope_test_{uuid.uuid4().hex[:12]}"
    admin = _admin_engine(server_url)
    with admin.connect() as conn:
        tmpl = f' TEMPLATE "{template}"' if template else ""
        conn.execute(text(f'CREATE DATABASE "{name}"{tmpl}'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(server_url: str, url: str) -> None:
    """Drop a database created by :func:`create_pg_database`."""
    name = make_url(url).database
    admin = _admin_engine(server_url)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """URL of the PostgreSQL server's admin database."""
    return _server_url()


@pytest.fixture(scope="session")
def pg_template(pg_server_url: str) -> Iterator[str]:
    """A database migrated to head, used as a template so each test gets a fresh copy fast."""
    url = create_pg_database(pg_server_url)
    migrate.upgrade(url)
    yield make_url(url).database or ""
    drop_pg_database(pg_server_url, url)


@pytest.fixture(scope="session")
def pg_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A migrated PostgreSQL database shared by the session's rolled-back tests."""
    url = create_pg_database(pg_server_url, template=pg_template)
    yield url
    drop_pg_database(pg_server_url, url)


@pytest.fixture
def fresh_pg_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A migrated PostgreSQL database of the test's own, for code that commits."""
    url = create_pg_database(pg_server_url, template=pg_template)
    yield url
    drop_pg_database(pg_server_url, url)


@pytest.fixture
def fresh_sqlite_url(tmp_path: Path) -> str:
    """A migrated SQLite database file of the test's own."""
    url = f"sqlite:///{tmp_path / 'sparkscope.db'}"
    migrate.upgrade(url)
    return url


@pytest.fixture(params=["postgresql", "sqlite"])
def fresh_db_url(request: pytest.FixtureRequest) -> str:
    """The same test on a fresh PostgreSQL and a fresh SQLite database."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("fresh_pg_url"))
    return str(request.getfixturevalue("fresh_sqlite_url"))


@pytest.fixture(scope="session")
def pg_engine(pg_url: str) -> Iterator[Engine]:
    engine = make_engine(pg_url)
    yield engine
    engine.dispose()


@pytest.fixture
def session(pg_engine: Engine) -> Iterator[Session]:
    """A Session inside a transaction that is rolled back after the test (commits become savepoints)."""
    with pg_engine.connect() as conn:
        trans = conn.begin()
        sess = Session(bind=conn, join_transaction_mode="create_savepoint", expire_on_commit=False)
        try:
            yield sess
        finally:
            sess.close()
            trans.rollback()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """In CI (``CI`` set) a skipped test is a failure: every test must run there, none silently skipped."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {report.longrepr}"
