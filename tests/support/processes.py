"""Real `sparkscope` processes for tests that kill them (SIGKILL) or race them, and a PostgreSQL
table lock that stops such a process at a chosen write so that it is killed exactly there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.pool import NullPool

from sparkscope.db import make_engine
from sparkscope.models.application import Application

ROOT = Path(__file__).resolve().parents[2]


def start(
    args: list[str], env: dict[str, str], prefix: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    """`python -m sparkscope ARGS` with ``env`` added to this environment, output captured;
    ``prefix``: a command that runs it (e.g. :func:`tests.support.faults.unprivileged`)."""
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "sparkscope", *args],
        env={**os.environ, "PGAPPNAME": CHILD, **env},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout_s: float = 300) -> tuple[int, str]:
    """Wait for a process: (exit code, output)."""
    out, _ = proc.communicate(timeout=timeout_s)
    return proc.returncode, out


def wait_for(what: Callable[[], bool], proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Poll ``what`` until it holds; fail if the process ends first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while not what():
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"the process ended (exit {proc.returncode}) before the kill point:\n{out}")
        assert time.monotonic() < deadline, "kill point never reached"
        time.sleep(0.02)


def kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL, and make sure that is how it ended."""
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def count_apps(db_url: str) -> int:
    """How many applications the database at ``db_url`` holds (a connection of its own)."""
    engine = make_engine(db_url, poolclass=NullPool)
    with engine.connect() as c:
        n = int(c.scalar(select(func.count()).select_from(Application)) or 0)
    engine.dispose()
    return n


HOLDER = "test-lock-holder"
#: The application name of the commands :func:`start` runs (libpq reads it from PGAPPNAME).
CHILD = "sparkscope-test-command"


def others(db_url: str, where: str = "true") -> bool:
    """Whether a client of this PostgreSQL database other than the holder matches ``where``."""
    engine = make_engine(db_url, poolclass=NullPool)
    try:
        with engine.connect() as c:
            n = c.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                    f" AND application_name <> '{HOLDER}' AND {where}"
                )
            )
    finally:
        engine.dispose()
    return bool(n)


def backends(db_url: str) -> list[tuple[str, str, str]]:
    """(application name, state, query) of the other clients of this database."""
    engine = make_engine(db_url, poolclass=NullPool)
    try:
        with engine.connect() as c:
            rows = c.execute(
                text(
                    "SELECT application_name, state, left(query, 120) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    " AND backend_type = 'client backend'"
                )
            ).all()
    finally:
        engine.dispose()
    return [(str(a), str(b), str(q)) for a, b, q in rows]


def waiting_on_a_lock(db_url: str) -> Callable[[], bool]:
    """A check: another client of the database waits for a lock."""
    return lambda: others(db_url, "wait_event_type = 'Lock'")


@contextmanager
def table_locked(db_url: str, table: str) -> Iterator[None]:
    """Hold ``table`` in EXCLUSIVE mode (reads go on, writes wait) for the block; on leaving,
    release it and wait until every other client of the database has gone."""
    engine = make_engine(db_url, connect_args={"application_name": HOLDER})
    holder = engine.connect()
    holder.execute(text(f"LOCK TABLE {table} IN EXCLUSIVE MODE"))
    try:
        yield
    finally:
        holder.rollback()
        deadline = time.monotonic() + 180  # a loaded machine can take long
        # the commands started here, not this process's own idle pooled connections
        while others(db_url, f"application_name = '{CHILD}'"):
            assert time.monotonic() < deadline, (
                f"a killed client's backend never went away: {backends(db_url)}"
            )
            time.sleep(0.05)
        holder.close()
        engine.dispose()
