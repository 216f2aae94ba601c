"""A database that refuses writes -- read-only (the SQLite file, its folder, a PostgreSQL database
set read-only) or full (SQLite's page limit, a PostgreSQL tablespace on a filesystem a few
megabytes large) -- stops `sparkscope fetch` and `sparkscope analyze` at the first write that
fails: one line naming the database and the fix, exit 2, no further History Server request, the
run marked failed where that can still be written, and nothing lost: once the fault is gone,
the next fetch ends where an uninterrupted one does.

Every fault is real and met by real processes; the server is the recorded real SHS (FakeShs).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from fetcher.job import IN_FLIGHT_PER_THREAD
from sparkscope.db import make_engine
from sparkscope.models.fetch import FetchRun
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.fake_shs import FakeShs, running, spread_listing
from tests.support import faults, processes
from tests.support.derived import derived_state, differences

ENTRIES = spread_listing()
IDS = [e["id"] for e in ENTRIES]
BASELINE = IDS[:5]
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO ")


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "sparkscope.yaml"
    # one worker: at most the applications in flight when the fault comes are asked for further
    path.write_text("fetcher:\n  threads: 1\n  retries: 0\n  backoff_factor_s: 0\n")
    return path


@pytest.fixture
def shs() -> Iterator[FakeShs]:
    with running(ENTRIES) as server:
        yield server


def run(
    args: list[str], db_url: str, config: Path, extra: dict[str, str] | None = None, **kw: Any
) -> tuple[int, str]:
    env = {"SPARKSCOPE_DATABASE_URL": db_url, "SPARKSCOPE_CONFIG": str(config), **(extra or {})}
    return processes.finish(processes.start(args, env, **kw))


def the_one_line(out: str) -> str:
    """The output beyond progress logging ("loaded ..."): exactly one line, no traceback."""
    lines = [x for x in out.splitlines() if x.strip() and not LOG_LINE.match(x)]
    assert len(lines) == 1, out
    assert "Traceback" not in out
    return lines[0]


def apps_asked(shs: FakeShs, since: int) -> set[str]:
    """Applications the server was asked about (beyond the listing) after request ``since``."""
    return {p.split("/")[1].split("?")[0] for p in shs.paths[since:] if p.count("/") >= 1}


def baseline(shs: FakeShs, db_url: str, config: Path) -> None:
    shs.listed = set(BASELINE)
    code, out = run(["fetch", "--url", shs.url], db_url, config)
    assert code == 0, out
    shs.listed = None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_sqlite_database_stops_fetch_and_analyze_in_one_line(
    what: str, shs: FakeShs, tmp_path: Path, config_file: Path
) -> None:
    folder = tmp_path / "data"
    db = folder / "sparkscope.db"
    url = f"sqlite:///{db}"
    baseline(shs, url, config_file)
    before = digest(db)
    target = db if what == "file" else folder
    mode = target.stat().st_mode
    target.chmod(0o444 if what == "file" else 0o555)
    try:
        asked = len(shs.paths)
        for args in (["fetch", "--url", shs.url], ["analyze", "--force", "--workers", "1"]):
            code, out = run(args, url, config_file, prefix=faults.unprivileged())
            assert code == 2, out
            line = the_one_line(out)
            assert line.startswith("sparkscope: ") and str(db.parent) in line, line
            assert "writable" in line, line
        assert len(shs.paths) == asked  # the fetch asked the server nothing
    finally:
        target.chmod(mode)
    assert digest(db) == before  # (SQLite may leave an empty -wal beside a read-only file)


def test_a_full_sqlite_database_stops_the_fetch_at_the_first_failed_write(
    shs: FakeShs, tmp_path: Path, config_file: Path
) -> None:
    db = tmp_path / "full" / "sparkscope.db"
    url = f"sqlite:///{db}"
    baseline(shs, url, config_file)
    limit = faults.sqlite_page_limit(tmp_path / "site")
    limit[faults.MAX_PAGES_ENV] = str(faults.sqlite_pages(db) + 150)  # room for a few apps
    asked = len(shs.paths)
    code, out = run(["fetch", "--url", shs.url], url, config_file, limit)
    assert code == 2, out
    line = the_one_line(out)
    assert "is full (database or disk is full)" in line and "free space" in line, line
    run_row = _last_run(url)
    assert run_row.status == "failed" and run_row.error.startswith("stopped: "), run_row
    assert "is full" in run_row.error
    loaded = run_row.apps_loaded
    assert 0 < loaded < len(IDS) - len(BASELINE), out
    # after the last one loaded: those whose load failed and the others in flight then, at most
    # as many as one thread has in flight
    assert len(apps_asked(shs, asked)) <= loaded + IN_FLIGHT_PER_THREAD
    # room again: the next run completes, and ends as an uninterrupted one
    code, out = run(["fetch", "--url", shs.url], url, config_file)
    assert code == 0, out
    clean = f"sqlite:///{tmp_path / 'clean' / 'sparkscope.db'}"
    baseline(shs, clean, config_file)
    assert run(["fetch", "--url", shs.url], clean, config_file)[0] == 0
    got, want = derived_state(url), derived_state(clean)
    assert len(got["analysis"]) == len(IDS) and got["pipeline_pending"] == []
    assert differences(got, want) == {}


def test_a_read_only_postgresql_database_stops_fetch_and_analyze_in_one_line(
    shs: FakeShs, fresh_pg_url: str, pg_server_url: str, config_file: Path
) -> None:
    baseline(shs, fresh_pg_url, config_file)
    name = fresh_pg_url.rsplit("/", 1)[1]
    admin = make_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
    try:
        asked = len(shs.paths)
        for args in (["fetch", "--url", shs.url], ["analyze", "--force", "--workers", "1"]):
            code, out = run(args, fresh_pg_url, config_file)
            assert code == 2, out
            line = the_one_line(out)
            assert "the database postgresql://" in line and name in line, line
            assert "is read-only (cannot execute" in line, line
        assert len(shs.paths) == asked
    finally:
        with admin.connect() as c:
            c.execute(text(f'ALTER DATABASE "{name}" RESET default_transaction_read_only'))
        admin.dispose()
    assert [r.status for r in _runs(fresh_pg_url)] == ["ok"]


def test_a_full_postgresql_tablespace_stops_the_fetch_at_the_first_failed_write(
    shs: FakeShs, pg_server_url: str, pg_template: str, config_file: Path
) -> None:
    with faults.tiny_pg_database(pg_server_url, pg_template, size_mb=64) as (url, leave):
        baseline(shs, url, config_file)
        leave(1)  # about a third of what the other applications need
        asked = len(shs.paths)
        code, out = run(["fetch", "--url", shs.url], url, config_file)
        assert code == 2, out
        line = the_one_line(out)
        assert "is full (could not extend file" in line and "No space left on device" in line
        leave(256)  # before this process connects: a new backend may need to write a file
        run_row = _last_run(url)
        assert run_row.status == "failed" and "is full" in run_row.error, run_row
        loaded = run_row.apps_loaded
        assert 0 < loaded < len(IDS) - len(BASELINE), out
        assert len(apps_asked(shs, asked)) <= loaded + IN_FLIGHT_PER_THREAD
        code, out = run(["fetch", "--url", shs.url], url, config_file)
        assert code == 0, out
        got = derived_state(url)
    clean = create_pg_database(pg_server_url, template=pg_template)
    try:
        baseline(shs, clean, config_file)
        assert run(["fetch", "--url", shs.url], clean, config_file)[0] == 0
        want = derived_state(clean)
    finally:
        drop_pg_database(pg_server_url, clean)
    assert len(got["analysis"]) == len(IDS) and got["pipeline_pending"] == []
    assert differences(got, want) == {}


def _runs(url: str) -> list[Any]:
    engine = make_engine(url)
    with engine.connect() as c:
        rows = c.execute(select(FetchRun).order_by(FetchRun.id)).all()
    engine.dispose()
    return list(rows)


def _last_run(url: str) -> Any:
    return _runs(url)[-1]
