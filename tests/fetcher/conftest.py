"""Fixtures of the fetcher tests that commit: a session factory on a fresh PostgreSQL database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.db import make_engine, make_sessionmaker


@pytest.fixture
def factory(fresh_pg_url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on a migrated PostgreSQL database of the test's own (the fetcher commits)."""
    engine = make_engine(fresh_pg_url)
    yield make_sessionmaker(engine)
    engine.dispose()
