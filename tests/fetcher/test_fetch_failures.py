"""The fetch path's failures, against responses recorded from a real SHS: a retried 503, a bad
response failing its application only, an application retried then given up, and Ctrl-C."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.config.loader import FetcherConfig
from sparkscope.models.application import Application
from sparkscope.models.fetch import FetchFailure, FetchRun, FetchWatermark
from tests.fetcher import recorded, stub_shs
from tests.fetcher.conftest import FETCHER_CONFIG, SERVER
from tests.fetcher.recorded import API, FLAKY, HEALTHY, SKEWED


def test_retry_after_503_then_200(rsps, factory) -> None:
    recorded.register_listing(rsps, [HEALTHY])
    rsps.add(stub_shs.GET, f"{API}/applications/{HEALTHY}/environment", status=503)
    recorded.register_app(rsps, HEALTHY)
    result = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert (result.loaded, result.failed) == (1, [])
    env_calls = [c for c in rsps.calls if c.request.url.endswith("/environment")]
    assert [c.response.status_code for c in env_calls] == [503, 200]


def _apps_with_failure(rsps, key_suffix: str, body: Any = None, status: int = 200) -> None:
    recorded.register_listing(rsps, [HEALTHY, SKEWED])
    recorded.register_app(rsps, HEALTHY)
    for key in recorded.app_requests(SKEWED):
        path = key.partition("?")[0]
        if path.endswith(key_suffix):
            # a fault on every attempt: the client retries a read timeout
            faults = FETCHER_CONFIG.retries + 1 if body == stub_shs.READ_TIMEOUT else 1
            for _ in range(faults):
                rsps.add(stub_shs.GET, f"{API}/{path}", body=body, status=status)
    # the rest of the app, of which only what comes before the failure is asked for
    recorded.register_app(rsps, SKEWED)


@pytest.mark.parametrize(
    ("suffix", "body", "status", "message"),
    [
        ("/jobs", '[{"jobId": 0, "name": "trunc', 200, "invalid JSON"),
        ("/environment", "<html>proxy error</html>", 200, "invalid JSON"),
        ("/allexecutors", "unknown app", 404, "not found"),
        ("/jobs", stub_shs.READ_TIMEOUT, 200, "timed out"),
        ("/jobs", '{"not": "a list"}', 200, "expected a JSON list"),
    ],
)
def test_bad_response_fails_that_app_only_and_stores_nothing_of_it(
    factory, suffix: str, body: Any, status: int, message: str
) -> None:
    with stub_shs.StubShs(assert_all_requests_are_fired=False) as rsps:
        _apps_with_failure(rsps, suffix, body, status)
        result = run_server(factory, SERVER, FETCHER_CONFIG, FetchOptions())
    assert result.loaded == 1
    assert [a for a, _ in result.failed] == [SKEWED] and message in result.failed[0][1]
    with factory() as s:
        assert s.scalars(select(Application.app_id)).all() == [HEALTHY]
        failure = s.scalars(select(FetchFailure)).one()
        assert (failure.app_id, failure.failures) == (SKEWED, 1) and message in failure.last_error
        run = s.scalars(select(FetchRun)).one()
        assert run.status == "partial" and run.failed_apps[0][0] == SKEWED


def test_failed_app_is_retried_then_given_up(factory) -> None:
    cfg = FetcherConfig(threads=1, retries=0, backoff_factor_s=0, max_app_failures=2)
    for attempt in range(3):
        with stub_shs.StubShs(assert_all_requests_are_fired=False) as rsps:
            recorded.register_listing(rsps, [SKEWED])
            rsps.add(
                stub_shs.GET,
                f"{API}/applications/{SKEWED}/environment",
                status=404,
                body="no such app",
            )
            result = run_server(factory, SERVER, cfg, FetchOptions())
        if attempt < 2:
            assert [a for a, _ in result.failed] == [SKEWED]
        else:
            assert result.failed == [] and result.gave_up == [SKEWED]
    with factory() as s:
        assert s.scalars(select(FetchFailure.failures)).one() == 2


def test_ctrl_c_still_finishes_the_run_row_and_keeps_the_watermark_below_missing_apps(
    factory,
) -> None:
    """Ctrl-C after the first transaction of applications (raised where the progress bar is
    drawn: after the loader's first transaction, which holds one or two of the three with one
    thread); how much of the others was asked for by then is a matter of timing."""
    cfg = FetcherConfig(threads=1, retries=0, backoff_factor_s=0)
    apps = (HEALTHY, SKEWED, FLAKY)

    def ctrl_c(done: int, total: int, app_id: str) -> None:
        raise KeyboardInterrupt

    with stub_shs.StubShs(assert_all_requests_are_fired=False) as rsps:
        recorded.register_listing(rsps, list(apps))
        for app in apps:
            recorded.register_app(rsps, app)
        with pytest.raises(KeyboardInterrupt):
            run_server(factory, SERVER, cfg, FetchOptions(), progress=ctrl_c)
    with factory() as s:
        run = s.scalars(select(FetchRun)).one()
        assert run.status == "failed" and run.error.startswith("interrupted: KeyboardInterrupt")
        stored = s.scalars(select(Application)).all()
        assert run.finished_at_ms is not None and run.apps_loaded == len(stored)
        mark = s.scalars(select(FetchWatermark.covered_to_ms)).one()
    ends = {a["id"]: a["attempts"][0]["endTimeEpoch"] for a in recorded.listing()}
    missing = [a for a in apps if a not in {x.app_id for x in stored}]
    assert stored and missing  # stopped after the first transaction, before the last application
    assert max(x.end_time_ms for x in stored) <= mark < min(ends[a] for a in missing)
