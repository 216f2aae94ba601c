"""Applications fetched by the time the loader looks are written together, in one transaction
and a few statements: the database then holds exactly what loading them one by one holds, a new
application or a re-fetched one, and a bad application in such a batch fails alone."""

from __future__ import annotations

import concurrent.futures
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from fetcher import job, loader, watermark
from fetcher.job import run_server
from fetcher.loader import CHILD_ROWS
from fetcher.options import FetchOptions
from fetcher.parse.app import AppBundle
from fetcher.parse.entry import parse_listing
from fetcher.shs import endpoints
from fetcher.shs.client import make_client
from fetcher.shs.request_plan import fetch_app
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.models.fetch import FetchFailure, FetchWatermark
from sparkscope.pipeline.steps import Pipeline
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.fake_shs import FakeShs, running, spread_listing
from tests.sparkscope.accounting.test_day_summary import assert_matches_recount
from tests.support.derived import derived_state, differences

ROOT = Path(__file__).resolve().parents[2]
CONFIG = FetcherConfig(top_stages=5, tasks_per_stage=20)
#: columns that only say when or under which surrogate id a row was written
UNCOMPARED = {"id", "server_id", "fetched_at_ms"}


def recorded_bundles(corpus: str) -> list[AppBundle]:
    """Every recorded application of a corpus, fetched and parsed, oldest first."""
    client = make_client(ServerConfig(name="rec", url=str(ROOT / "demo" / corpus)), CONFIG)
    entries = parse_listing(client.get_json(endpoints.applications()))
    entries.sort(key=lambda e: (e.end_time_ms or 0, e.app_id))
    redaction = re.compile(CONFIG.redaction_regex)
    return [fetch_app(client, e, CONFIG, redaction) for e in entries]


@pytest.fixture(params=["postgresql", "sqlite"])
def two_databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two fresh migrated databases of one kind."""
    if request.param == "sqlite":
        from sparkscope import migrate

        urls = [f"sqlite:///{tmp_path / name}.db" for name in ("one", "other")]
        for url in urls:
            migrate.upgrade(url)
        yield urls[0], urls[1]
        return
    server = request.getfixturevalue("pg_server_url")
    template = request.getfixturevalue("pg_template")
    urls = [create_pg_database(server, template=template) for _ in range(2)]
    try:
        yield urls[0], urls[1]
    finally:
        for url in urls:
            drop_pg_database(server, url)


def load(url: str, batches: list[list[AppBundle]]) -> None:
    """Load the batches in order, each in one transaction."""
    engine = make_engine(url)
    factory = make_sessionmaker(engine)
    pipeline = Pipeline(registry=load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")))
    try:
        with factory() as session, session.begin():
            server_id = loader.ensure_server(session, "rec", "recording")
            pipeline.start_run(session)
        marks = watermark.Marks(server_id)
        for batch in batches:
            assert job._load(factory, batch, pipeline, marks, None) is None
    finally:
        engine.dispose()


def stored_rows(url: str) -> dict[str, list[str]]:
    """Every row an application's load writes, keyed by the application's natural key."""
    engine = make_engine(url)
    out: dict[str, list[str]] = {}
    try:
        with engine.connect() as c:
            keys = {
                pk: (app_id, attempt)
                for pk, app_id, attempt in c.execute(
                    select(Application.id, Application.app_id, Application.attempt_id)
                )
            }
            for table in [Application.__table__, *(t for t, _, _ in CHILD_ROWS)]:
                rows = []
                for row in c.execute(select(table)).mappings():
                    item = {k: v for k, v in row.items() if k not in UNCOMPARED}
                    if "application_id" in item:
                        item["application_id"] = keys[item["application_id"]]
                    rows.append(json.dumps(item, sort_keys=True, default=str))
                out[table.name] = sorted(rows)
    finally:
        engine.dispose()
    return out


def test_applications_loaded_together_are_stored_as_loaded_one_by_one(
    two_databases: tuple[str, str],
) -> None:
    one_by_one, together = two_databases
    bundles = recorded_bundles("spark-events")
    n = len(bundles)
    assert n == 21
    # New applications, then every one of them again (a re-fetch replaces each one).
    load(one_by_one, [[b] for b in bundles] + [[b] for b in recorded_bundles("spark-events")])
    again = recorded_bundles("spark-events")
    load(together, [bundles[:8], bundles[8:9], bundles[9:], again[:3], again[3:]])
    got, want = stored_rows(together), stored_rows(one_by_one)
    assert got.keys() == want.keys()
    assert len(want["application"]) == n and len(want["stage"]) > n
    for table in want:
        assert got[table] == want[table], table
    assert differences(derived_state(together), derived_state(one_by_one)) == {}
    engine = make_engine(together)
    try:  # and the day summary is what a recount of the stored applications gives
        assert_matches_recount(make_sessionmaker(engine))
    finally:
        engine.dispose()


def test_a_batch_of_new_and_stored_applications_is_stored_as_one_by_one(
    two_databases: tuple[str, str],
) -> None:
    one_by_one, together = two_databases
    first = recorded_bundles("spark-events")
    load(one_by_one, [[b] for b in first[:10]] + [[b] for b in recorded_bundles("spark-events")])
    load(together, [first[:10], recorded_bundles("spark-events")])
    assert stored_rows(together) == stored_rows(one_by_one)
    assert differences(derived_state(together), derived_state(one_by_one)) == {}


# ------------------------------------------------------------------- a bad one in a batch

ENTRIES = spread_listing()[-6:]
IDS = [e["id"] for e in ENTRIES]
BAD = IDS[2]


@pytest.fixture
def shs() -> Iterator[FakeShs]:
    with running(ENTRIES) as server:
        yield server


def loads_seen(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The applications of each load of the fetch to come, in the order the loader is called
    (the real loader does the loading)."""
    batches: list[list[str]] = []
    real = loader.load_applications

    def watched(session: Session, server_id: int, apps: Any) -> Any:
        batches.append([bundle.entry.app_id for bundle, _ in apps])
        return real(session, server_id, apps)

    monkeypatch.setattr(loader, "load_applications", watched)
    return batches


def test_a_bad_application_in_a_batch_fails_alone_and_the_others_are_stored(
    shs: FakeShs, factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The database refuses the bad application's row (a trigger of this test's database).
    with factory() as s, s.begin():
        s.execute(
            text(
                "CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.app_id = '{BAD}' THEN "
                "RAISE EXCEPTION 'a value the database refuses'; END IF; RETURN NEW; END $$"
            )
        )
        s.execute(
            text(
                "CREATE TRIGGER refuse_bad BEFORE INSERT ON application "
                "FOR EACH ROW EXECUTE FUNCTION refuse_bad()"
            )
        )
    batches = loads_seen(monkeypatch)
    # Every application in flight is fetched before the loader looks: batches as large as can be.
    monkeypatch.setattr(job, "wait", lambda fs, return_when: concurrent.futures.wait(fs))
    config = FetcherConfig(threads=3, retries=0, backoff_factor_s=0)
    server = ServerConfig(name="fake", url=shs.url, connect_timeout_s=2, read_timeout_s=5)
    result = run_server(factory, server, config, FetchOptions())

    # all of them in one batch, oldest first; refused, then each one on its own
    assert batches == [IDS] + [[i] for i in IDS]
    assert (result.loaded, [a for a, _ in result.failed]) == (len(IDS) - 1, [BAD])
    assert "database error" in result.failed[0][1]
    assert "a value the database refuses" in result.failed[0][1]
    with factory() as s:
        assert sorted(s.scalars(select(Application.app_id))) == sorted(set(IDS) - {BAD})
        assert [f.app_id for f in s.scalars(select(FetchFailure))] == [BAD]
        # a failure recorded counts as done: the watermark covers every listed application
        mark = s.scalars(select(FetchWatermark)).one()
        newest = max(e["attempts"][0]["endTimeEpoch"] for e in ENTRIES)
        assert mark.covered_to_ms == newest


# ---------------------------------------------------------- waiting for more to load at once


def test_the_loader_waits_for_as_many_as_it_wants_then_takes_what_has_finished() -> None:
    gates = [threading.Event() for _ in range(4)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(gate.wait, 10) for gate in gates]
        gates[0].set()
        gates[2].set()
        threading.Timer(0.2, gates[1].set).start()  # a third one finishes a little later
        started = time.monotonic()
        finished = job._gather(futures, want=3)
        waited = time.monotonic() - started
        assert finished == {futures[0], futures[1], futures[2]}
        assert waited >= 0.15  # it did wait for the third one
        gates[3].set()
        futures[3].result(timeout=5)
        assert job._gather(futures, want=1) == set(futures)  # all that have finished, not one


def test_the_loader_waits_a_bounded_time_for_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job, "GATHER_WAIT_S", 0.3)
    gates = [threading.Event() for _ in range(3)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(gate.wait, 10) for gate in gates]
        threading.Timer(0.1, gates[1].set).start()
        started = time.monotonic()
        finished = job._gather(futures, want=3)
        waited = time.monotonic() - started
        for gate in gates:
            gate.set()
    # the first to finish is waited for however long it takes, then the others for 0.3 s more
    assert finished == {futures[1]}
    assert 0.35 <= waited < 5


def test_a_fetch_loads_two_applications_per_thread_together(
    shs: FakeShs, factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = loads_seen(monkeypatch)
    config = FetcherConfig(threads=2, retries=0, backoff_factor_s=0)
    server = ServerConfig(name="fake", url=shs.url, connect_timeout_s=2, read_timeout_s=5)
    result = run_server(factory, server, config, FetchOptions())
    assert result.loaded == len(IDS)
    # six applications, two threads: a load of four (two per thread), then the two left (a local
    # server answers at once)
    together = config.threads * job.LOADED_PER_THREAD
    assert together == 4 and batches == [IDS[:together], IDS[together:]]
