"""Two first-ever runs at once on a new database, as real concurrent processes: on the embedded
SQLite, two `sparkscope fetch` (which set the file up themselves); on PostgreSQL, two
`sparkscope db upgrade` and then two `sparkscope fetch`. One does the work; the other waits for
the migration and finds it done, or finds the fetch lock taken and says so, exit 0 -- never a
schema half made ("no Sparkscope tables", "schema older"), never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from sparkscope import migrate
from sparkscope.db import make_engine
from sparkscope.models.application import Application
from sparkscope.models.fetch import FetchRun
from tests.conftest import create_pg_database, drop_pg_database
from tests.support import processes

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "spark-events"  # 21 applications
LOCKED = "another fetch is running"
DONE = "total: loaded 21 applications"


def race(args: list[str], env: dict[str, str], n: int = 2) -> list[str]:
    """Start ``n`` identical processes at once; their outputs, each checked to exit 0."""
    procs = [processes.start(args, env) for _ in range(n)]
    outs = []
    for proc in procs:
        code, out = processes.finish(proc)
        assert code == 0, out
        assert "Traceback" not in out and "schema" not in out and "tables" not in out, out
        outs.append(out)
    return outs


def stored(url: str) -> tuple[int, list[str]]:
    engine = make_engine(url)
    with engine.connect() as c:
        apps = int(c.scalar(select(func.count()).select_from(Application)) or 0)
        runs = list(c.scalars(select(FetchRun.status)))
    engine.dispose()
    return apps, runs


def check_fetches(outs: list[str], url: str) -> bool:
    """One fetch loaded everything; the other found the lock taken (True) or, started after
    the first had finished, found nothing to load (False)."""
    done = [o for o in outs if DONE in o]
    assert len(done) == 1, outs
    other = next(o for o in outs if o is not done[0])
    assert LOCKED in other or "total: loaded 0 applications" in other, other
    assert stored(url)[0] == 21
    assert set(stored(url)[1]) == {"ok"}
    assert migrate.database_problem(url) is None  # at this code's head
    return LOCKED in other


def test_two_first_ever_fetches_on_a_new_sqlite_database(tmp_path: Path) -> None:
    raced = 0
    for i in range(4):
        url = f"sqlite:///{tmp_path / f'race{i}' / 'sparkscope.db'}"
        outs = race(["fetch", "--url", str(DEMO)], {"SPARKSCOPE_DATABASE_URL": url})
        raced += check_fetches(outs, url)
    assert raced >= 1  # the processes did overlap


@pytest.mark.parametrize("round_", range(2))
def test_two_first_ever_upgrades_then_fetches_on_a_new_postgresql_database(
    round_: int, pg_server_url: str
) -> None:
    url = create_pg_database(pg_server_url)  # empty: no schema at all
    try:
        env = {"SPARKSCOPE_DATABASE_URL": url}
        for out in race(["db", "upgrade"], env):
            assert out.startswith("database at head: "), out
        assert migrate.database_problem(url) is None
        check_fetches(race(["fetch", "--url", str(DEMO)], env), url)
    finally:
        drop_pg_database(pg_server_url, url)
