"""An application read from its event log is stored as when fetched through a History Server.

Both sides run the real fetch (request plan, parse, load, findings, predictions, what-if input)
into a fresh PostgreSQL database: once over the answers a real Spark 4.0.1 SHS gave for the
spark-events corpus (demo/spark-events, recorded with `sparkscope dump`), once over the event logs
of the same applications (tests/fixtures/eventlogs). A third test starts a real SHS over the logs
and compares it live. Every stored row must be equal, the findings identical; the differences
that cannot be avoided are the ones tests.support.stores lists, each tested here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from fetcher.eventlog.bundle import read_bundle
from fetcher.eventlog.read.files import open_log
from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.advisor.whatif.simulate import build_plan, simulate
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig, ServerConfig
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.models.eventlog import StageParent, StageTaskTimes, decode_task_times
from sparkscope.models.whatif import WhatIfInput
from sparkscope.pipeline.steps import Pipeline
from sparkscope.whatif import inputs as wi
from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.eventlog.conftest import RECORDED, SAMPLE
from tests.support.stores import differences, extras_count, stored

APPS = sorted(p.name.removeprefix("eventlog_v2_") for p in SAMPLE.iterdir())


def _fetch(db_url: str, server: ServerConfig, app_ids: tuple[str, ...] = ()) -> Any:
    registry = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
    engine = make_engine(db_url)
    factory = make_sessionmaker(engine)
    pipeline = Pipeline(registry=registry)
    try:
        result = run_server(
            factory, server, FetcherConfig(threads=2), FetchOptions(app_ids=app_ids), pipeline
        )
        pipeline.complete(factory)
    finally:
        engine.dispose()
    return result


@pytest.fixture(scope="module")
def both(pg_server_url: str, pg_template: str) -> Any:
    """(SHS store, event-log store) of the sample applications."""
    urls = [create_pg_database(pg_server_url, template=pg_template) for _ in range(2)]
    try:
        shs = _fetch(urls[0], ServerConfig(name="shs", url=str(RECORDED)), tuple(APPS))
        logs = _fetch(urls[1], ServerConfig(name="logs", url=str(SAMPLE), event_logs=str(SAMPLE)))
        assert (shs.loaded, logs.loaded) == (len(APPS), len(APPS)), (shs, logs)
        yield urls
    finally:
        for u in urls:
            drop_pg_database(pg_server_url, u)


def test_every_stored_row_and_finding_is_the_same(both: list[str]) -> None:
    theirs, ours = stored(both[0]), stored(both[1])
    assert sorted(k[0] for k in ours) == APPS
    assert differences(ours, theirs) == []
    # not vacuous: findings, tasks and distributions were stored and compared
    for rows in ours.values():
        assert rows["analysis"] and rows["stage_task_distribution"] and rows["task"]


def test_the_known_differences_are_the_listing_time_only(both: list[str]) -> None:
    """lastUpdated is the log's modification time where each source read it."""
    out = []
    for url in both:
        engine = make_engine(url)
        with engine.connect() as c:
            out.append(
                dict(c.execute(select(Application.app_id, Application.last_updated_ms)).all())
            )
        engine.dispose()
    mtimes = {a: open_log(str(SAMPLE / f"eventlog_v2_{a}")).modification_time_ms for a in APPS}
    assert out[1] == mtimes
    recorded = json.loads((RECORDED / "index.json").read_text())["requests"]
    listing = json.loads((RECORDED / recorded["applications?status=completed"]).read_text())
    shs_updated = {a["id"]: a["attempts"][0]["lastUpdatedEpoch"] for a in listing}
    assert out[0] == {a: shs_updated[a] for a in APPS}


def test_event_log_extras_are_stored_beside(both: list[str]) -> None:
    counts = extras_count(both[1])
    assert counts["stage_task_times"] > 0 and counts["stage_parent"] > 0
    assert extras_count(both[0]) == {"stage_task_times": 0, "stage_parent": 0}
    engine = make_engine(both[1])
    with engine.connect() as c:
        rows = c.execute(
            select(StageTaskTimes.num_tasks, StageTaskTimes.num_stored, StageTaskTimes.data)
        ).all()
        edges = c.execute(select(StageParent.stage_id, StageParent.parent_id)).all()
    engine.dispose()
    for n, kept, blob in rows:
        assert n == kept == len(decode_task_times(blob))
    assert all(p < s for s, p in edges)  # Spark numbers a parent before its child


def _runs(url: str) -> dict[str, Any]:
    engine = make_engine(url)
    with engine.connect() as c:
        blobs = c.execute(
            select(Application.app_id, WhatIfInput.data).join(
                WhatIfInput, WhatIfInput.application_id == Application.id
            )
        ).all()
    engine.dispose()
    return {a: wi.decode(b) for a, b in blobs}


def test_whatif_is_the_same_without_the_extras_and_uses_them_with(both: list[str]) -> None:
    """The only what-if difference: real task times and the real DAG replace the rebuilt ones."""
    theirs, ours = _runs(both[0]), _runs(both[1])
    moved = 0
    for app_id in APPS:
        bare = dict(ours[app_id], tasks={}, parents={})
        try:
            run_t, _ = wi.build(theirs[app_id])
        except wi.WhatIfUnavailable as exc:
            with pytest.raises(wi.WhatIfUnavailable, match=re.escape(str(exc))):
                wi.build(ours[app_id])
            continue
        run_b, _ = wi.build(bare)
        run_o, _ = wi.build(ours[app_id])
        assert any(s.task_ms for s in run_o.stages) and run_o.parents
        plans = [build_plan(r) for r in (run_t, run_b, run_o)]
        for slots in (1, 2, 4, 8):
            t, b, o = (simulate(p, 1, slots).duration_ms for p in plans)
            assert b == pytest.approx(t, rel=1e-12)
            assert o == pytest.approx(t, rel=0.25)  # the same run, known more exactly
            moved += o != t
    assert moved > 0


def test_truncated_completed_log_is_refused_like_the_shs(tmp_path: Path) -> None:
    body = (SAMPLE / f"eventlog_v2_{APPS[0]}").iterdir()
    src_dir = tmp_path / f"eventlog_v2_{APPS[0]}"
    src_dir.mkdir()
    import zstandard

    for p in body:
        data = p.read_bytes()
        if p.name.startswith("events_"):
            text = zstandard.ZstdDecompressor().decompressobj().decompress(data)
            data = zstandard.ZstdCompressor().compress(text[:-25])
        (src_dir / p.name).write_bytes(data)
    from fetcher.shs.client import ShsBadResponse

    with pytest.raises(ShsBadResponse, match="truncated event log"):
        read_bundle(open_log(str(src_dir)), FetcherConfig(), re.compile("secret"))


@pytest.mark.shs
def test_a_real_history_server_over_the_same_logs(
    pg_server_url: str, pg_template: str, tmp_path: Path
) -> None:
    from tests.support.shs import have_java_and_pyspark, running_shs

    if not have_java_and_pyspark():
        pytest.skip("needs Java 17 and pyspark")
    urls = [create_pg_database(pg_server_url, template=pg_template) for _ in range(2)]
    try:
        with running_shs(SAMPLE, expect_apps=len(APPS)) as base:
            _fetch(urls[0], ServerConfig(name="shs", url=base))
        _fetch(urls[1], ServerConfig(name="logs", url=str(SAMPLE), event_logs=str(SAMPLE)))
        theirs, ours = stored(urls[0]), stored(urls[1])
        assert differences(ours, theirs) == []
        # served from the same files, even lastUpdated agrees
        engine = [make_engine(u) for u in urls]
        got = []
        for e in engine:
            with e.connect() as c:
                got.append(
                    dict(c.execute(select(Application.app_id, Application.last_updated_ms)).all())
                )
            e.dispose()
        assert got[0] == got[1]
    finally:
        for u in urls:
            drop_pg_database(pg_server_url, u)
