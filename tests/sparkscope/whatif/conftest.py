"""The recorded scaling corpus (demo/scaling-events, 36 real runs) replayed into PostgreSQL once
per session with `sparkscope fetch --url`, then copied per module or test."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from sparkscope.cli.main import cli
from sparkscope.config.loader import parse_config
from sparkscope.web.app import create_app
from tests.conftest import create_pg_database, drop_pg_database

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "demo" / "scaling-events"


def whatif_app(
    url: str, prices: dict[str, Any] | None = None, patterns: Sequence[str] | None = None
) -> Flask:
    """The web app on ``url`` with what-if answers never cached, optional ``prices`` and
    ``predictions.key_patterns``."""
    raw: dict[str, Any] = {"database_url": url}
    if prices:
        raw["prices"] = prices
    if patterns is not None:
        raw["predictions"] = {"key_patterns": list(patterns)}
    return create_app(
        {"TESTING": True, "WHATIF_CACHE_SECONDS": 0}, config=parse_config(raw, env={})
    )


@pytest.fixture(scope="session")
def corpus_template(pg_server_url: str, pg_template: str) -> Iterator[str]:
    url = create_pg_database(pg_server_url, template=pg_template)
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(CORPUS)], env={"SPARKSCOPE_DATABASE_URL": url}
    )
    assert result.exit_code == 0, result.output
    name = make_url(url).database
    admin = create_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # the fetch's pooled connections would block copies
        conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = :n AND pid <> pg_backend_pid()"
            ),
            {"n": name},
        )
    admin.dispose()
    yield name or ""
    drop_pg_database(pg_server_url, url)


@pytest.fixture(scope="module")
def corpus_url(pg_server_url: str, corpus_template: str) -> Iterator[str]:
    """A copy of the corpus database for a module's read-only tests."""
    url = create_pg_database(pg_server_url, template=corpus_template)
    yield url
    drop_pg_database(pg_server_url, url)


@pytest.fixture
def fresh_corpus_url(pg_server_url: str, corpus_template: str) -> Iterator[str]:
    """A copy of the corpus database of the test's own, to change."""
    url = create_pg_database(pg_server_url, template=corpus_template)
    yield url
    drop_pg_database(pg_server_url, url)
