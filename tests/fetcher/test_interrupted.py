"""An interrupted fetch never loses an application, nor anything derived from one: SIGKILL a real
`sparkscope fetch` process at several points (while listing, while loading, inside a load's
transaction, and while it completes the derived work after the loads), or take its server away
half-way, then run it again; the database must then hold exactly what one uninterrupted fetch
stores, application by application, and every derived table (findings, inputs, predictions,
forecasts, what-if models and prior, summaries, names) equal to what the uninterrupted run
derived, with nothing left on the pipeline's ledger. (A kill once every load is done, on another
recording and on SQLite too: test_interrupted_models.py.)

The server replays the 21 applications recorded from a real SHS with their end times spread over
six days (7 hours apart, far more than `fetcher.overlap_minutes`), so a watermark taken from the
newest stored end time would skip the older ones for ever.
"""

from __future__ import annotations

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
from tests.fetcher.conftest import assert_derived, fetch, start_fetch
from tests.fetcher.fake_shs import FakeShs, running, spread_listing
from tests.support.derived import derived_state, differences
from tests.support.processes import count_apps, kill, table_locked, wait_for, waiting_on_a_lock

ENTRIES = spread_listing()
IDS = [e["id"] for e in ENTRIES]  # oldest first
BASELINE, NEW = IDS[:5], IDS[5:]
SKIPPED_COLUMNS = {"id", "server_id", "fetched_at_ms"}


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


@pytest.fixture(scope="module")
def derived_truth(
    pg_server_url: str, pg_template: str, config_file: Path
) -> Iterator[dict[str, Any]]:
    """What the tests' baseline run followed by one uninterrupted fetch of the whole server
    derive (predictions depend on the runs before them, so the sequence of runs matters)."""
    url = create_pg_database(pg_server_url, template=pg_template)
    try:
        with running(ENTRIES) as shs:
            baseline(shs, url, config_file)
            fetch(shs.url, url, config_file)
        state = derived_state(url)
    finally:
        drop_pg_database(pg_server_url, url)
    assert state["pipeline_pending"] == []
    for table in ("analysis", "analysis_input", "whatif_input", "run_prediction"):
        assert len(state[table]) == len(IDS), table
    assert len(state["recurring_forecast"]) == len({e["name"] for e in ENTRIES})
    assert state["whatif_model"] and state["day_summary"] and state["analysis_result"]
    assert len(state["application_name"]) == len({e["name"] for e in ENTRIES})
    yield state


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
    point: str,
    truth: dict[Any, Any],
    derived_truth: dict[str, Any],
    fresh_pg_url: str,
    config_file: Path,
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
    assert_derived(fresh_pg_url, derived_truth)
    engine = make_engine(fresh_pg_url)
    with engine.connect() as c:
        runs = c.execute(select(FetchRun.status, FetchRun.error).order_by(FetchRun.id)).all()
        mark = c.execute(select(FetchWatermark.covered_from_ms, FetchWatermark.covered_to_ms)).one()
    engine.dispose()
    assert [r.status for r in runs] == ["ok", "failed", "ok"]
    assert runs[1].error.startswith("interrupted")
    assert mark == (0, ENTRIES[-1]["attempts"][0]["endTimeEpoch"])


def _pending_steps(db_url: str) -> list[str]:
    engine = make_engine(db_url)
    with engine.connect() as c:
        steps = sorted(set(c.scalars(text("SELECT step FROM pipeline_pending"))))
    engine.dispose()
    return steps


@pytest.mark.parametrize(
    ("locked", "done_before"),
    [
        # the predictions step blocks: every load committed, nothing derived beyond them yet
        ("run_prediction", []),
        # the what-if refit blocks, after the predictions step committed
        ("whatif_model", ["predictions"]),
    ],
)
def test_killed_while_completing_the_derived_work_then_rerun_derives_the_same(
    locked: str,
    done_before: list[str],
    truth: dict[Any, Any],
    derived_truth: dict[str, Any],
    fresh_pg_url: str,
    config_file: Path,
) -> None:
    with running(ENTRIES) as shs:
        baseline(shs, fresh_pg_url, config_file)
        with table_locked(fresh_pg_url, locked):
            proc = start_fetch(shs.url, fresh_pg_url, config_file)
            try:
                wait_for(waiting_on_a_lock(fresh_pg_url), proc)
            finally:
                kill(proc)
        assert snapshot(fresh_pg_url) == truth  # every application is loaded ...
        # ... and the step the kill interrupted is still on the ledger, with those after it
        assert _pending_steps(fresh_pg_url) == sorted({"predictions", "whatif"} - set(done_before))
        out = fetch(shs.url, fresh_pg_url, config_file)
    assert "loaded 0," in out  # nothing left to load: only the derived work
    assert snapshot(fresh_pg_url) == truth
    assert_derived(fresh_pg_url, derived_truth)


#: Derived tables that do not depend on how the loads were split between runs (a prediction
#: depends on the residual pool of the predictions computed before its run's refresh, and the
#: what-if prior on the pool of the keys refitted before; the rest is a function of the stored
#: applications alone).
PATH_FREE = (
    "analysis",
    "analysis_result",
    "analysis_input",
    "whatif_input",
    "whatif_model",
    "day_summary",
    "application_name",
    "pipeline_pending",
)


def test_server_going_away_half_way_exits_3_then_rerun_completes(
    truth: dict[Any, Any], derived_truth: dict[str, Any], fresh_pg_url: str, config_file: Path
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
    # the stopped run derived what its loads allow; the next one the rest
    got = derived_state(fresh_pg_url)
    assert (
        differences({t: got[t] for t in PATH_FREE}, {t: derived_truth[t] for t in PATH_FREE}) == {}
    )
    assert len(got["run_prediction"]) == len(IDS) and got["pipeline_pending"] == []
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
