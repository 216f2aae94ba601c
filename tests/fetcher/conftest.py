"""Fixtures of the fetcher tests: a session factory on a fresh PostgreSQL database (the fetcher
commits), and the server, fetcher settings and response mock of the tests of the fetch path
against recorded responses (test_fetch.py, test_fetch_failures.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from tests.fetcher import recorded

SERVER = ServerConfig(name="prod", url=recorded.BASE, connect_timeout_s=1, read_timeout_s=2)
FETCHER_CONFIG = FetcherConfig(
    threads=2, retries=2, backoff_factor_s=0, top_stages=5, tasks_per_stage=20
)


@pytest.fixture
def factory(fresh_pg_url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on a migrated PostgreSQL database of the test's own (the fetcher commits)."""
    engine = make_engine(fresh_pg_url)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock
