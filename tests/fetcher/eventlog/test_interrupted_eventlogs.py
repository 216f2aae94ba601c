"""A `sparkscope fetch --event-logs` killed with SIGKILL loses nothing: whatever it stored is
whole applications (with their extras and their logs' watermark rows), and the next run stores
exactly what one uninterrupted run stores.

Kill points: inside an application's transaction (the watermark table locked by another
session, so the load waits there), and while one log hangs (its events file is a named pipe
nobody writes to, so its reader blocks while every other log loads).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.pool import NullPool

from sparkscope.db import make_engine
from sparkscope.models.eventlog import EventLogFile, StageTaskTimes
from sparkscope.models.fetch import FetchFailure, FetchRun
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.eventlog.conftest import LAYOUTS, ROOT, SAMPLE
from tests.support.processes import count_apps, kill, wait_for
from tests.support.stores import differences, stored


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    for src in [*SAMPLE.iterdir(), *LAYOUTS.iterdir()]:
        dst = out / src.name
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    return out


def start(logs: Path, db_url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "SPARKSCOPE_DATABASE_URL": db_url}
    env.pop("SPARKSCOPE_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "sparkscope", "fetch", "--event-logs", str(logs), "--threads", "2"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run(logs: Path, db_url: str) -> str:
    proc = start(logs, db_url)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    return out


def snapshot(db_url: str) -> dict[str, Any]:
    engine = make_engine(db_url)
    with engine.connect() as c:
        marks = sorted(
            (Path(p).name, s, m, a, st)
            for p, s, m, a, st in c.execute(
                select(
                    EventLogFile.path,
                    EventLogFile.size,
                    EventLogFile.mtime_ms,
                    EventLogFile.app_id,
                    EventLogFile.state,
                )
            )
        )
        extras = int(c.scalar(select(func.count()).select_from(StageTaskTimes)) or 0)
        assert c.scalar(select(func.count()).select_from(FetchFailure)) == 0
    engine.dispose()
    return {"rows": stored(db_url), "marks": marks, "extras": extras}


def whole_only(partial: dict[str, Any], truth: dict[str, Any]) -> None:
    """What a killed run left: complete applications, each with its watermark row (predictions
    come once every server is fetched, from the ledger: the next run computes them)."""

    def loaded(snap: dict[str, Any]) -> dict[Any, Any]:
        return {k: {t: v for t, v in r.items() if t != "run_prediction"} for k, r in snap.items()}

    rows = loaded(partial["rows"])
    assert set(rows) <= set(truth["rows"])
    assert differences(rows, loaded({k: truth["rows"][k] for k in rows})) == []
    assert {m[3] for m in partial["marks"]} == {k[0] for k in rows}


@pytest.fixture(scope="module")
def truth(pg_server_url: str, pg_template: str, logs: Path) -> Any:
    url = create_pg_database(pg_server_url, template=pg_template)
    try:
        run(logs, url)
        snap = snapshot(url)
    finally:
        drop_pg_database(pg_server_url, url)
    assert len(snap["rows"]) == 11 and snap["extras"] > 0
    return snap


def _waiting_on_lock(db_url: str) -> Callable[[], bool]:
    def check() -> bool:
        engine = make_engine(db_url, poolclass=NullPool)
        with engine.connect() as c:
            n = c.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND application_name <> 'holder' AND wait_event_type = 'Lock'"
                )
            )
        engine.dispose()
        return bool(n)

    return check


def test_killed_inside_a_transaction(truth: dict[str, Any], fresh_pg_url: str, logs: Path) -> None:
    engine = make_engine(fresh_pg_url, connect_args={"application_name": "holder"})
    holder = engine.connect()
    holder.execute(text("LOCK TABLE eventlog_file IN EXCLUSIVE MODE"))
    proc = start(logs, fresh_pg_url)
    try:
        wait_for(_waiting_on_lock(fresh_pg_url), proc)
    finally:
        kill(proc)
        holder.rollback()
        holder.close()
        engine.dispose()
    time.sleep(0.5)  # the killed backend's transaction is rolled back
    partial = snapshot(fresh_pg_url)
    assert partial["rows"] == {} and partial["marks"] == []
    run(logs, fresh_pg_url)
    assert snapshot(fresh_pg_url) == truth


def test_killed_while_one_log_hangs(
    truth: dict[str, Any], fresh_pg_url: str, logs: Path, tmp_path: Path
) -> None:
    hanging = tmp_path / "logs"
    shutil.copytree(logs, hanging)
    victim = hanging / "eventlog_v2_local-1795971819513"
    events = next(victim.glob("events_*"))
    real = events.read_bytes()
    events.unlink()
    os.mkfifo(events)
    proc = start(hanging, fresh_pg_url)
    try:
        wait_for(lambda: count_apps(fresh_pg_url) == 10, proc)
        time.sleep(0.3)
    finally:
        kill(proc)
    partial = snapshot(fresh_pg_url)
    whole_only(partial, truth)
    assert len(partial["rows"]) == 10
    events.unlink()
    events.write_bytes(real)
    shutil.copystat(logs / victim.name / events.name, events)
    out = run(hanging, fresh_pg_url)
    assert "loaded 1," in out and "skipped 10" in out, out
    final = snapshot(fresh_pg_url)
    assert final["rows"] == truth["rows"] and final["extras"] == truth["extras"]
    assert [m[1:] for m in final["marks"]] == [m[1:] for m in truth["marks"]]
    engine = make_engine(fresh_pg_url)
    with engine.connect() as c:
        runs = c.execute(select(FetchRun.status).order_by(FetchRun.id)).scalars().all()
    engine.dispose()
    assert runs == ["failed", "ok"]
