"""The fetch path against responses recorded from a real SHS: request plan, attempt paths, paging,
watermark, re-fetches, awkward fields and redaction, old servers, chosen apps, Hadoop properties
and the garbage collector during a crawl (its failures: test_fetch_failures.py)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.config.loader import FetcherConfig
from sparkscope.models.application import (
    Application,
    EnvironmentProperty,
    Executor,
    Job,
    Stage,
    StageExecutor,
    StageTaskDistribution,
    Task,
)
from sparkscope.models.fetch import FetchRun
from sparkscope.redaction import REDACTED
from tests.fetcher import recorded, stub_shs
from tests.fetcher.conftest import FETCHER_CONFIG, SERVER
from tests.fetcher.recorded import API, BILLING, FLAKY, HEALTHY, SKEWED


def count(factory: sessionmaker[Session], model: Any, **where: Any) -> int:
    with factory() as s:
        q = select(func.count()).select_from(model)
        for k, v in where.items():
            q = q.where(getattr(model, k) == v)
        return int(s.scalar(q) or 0)


def test_request_plan_is_exactly_the_recorded_one(rsps, factory) -> None:
    recorded.register_listing(rsps, [BILLING])
    keys = recorded.register_app(rsps, BILLING)
    result = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert (result.loaded, result.failed) == (1, [])
    # environment, allexecutors, jobs, stages-with-summaries, one page of SQL executions,
    # 5 slowest-task lists, 1 failed stage
    assert len(keys) == 4 + 1 + 5 + 1
    assert [k for k in keys if "/sql?" in k] == [
        f"applications/{BILLING}/sql?details=true&length=20&offset=0&planDescription=true"
    ]
    stages = [k for k in keys if k.split("?")[0].endswith("/stages")]
    assert (
        len(stages) == 1 and "withSummaries=true" in stages[0] and "details=true" not in stages[0]
    )
    assert result.requests == 1 + len(keys)  # plus one listing request
    with factory() as s:
        app = s.scalars(select(Application)).one()
        assert (app.app_id, app.attempt_id, app.name) == (BILLING, "", "billing_reconcile")
        assert app.num_failed_jobs == 1 and app.num_failed_stages == 1
        failed_tasks = s.scalars(select(Task).where(Task.status == "FAILED")).all()
        assert failed_tasks and all(t.error_message for t in failed_tasks)
        assert s.scalar(select(func.count()).select_from(StageExecutor)) > 0
        dist = s.scalars(select(StageTaskDistribution)).first()
        assert dist is not None and len(dist.quantiles) == 21
        assert len(dist.metrics["executor_run_time_ms"]) == 21


def test_attempt_id_goes_into_every_per_app_path(rsps, factory) -> None:
    entry = copy.deepcopy(next(a for a in recorded.listing() if a["id"] == HEALTHY))
    entry["attempts"][0]["attemptId"] = "2"
    rsps.add_callback(
        stub_shs.GET, f"{API}/applications", callback=recorded.listing_callback([entry])
    )
    recorded.register_app(rsps, HEALTHY, path_prefix=f"applications/{HEALTHY}/2")
    result = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert result.loaded == 1
    per_app = [c.request.url for c in rsps.calls if f"/applications/{HEALTHY}" in c.request.url]
    assert per_app and all(f"/applications/{HEALTHY}/2/" in u for u in per_app)
    with factory() as s:
        assert s.scalars(select(Application.attempt_id)).one() == "2"


def test_listing_pages_by_end_time_and_sees_every_app_once(rsps, factory) -> None:
    ids = [a["id"] for a in recorded.listing()]
    recorded.register_listing(rsps)
    for app_id in ids:
        recorded.register_app(rsps, app_id)
    cfg = FetcherConfig(threads=2, retries=0, backoff_factor_s=0, listing_page_size=5)
    result = run_server(factory, SERVER, cfg, FetchOptions())
    assert (result.seen, result.loaded, result.failed) == (21, 21, [])
    pages = recorded.listing_calls(rsps)
    assert len(pages) >= 5 and "maxEndDate" in pages[-1]
    assert count(factory, Application) == 21


def test_second_run_uses_watermark_with_overlap_and_changes_nothing(rsps, factory) -> None:
    recorded.register_listing(rsps, [HEALTHY, SKEWED])
    recorded.register_app(rsps, HEALTHY)
    recorded.register_app(rsps, SKEWED)
    first = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert first.loaded == 2

    def snapshot() -> list[Any]:
        with factory() as s:
            return [
                s.execute(
                    select(Application.app_id, Application.fetched_at_ms, Application.num_tasks)
                ).all(),
                [count(factory, m) for m in (Stage, Job, Executor, Task, EnvironmentProperty)],
            ]

    before = snapshot()
    second = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert (second.loaded, second.skipped) == (0, 2)
    assert snapshot() == before
    newest_end = max(
        a["attempts"][0]["endTimeEpoch"] for a in recorded.listing() if a["id"] in (HEALTHY, SKEWED)
    )
    watermark = recorded.listing_calls(rsps)[-1]["minEndDate"]
    from fetcher.shs.endpoints import shs_time

    assert watermark == shs_time(newest_end - FETCHER_CONFIG.overlap_minutes * 60_000)
    with factory() as s:
        runs = s.scalars(select(FetchRun).order_by(FetchRun.id)).all()
        assert [(r.status, r.apps_loaded, r.apps_skipped) for r in runs] == [
            ("ok", 2, 0),
            ("ok", 0, 2),
        ]


def test_changed_last_updated_refetches_and_replaces(rsps, factory) -> None:
    entry = copy.deepcopy(next(a for a in recorded.listing() if a["id"] == HEALTHY))
    entries = [entry]
    rsps.add_callback(
        stub_shs.GET, f"{API}/applications", callback=recorded.listing_callback(entries)
    )
    recorded.register_app(rsps, HEALTHY)
    recorded.register_app(rsps, HEALTHY)
    assert run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions()).loaded == 1
    stages = count(factory, Stage)
    entry["attempts"][0]["lastUpdatedEpoch"] += 1000
    assert run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions()).loaded == 1
    assert count(factory, Application) == 1 and count(factory, Stage) == stages


def test_unknown_fields_missing_fields_unicode_long_names_and_redaction(rsps, factory) -> None:
    long_name = "ünïcødé 应用 / report.v2 " + "x" * 3000

    def transform(key: str, data: Any) -> Any:
        data = copy.deepcopy(data)
        path = key.partition("?")[0]
        if path.endswith("/stages"):
            for s in data:
                s["someFieldFromSpark9"] = {"nested": [1, 2]}
        if path.endswith("/allexecutors"):
            for e in data:
                e.pop("peakMemoryMetrics", None)  # Spark < 3.0 has none
                e.pop("addTime", None)
        if path.endswith("/environment"):
            data["sparkProperties"] += [
                ["spark.hadoop.fs.s3a.secret.key", "AKIA-very-secret"],
                ["spark.ssl.keyStorePassword", "hunter2"],
                ["spark.custom.url", "jdbc:postgresql://db/x?password=hunter2"],
                ["spark.api.token", "t0k3n"],
            ]
        return data

    entry = copy.deepcopy(next(a for a in recorded.listing() if a["id"] == SKEWED))
    entry["name"] = long_name
    entry["newListingField"] = True
    rsps.add_callback(
        stub_shs.GET, f"{API}/applications", callback=recorded.listing_callback([entry])
    )
    recorded.register_app(rsps, SKEWED, transform=transform)
    result = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert (result.loaded, result.failed) == (1, [])
    with factory() as s:
        app = s.scalars(select(Application)).one()
        assert app.name == long_name[:1000] and app.name.startswith("ünïcødé 应用")
        props = dict(
            s.execute(
                select(EnvironmentProperty.name, EnvironmentProperty.value).where(
                    EnvironmentProperty.section == "spark"
                )
            ).all()
        )
        for key in (
            "spark.hadoop.fs.s3a.secret.key",
            "spark.ssl.keyStorePassword",
            "spark.custom.url",
            "spark.api.token",
        ):
            assert props[key] == REDACTED
        assert props["spark.app.name"] == "skewed_customer_revenue"
        execs = s.scalars(select(Executor)).all()
        assert execs and all(e.peak_jvm_heap_bytes is None and e.add_time_ms is None for e in execs)
        text = json.dumps([e.raw for e in execs]) + json.dumps(props)
        assert "hunter2" not in text and "AKIA" not in text


def test_old_server_without_stage_summaries_gets_task_summaries(rsps, factory) -> None:
    """A Spark < 3.4 server ignores withSummaries: the fetcher asks each stage's taskSummary."""
    data = recorded.app_requests(HEALTHY)
    stages_key = next(k for k in data if k.partition("?")[0].endswith("/stages"))

    def strip(key: str, body: Any) -> Any:
        if key == stages_key:
            body = copy.deepcopy(body)
            for s in body:
                s.pop("taskMetricsDistributions", None)
                s.pop("executorMetricsDistributions", None)
        return body

    recorded.register_listing(rsps, [HEALTHY])
    recorded.register_app(rsps, HEALTHY, transform=strip)
    ran = [s for s in data[stages_key] if s["numTasks"] > 0]
    summary = data[stages_key][0]["taskMetricsDistributions"]
    for s in ran:
        rsps.add(
            stub_shs.GET,
            re.compile(
                rf"{re.escape(API)}/applications/{HEALTHY}/stages/{s['stageId']}/{s['attemptId']}/taskSummary\?quantiles=.*"
            ),
            json=summary,
        )
    result = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert result.loaded == 1
    assert count(factory, StageTaskDistribution) == len(ran)


def test_app_ids_refetch_specific_apps(rsps, factory) -> None:
    entry = next(a for a in recorded.listing() if a["id"] == FLAKY)
    rsps.add(stub_shs.GET, f"{API}/applications/{FLAKY}", json=entry)
    rsps.add(
        stub_shs.GET, f"{API}/applications/local-0000", status=404, body="unknown app: local-0000"
    )
    recorded.register_app(rsps, FLAKY)
    result = run_server(
        factory, SERVER, FETCHER_CONFIG, FetchOptions(app_ids=(FLAKY, "local-0000"))
    )
    assert result.loaded == 1 and result.failed == [("local-0000", "not found on the server")]
    with factory() as s:
        failed = s.scalars(select(Task).where(Task.status == "FAILED")).all()
        assert {t.task_id for t in failed} == {1, 6, 11}


@pytest.mark.parametrize("store", [True, False])
def test_store_hadoop_properties(rsps, factory, store: bool) -> None:
    recorded.register_listing(rsps, [HEALTHY])
    recorded.register_app(rsps, HEALTHY)
    cfg = FetcherConfig(threads=1, retries=0, backoff_factor_s=0, store_hadoop_properties=store)
    assert run_server(factory, SERVER, cfg, FetchOptions()).loaded == 1
    env = next(v for k, v in recorded.app_requests(HEALTHY).items() if k.endswith("/environment"))
    hadoop = count(factory, EnvironmentProperty, section="hadoop")
    assert hadoop == (len({p[0] for p in env["hadoopProperties"]}) if store else 0)
    assert count(factory, EnvironmentProperty, section="spark") > 0


def test_the_collector_runs_rarer_during_a_crawl_and_as_before_after_it(rsps, factory) -> None:
    import gc

    from fetcher.collector import CRAWL_GC_THRESHOLD

    recorded.register_listing(rsps, [BILLING])
    recorded.register_app(rsps, BILLING)
    before = gc.get_threshold()
    during: list[tuple[int, int, int]] = []
    result = run_server(
        factory,
        SERVER,
        FETCHER_CONFIG,
        FetchOptions(),
        progress=lambda *_: during.append(gc.get_threshold()),
    )
    assert result.loaded == 1 and during
    assert during[0] == (max(before[0], CRAWL_GC_THRESHOLD), *before[1:])
    assert gc.get_threshold() == before


def test_a_crawl_leaves_the_collector_off_when_it_was_off(rsps, factory) -> None:
    import gc

    recorded.register_listing(rsps, [BILLING])
    recorded.register_app(rsps, BILLING)
    before = gc.get_threshold()
    gc.set_threshold(0)
    try:
        during: list[int] = []
        run_server(
            factory,
            SERVER,
            FETCHER_CONFIG,
            FetchOptions(),
            progress=lambda *_: during.append(gc.get_threshold()[0]),
        )
        assert during == [0]
    finally:
        gc.set_threshold(*before)
