"""End to end against a real Spark History Server (pyspark's, Java 17) over event logs kept in the repo."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from sqlalchemy import func, select

from sparkscope.db import make_engine
from sparkscope.models.application import Application, Executor, Job, Stage
from tests.support.shs import have_java_and_pyspark, running_shs

pytestmark = pytest.mark.shs

EVENTLOGS = Path(__file__).resolve().parents[1] / "fixtures" / "eventlogs"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shs_url() -> Iterator[str]:
    if not have_java_and_pyspark():
        if os.environ.get("CI"):
            pytest.fail("CI needs Java 17 and pyspark for the real-SHS tests (make setup-test)")
        pytest.skip("needs Java 17 and pyspark (pip install -e '.[test]')")
    with running_shs(EVENTLOGS, expect_apps=5) as url:
        yield url


def shs_truth(url: str) -> dict[str, dict[str, int]]:
    """Per app: jobs, stage attempts that ran, executors, as the SHS itself lists them."""
    api = f"{url}/api/v1"
    truth = {}
    for app in requests.get(
        f"{api}/applications", params={"status": "completed"}, timeout=60
    ).json():
        base = f"{api}/applications/{app['id']}"
        stages = requests.get(f"{base}/stages", timeout=60).json()
        truth[app["id"]] = {
            "jobs": len(requests.get(f"{base}/jobs", timeout=60).json()),
            "stages": sum(1 for s in stages if s["status"] != "SKIPPED"),
            "executors": len(requests.get(f"{base}/allexecutors", timeout=60).json()),
        }
    return truth


def stored(url: str) -> dict[str, dict[str, int]]:
    engine = make_engine(url)
    out = {}
    with engine.connect() as c:
        for pk, app_id in c.execute(select(Application.id, Application.app_id)):
            out[app_id] = {
                "jobs": c.scalar(
                    select(func.count()).select_from(Job).where(Job.application_id == pk)
                ),
                "stages": c.scalar(
                    select(func.count()).select_from(Stage).where(Stage.application_id == pk)
                ),
                "executors": c.scalar(
                    select(func.count()).select_from(Executor).where(Executor.application_id == pk)
                ),
            }
        dupes = c.scalar(
            select(func.count()).select_from(
                select(Application.app_id)
                .group_by(Application.app_id)
                .having(func.count() > 1)
                .subquery()
            )
        )
    engine.dispose()
    assert dupes == 0
    return out


def run_fetch(url: str, db_url: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "SPARKSCOPE_DATABASE_URL": db_url}
    env.pop("SPARKSCOPE_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "sparkscope", "fetch", "--url", url, *extra],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_killed_fetch_then_rerun_stores_every_app_exactly_once(
    shs_url: str, fresh_pg_url: str
) -> None:
    # First in the module: the SHS has not replayed any app yet, so each one takes a while.
    proc = run_fetch(shs_url, fresh_pg_url, "--threads", "1")
    engine = make_engine(fresh_pg_url)
    deadline = time.monotonic() + 120
    loaded = 0
    while time.monotonic() < deadline and proc.poll() is None:
        with engine.connect() as c:
            loaded = int(c.scalar(select(func.count()).select_from(Application)) or 0)
        if loaded >= 1:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.communicate(timeout=30)
    engine.dispose()
    truth = shs_truth(shs_url)
    partial = stored(fresh_pg_url)
    assert proc.returncode == -signal.SIGKILL, "the fetch finished before it could be killed"
    assert 1 <= len(partial) < len(truth)
    # whatever made it in is complete: never half an application
    assert all(partial[a] == truth[a] for a in partial)
    rerun = run_fetch(shs_url, fresh_pg_url)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert stored(fresh_pg_url) == truth


def test_fetch_matches_shs_listing_and_refetch_changes_nothing(
    shs_url: str, fresh_pg_url: str
) -> None:
    first = run_fetch(shs_url, fresh_pg_url)
    out, _ = first.communicate(timeout=300)
    assert first.returncode == 0, out
    truth = shs_truth(shs_url)
    assert len(truth) == 5
    assert stored(fresh_pg_url) == truth

    engine = make_engine(fresh_pg_url)
    with engine.connect() as c:
        before = c.execute(
            select(Application.app_id, Application.fetched_at_ms).order_by(Application.app_id)
        ).all()
    second = run_fetch(shs_url, fresh_pg_url)
    out, _ = second.communicate(timeout=300)
    assert second.returncode == 0, out
    assert "loaded 0, skipped 5" in out
    with engine.connect() as c:
        after = c.execute(
            select(Application.app_id, Application.fetched_at_ms).order_by(Application.app_id)
        ).all()
    engine.dispose()
    assert after == before
    assert stored(fresh_pg_url) == truth
