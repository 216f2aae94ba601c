"""An interrupted fetch never loses an application: SIGKILL a real `sparkscope fetch` process at
several points, or take its server away half-way, then run it again; the database must then hold
exactly what one uninterrupted fetch stores, application by application.

The server replays the 21 applications recorded from a real SHS with their end times spread over
six days (7 hours apart, far more than `fetcher.overlap_minutes`), so a watermark taken from the
newest stored end time would skip the older ones for ever.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.pool import NullPool

from fetcher.listing import DAY_MS
from sparkscope.db import make_engine
from sparkscope.models.app_rows import APP_CHILD_TABLES
from sparkscope.models.application import Application, Stage, Task
from sparkscope.models.fetch import FetchFailure, FetchRun, FetchWatermark
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.fake_shs import FakeShs, running, spread_listing

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = spread_listing()
IDS = [e["id"] for e in ENTRIES]  # oldest first
BASELINE, NEW = IDS[:5], IDS[5:]
SKIPPED_COLUMNS = {"id", "server_id", "fetched_at_ms"}


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "sparkscope.yaml"
    path.write_text(
        "fetcher:\n  threads: 4\n  retries: 1\n  backoff_factor_s: 0\n  listing_page_size: 4\n"
    )
    return path


def start_fetch(url: str, db_url: str, config: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "SPARKSCOPE_DATABASE_URL": db_url, "SPARKSCOPE_CONFIG": str(config)}
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


def wait_for(what: Callable[[], bool], proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"the fetch ended (exit {proc.returncode}) before the kill point:\n{out}")
        assert time.monotonic() < deadline, "kill point never reached"
        time.sleep(0.02)


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def count_apps(db_url: str) -> int:
    engine = make_engine(db_url)
    with engine.connect() as c:
        n = int(c.scalar(select(func.count()).select_from(Application)) or 0)
    engine.dispose()
    return n


def snapshot(db_url: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Per application: its row (ids and fetch time left out), rows per child table, stage and
    task keys. Also asserts nothing is recorded as failed."""
    engine = make_engine(db_url)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    with engine.connect() as c:
        keys = {}
        for row in c.execute(select(Application)).mappings():
            key = (row["app_id"], row["attempt_id"])
            keys[row["id"]] = key
            out[key] = {"row": {k: v for k, v in row.items() if k not in SKIPPED_COLUMNS}}
        for table in APP_CHILD_TABLES:
            q = select(table.application_id, func.count()).group_by(table.application_id)
            for pk, n in c.execute(q):
                out[keys[pk]][table.__tablename__] = n
        for pk, stage_id, attempt, status, run_ms in c.execute(
            select(
                Stage.application_id,
                Stage.stage_id,
                Stage.attempt_id,
                Stage.status,
                Stage.executor_run_time_ms,
            )
        ):
            out[keys[pk]].setdefault("stages", set()).add((stage_id, attempt, status, run_ms))
        for pk, stage_id, task_id, kept in c.execute(
            select(Task.application_id, Task.stage_id, Task.task_id, Task.kept_because)
        ):
            out[keys[pk]].setdefault("tasks", set()).add((stage_id, task_id, kept))
        assert c.scalar(select(func.count()).select_from(FetchFailure)) == 0
    engine.dispose()
    return out


@pytest.fixture(scope="module")
def truth(pg_server_url: str, pg_template: str, config_file: Path) -> Iterator[dict[Any, Any]]:
    """What one uninterrupted fetch of the whole server stores."""
    url = create_pg_database(pg_server_url, template=pg_template)
    try:
        with running(ENTRIES) as shs:
            fetch(shs.url, url, config_file)
        snap = snapshot(url)
    finally:
        drop_pg_database(pg_server_url, url)
    assert sorted(k[0] for k in snap) == sorted(IDS)
    yield snap


def baseline(shs: FakeShs, db_url: str, config: Path) -> None:
    """A first complete run while the server lists only the five oldest apps."""
    shs.listed = set(BASELINE)
    fetch(shs.url, db_url, config)
    assert count_apps(db_url) == len(BASELINE)
    shs.listed = None


def assert_whole_apps_only(db_url: str, truth: dict[Any, Any]) -> None:
    """Whatever a killed run left is complete: never half an application."""
    partial = snapshot(db_url)
    assert set(partial) <= set(truth)
    assert {k: truth[k] for k in partial} == partial


def _others(db_url: str, where: str) -> Callable[[], bool]:
    """Whether another client backend of this database (not the lock holder) matches ``where``."""

    def check() -> bool:
        engine = make_engine(db_url, poolclass=NullPool)
        with engine.connect() as c:
            n = c.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                    f" AND application_name <> 'holder' AND {where}"
                )
            )
        engine.dispose()
        return bool(n)

    return check


@pytest.mark.parametrize(
    "point", ["during_listing", "after_first_app", "half_way", "oldest_hangs", "in_transaction"]
)
def test_killed_fetch_then_rerun_holds_exactly_one_uninterrupted_fetch(
    point: str, truth: dict[Any, Any], fresh_pg_url: str, config_file: Path
) -> None:
    with running(ENTRIES) as shs:
        baseline(shs, fresh_pg_url, config_file)
        holder = None
        if point == "during_listing":
            shs.hold_listing_call = shs.listing_calls + 3  # the third page of the next run
        elif point == "after_first_app":
            shs.hold_apps = set(NEW[1:])
        elif point == "half_way":
            shs.hold_apps = set(NEW[len(NEW) // 2 :])
        elif point == "oldest_hangs":
            shs.hold_apps = {NEW[0]}  # every newer app loads meanwhile
        else:
            engine = make_engine(fresh_pg_url, connect_args={"application_name": "holder"})
            holder = engine.connect()
            holder.execute(text("LOCK TABLE fetch_watermark IN EXCLUSIVE MODE"))
        proc = start_fetch(shs.url, fresh_pg_url, config_file)
        try:
            if point == "during_listing":
                wait_for(shs.holding.is_set, proc)
            elif point == "after_first_app":
                wait_for(lambda: count_apps(fresh_pg_url) == len(BASELINE) + 1, proc)
            elif point == "half_way":
                wait_for(lambda: count_apps(fresh_pg_url) == len(BASELINE) + len(NEW) // 2, proc)
            elif point == "oldest_hangs":
                wait_for(lambda: count_apps(fresh_pg_url) == len(IDS) - 1, proc)
            else:
                wait_for(_others(fresh_pg_url, "wait_event_type = 'Lock'"), proc)
        finally:
            kill(proc)
            if holder is not None:
                holder.rollback()  # the killed run's transaction now runs on and is rolled back
                deadline = time.monotonic() + 60
                while _others(fresh_pg_url, "true")():
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
                holder.close()
                holder.engine.dispose()
        assert_whole_apps_only(fresh_pg_url, truth)
        shs.hold_apps, shs.hold_listing_call = set(), None
        shs.release.set()
        out = fetch(shs.url, fresh_pg_url, config_file)
    assert snapshot(fresh_pg_url) == truth, out
    engine = make_engine(fresh_pg_url)
    with engine.connect() as c:
        runs = c.execute(select(FetchRun.status, FetchRun.error).order_by(FetchRun.id)).all()
        mark = c.execute(select(FetchWatermark.covered_from_ms, FetchWatermark.covered_to_ms)).one()
    engine.dispose()
    assert [r.status for r in runs] == ["ok", "failed", "ok"]
    assert runs[1].error.startswith("interrupted")
    assert mark == (0, ENTRIES[-1]["attempts"][0]["endTimeEpoch"])


def test_server_going_away_half_way_exits_3_then_rerun_completes(
    truth: dict[Any, Any], fresh_pg_url: str, config_file: Path
) -> None:
    with running(ENTRIES) as shs:
        port = shs.port
        baseline(shs, fresh_pg_url, config_file)
        loaded_before = len(BASELINE) + 6
        shs.hold_apps = set(NEW[6:])
        proc = start_fetch(shs.url, fresh_pg_url, config_file)
        wait_for(lambda: count_apps(fresh_pg_url) == loaded_before, proc)
        shs.go_away()
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 3, out
    assert "stopped: server unreachable" in out
    # nothing was recorded as failed (snapshot checks) and nothing half-loaded
    assert_whole_apps_only(fresh_pg_url, truth)
    assert count_apps(fresh_pg_url) == loaded_before
    with running(ENTRIES, port=port) as shs:
        fetch(shs.url, fresh_pg_url, config_file)
    assert snapshot(fresh_pg_url) == truth
    engine = make_engine(fresh_pg_url)
    with engine.connect() as c:
        runs = c.execute(select(FetchRun.status, FetchRun.error).order_by(FetchRun.id)).all()
    engine.dispose()
    assert [r.status for r in runs] == ["ok", "failed", "ok"]
    assert "unreachable" in runs[1].error


def test_spread_is_wider_than_the_overlap_window() -> None:
    """The scenario above would lose applications under a newest-stored-end watermark."""
    ends = [e["attempts"][0]["endTimeEpoch"] for e in ENTRIES]
    gaps = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    assert min(gaps) > 120 * 60_000 and ends[-1] - ends[0] > 5 * DAY_MS
