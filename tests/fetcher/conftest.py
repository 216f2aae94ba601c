"""Fixtures of the fetcher tests: a session factory on a fresh PostgreSQL database (the fetcher
commits); the server, fetcher settings and response mock of the tests of the fetch path against
recorded responses (test_fetch.py, test_fetch_failures.py); and the real `sparkscope fetch`
processes, their kills and the checks of the tests that interrupt them (test_interrupted.py,
test_interrupted_models.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from tests.fetcher import recorded, stub_shs
from tests.support.derived import derived_state, differences
from tests.support.processes import CHILD

ROOT = Path(__file__).resolve().parents[2]

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
def rsps() -> Iterator[stub_shs.StubShs]:
    with stub_shs.StubShs(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "sparkscope.yaml"
    path.write_text(
        "fetcher:\n  threads: 4\n  retries: 1\n  backoff_factor_s: 0\n  listing_page_size: 4\n"
    )
    return path


def start_fetch(url: str, db_url: str, config: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PGAPPNAME": CHILD,  # what table_locked waits for after a kill
        "SPARKSCOPE_DATABASE_URL": db_url,
        "SPARKSCOPE_CONFIG": str(config),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "sparkscope", "fetch", "--url", url],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def fetch(url: str, db_url: str, config: Path, expect: int = 0) -> str:
    proc = start_fetch(url, db_url, config)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == expect, out
    return out


def assert_derived(db_url: str, want: dict[str, Any]) -> None:
    """Every derived table equals ``want`` and the ledger is empty."""
    got = derived_state(db_url)
    assert got["pipeline_pending"] == []
    assert differences(got, want) == {}
