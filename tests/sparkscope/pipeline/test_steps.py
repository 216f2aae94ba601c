"""The post-load pipeline and its ledger: what a load queues, what `complete` does with it, and
that work left undone by a run (killed after its loads, or failed) is finished by a later one."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from fetcher.job import run_server
from fetcher.options import FetchOptions
from fetcher.shs.client import is_local_source
from sparkscope.cli.fetch import server_for_url
from sparkscope.cli.main import cli
from sparkscope.config.loader import FetcherConfig
from sparkscope.db import StorageFault, make_engine, make_sessionmaker
from sparkscope.models.pipeline import PipelinePending
from sparkscope.models.predictions import RecurringForecast, RunPrediction
from sparkscope.models.whatif import WhatIfCluster, WhatIfModel
from sparkscope.pipeline import ledger
from sparkscope.pipeline.steps import FULL, QUEUED, Pipeline, QueuedStep
from tests.conftest import create_pg_database, drop_pg_database
from tests.support import processes
from tests.support.derived import derived_state, differences
from tests.support.processes import table_locked, waiting_on_a_lock

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "demo" / "scaling-events"  # 36 runs of 3 applications at several sizes
FETCHER_CONFIG = FetcherConfig(retries=0, backoff_factor_s=0)


@pytest.fixture
def db_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    url = create_pg_database(pg_server_url, template=pg_template)
    yield url
    drop_pg_database(pg_server_url, url)


def factory_for(url: str) -> sessionmaker[Session]:
    return make_sessionmaker(make_engine(url))


def derived(factory: sessionmaker[Session]) -> dict[str, Any]:
    """The derived tables, minus what only says when they were computed."""
    with factory() as s:
        return {
            "models": sorted(
                (m.name, m.n_train, m.model, m.contention, m.startup_per_executor_ms)
                for m in s.scalars(select(WhatIfModel))
            ),
            "prior": sorted((c.n_keys, c.model) for c in s.scalars(select(WhatIfCluster))),
            "predictions": sorted(
                (p.key, p.start_time_ms, p.expected_ms, p.low_ms, p.high_ms, p.verdict)
                for p in s.scalars(select(RunPrediction))
            ),
            "forecasts": sorted(
                (f.key, f.n_runs, f.expected_ms) for f in s.scalars(select(RecurringForecast))
            ),
        }


def pending(factory: sessionmaker[Session]) -> list[tuple[str, str, int]]:
    with factory() as s:
        return sorted((p.step, p.subject, p.attempts) for p in s.scalars(select(PipelinePending)))


def load_only(url: str, pipeline: Pipeline) -> None:
    """A fetch whose loads all committed and which was killed before `complete`."""
    server = server_for_url(str(CORPUS))
    assert is_local_source(server.url)
    result = run_server(factory_for(url), server, FETCHER_CONFIG, FetchOptions(), pipeline=pipeline)
    assert result.loaded == 36 and not result.failed


def test_loads_queue_the_keys_and_complete_takes_them_off(db_url: str) -> None:
    pipeline = Pipeline()
    load_only(db_url, pipeline)
    factory = factory_for(db_url)
    queued = pending(factory)
    assert ("predictions", "", 0) in queued
    whatif_keys = [subject for step, subject, _ in queued if step == "whatif"]
    assert len(whatif_keys) == 3  # one per recurring application, however many runs it has
    assert derived(factory)["models"] == []  # nothing derived beyond the applications yet

    done = pipeline.complete(factory)
    assert done.done == {"predictions": 1, "whatif": 3} and done.failed == []
    assert pending(factory) == []
    after = derived(factory)
    assert len(after["models"]) == 3 and len(after["prior"]) == 1
    assert len(after["predictions"]) == 36
    assert pipeline.complete(factory).done == {}  # nothing left to do


def test_a_fetch_killed_after_its_loads_is_completed_by_the_next_run(
    db_url: str, pg_server_url: str, pg_template: str
) -> None:
    """The next `sparkscope fetch` skips every stored application and still finishes the
    derived work: the database ends equal to one uninterrupted fetch, derived tables included."""
    load_only(db_url, Pipeline())
    again = CliRunner().invoke(
        cli, ["fetch", "--url", str(CORPUS)], env={"SPARKSCOPE_DATABASE_URL": db_url}
    )
    assert again.exit_code == 0, again.output
    assert "loaded 0" in again.output
    clean = create_pg_database(pg_server_url, template=pg_template)
    try:
        once = CliRunner().invoke(
            cli, ["fetch", "--url", str(CORPUS)], env={"SPARKSCOPE_DATABASE_URL": clean}
        )
        assert once.exit_code == 0, once.output
        assert derived(factory_for(db_url)) == derived(factory_for(clean))
    finally:
        drop_pg_database(pg_server_url, clean)
    assert pending(factory_for(db_url)) == []


def test_analyze_also_completes_what_a_run_left_undone(db_url: str) -> None:
    load_only(db_url, Pipeline())
    out = CliRunner().invoke(
        cli, ["analyze", "--workers", "1"], env={"SPARKSCOPE_DATABASE_URL": db_url}
    )
    assert out.exit_code == 0, out.output
    assert len(derived(factory_for(db_url))["models"]) == 3
    assert pending(factory_for(db_url)) == []


def _flaky(fails: list[int]) -> QueuedStep:
    """A step that fails as long as ``fails`` holds a count above zero."""

    def run(p: Pipeline, session: Session, server_id: int, subjects: Sequence[str]) -> None:
        if fails[0] > 0:
            fails[0] -= 1
            raise OSError(28, "No space left on device")

    return QueuedStep("flaky", run, lambda p, name: "")


def test_a_failed_step_stays_queued_with_its_error_and_is_retried(db_url: str) -> None:
    fails = [2]
    pipeline = Pipeline(queued=(*QUEUED, _flaky(fails)))
    load_only(db_url, pipeline)
    factory = factory_for(db_url)
    first = pipeline.complete(factory)
    assert [f[0] for f in first.failed] == ["flaky"]
    assert "No space left on device" in first.failed[0][2]
    assert first.done == {"predictions": 1, "whatif": 3}  # the others are not held up
    assert pending(factory) == [("flaky", "", 1)]
    with factory() as s:
        row = s.scalars(select(PipelinePending)).one()
        assert row.last_error is not None and "OSError" in row.last_error
    pipeline.complete(factory)
    assert pending(factory) == [("flaky", "", 2)]
    assert pipeline.complete(factory).done == {"flaky": 1}
    assert pending(factory) == []


def test_upgrading_queues_every_server_once(db_url: str) -> None:
    """Migration 0010 queues both steps for every server that has applications, so a database
    damaged by an earlier version's killed fetch is repaired by the first run after upgrading."""
    from sparkscope import migrate

    load_only(db_url, Pipeline())
    factory = factory_for(db_url)
    Pipeline().complete(factory)
    migrate.downgrade(db_url, "0009")
    migrate.upgrade(db_url)
    assert pending(factory) == [("predictions", "", 0), ("whatif", "", 0)]
    with factory() as s:
        assert s.scalar(select(func.count()).select_from(WhatIfModel)) == 3
    Pipeline().complete(factory)
    assert len(derived(factory)["models"]) == 3


def test_an_analyze_force_killed_half_way_is_finished_by_the_next_fetch(
    db_url: str, pg_server_url: str, pg_template: str, tmp_path: Path
) -> None:
    """`analyze --force` after a change of the prediction settings recomputes every prediction;
    SIGKILLed while it does, the next `fetch` (which loads nothing) finishes it: every derived
    table ends as an uninterrupted `analyze --force` leaves it."""
    config = tmp_path / "sparkscope.yaml"
    config.write_text("predictions:\n  level: 0.9\n")  # the stored predictions are at 0.8
    env = {"SPARKSCOPE_DATABASE_URL": db_url, "SPARKSCOPE_CONFIG": str(config)}
    clean = create_pg_database(pg_server_url, template=pg_template)
    try:
        for url in (db_url, clean):
            load_only(url, Pipeline())
            Pipeline().complete(factory_for(url))
        with table_locked(db_url, "run_prediction"):
            proc = processes.start(["analyze", "--force", "--workers", "1"], env)
            try:
                processes.wait_for(waiting_on_a_lock(db_url), proc)
            finally:
                processes.kill(proc)
        assert ("predictions", FULL, 0) in pending(factory_for(db_url))
        code, out = processes.finish(processes.start(["fetch", "--url", str(CORPUS)], env))
        assert code == 0 and "loaded 0" in out, out
        code, out = processes.finish(
            processes.start(
                ["analyze", "--force", "--workers", "1"], {**env, "SPARKSCOPE_DATABASE_URL": clean}
            )
        )
        assert code == 0 and "predicted 36 runs" in out, out
        want = derived_state(clean)
    finally:
        drop_pg_database(pg_server_url, clean)
    assert {dict(row)["level"] for row in want["run_prediction"]} == {0.9}
    got = derived_state(db_url)
    assert got["pipeline_pending"] == []
    assert differences(got, want) == {}


def test_work_queued_again_while_a_run_does_it_stays_queued(db_url: str) -> None:
    """A fetch that loads another run of a key while an `analyze` refits that key (their
    transactions overlap) queues the key again; the refit, which did not see that run, must not
    take it off the ledger."""
    factory = factory_for(db_url)
    load_only(db_url, Pipeline())
    whatif = next(s for s in QUEUED if s.name == "whatif")

    def refit_meanwhile_queued(
        p: Pipeline, session: Session, server_id: int, subjects: Sequence[str]
    ) -> int | None:
        n = whatif.run(p, session, server_id, subjects)
        with factory() as other, other.begin():  # the other run's load commits meanwhile
            ledger.enqueue(other, [("whatif", server_id, s) for s in subjects])
        return n

    racing = Pipeline(queued=(QueuedStep("whatif", refit_meanwhile_queued, whatif.subject),))
    assert racing.complete(factory).done == {"whatif": 3}
    assert [step for step, _, _ in pending(factory)] == ["predictions"] + ["whatif"] * 3
    Pipeline().complete(factory)
    assert pending(factory) == []


def test_a_database_that_refuses_writes_stops_the_completion_with_the_work_kept(
    db_url: str, pg_server_url: str
) -> None:
    """A storage fault is not one step's failure: `complete` stops at once with a one-line
    StorageFault (no attempt recorded, which would fail too), and the work stays queued."""
    load_only(db_url, Pipeline())
    factory = factory_for(db_url)
    queued = pending(factory)
    name = db_url.rsplit("/", 1)[1]
    admin = make_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
    try:
        with pytest.raises(StorageFault, match="is read-only .*: stopped at the first write"):
            Pipeline().complete(factory_for(db_url))  # new connections: read-only
    finally:
        with admin.connect() as c:
            c.execute(text(f'ALTER DATABASE "{name}" RESET default_transaction_read_only'))
        admin.dispose()
    assert pending(factory_for(db_url)) == queued
    assert Pipeline().complete(factory_for(db_url)).done == {"predictions": 1, "whatif": 3}
