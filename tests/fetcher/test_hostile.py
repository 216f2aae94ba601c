"""Hostile or broken server answers, from a real HTTP server on 127.0.0.1: each one fails only its
own application (named, recorded, retried, given up), never the run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from fetcher.job import run_server
from fetcher.options import FetchOptions
from sparkscope.cli.main import cli
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.db import make_engine
from sparkscope.models.application import Application
from sparkscope.models.fetch import FetchFailure, FetchRun
from tests.fetcher import recorded
from tests.fetcher.fake_shs import FakeShs, drip, running, spread_listing

FETCHER_CONFIG = FetcherConfig(threads=2, retries=1, backoff_factor_s=0, max_app_failures=2)
ENTRIES = spread_listing()[-4:]  # four apps keep these tests quick
IDS = [e["id"] for e in ENTRIES]
BAD = IDS[1]


@pytest.fixture
def shs() -> Iterator[FakeShs]:
    with running(ENTRIES) as server:
        yield server


def server(shs: FakeShs, **kw: Any) -> ServerConfig:
    return ServerConfig(name="fake", url=shs.url, connect_timeout_s=2, read_timeout_s=5, **kw)


def stored(factory: sessionmaker[Session]) -> list[str]:
    with factory() as s:
        return sorted(s.scalars(select(Application.app_id)))


def failures(factory: sessionmaker[Session]) -> list[tuple[str, int, str]]:
    with factory() as s:
        return [
            (f.app_id, f.failures, f.last_error)
            for f in s.scalars(select(FetchFailure).order_by(FetchFailure.app_id))
        ]


def last_run(factory: sessionmaker[Session]) -> FetchRun:
    with factory() as s:
        return s.scalars(select(FetchRun).order_by(FetchRun.id.desc())).first()  # type: ignore[return-value]


def _key_of(app_id: str, suffix: str) -> str:
    return next(k for k in recorded.app_requests(app_id) if k.partition("?")[0].endswith(suffix))


def _hostile_body(app_id: str, suffix: str, number: str) -> bytes:
    """The recorded body with its first integer field replaced by ``number`` (raw JSON text)."""
    key = _key_of(app_id, suffix)
    data = recorded.app_requests(app_id)[key]
    item = data[0] if isinstance(data, list) else data
    field = next(k for k, v in item.items() if isinstance(v, int) and not isinstance(v, bool))
    item[field] = "__HOSTILE__"
    return json.dumps(data).replace('"__HOSTILE__"', number).encode()


HOSTILE = [
    (where, number)
    for where in ("listing", "/jobs", "/allexecutors", "/stages")
    for number in ("1e400", "NaN", "-Infinity", str(2**64))
]
# a finite float past 64 bits is only hostile where an integer column takes it (jobId, duration)
HOSTILE += [("listing", "1e19"), ("/jobs", "1e19")]


@pytest.mark.parametrize(("where", "number"), HOSTILE)
def test_hostile_number_fails_only_its_app(
    shs: FakeShs, factory: sessionmaker[Session], where: str, number: str
) -> None:
    if where == "listing":
        entry = next(e for e in shs.entries if e["id"] == BAD)
        entry["attempts"][0]["duration"] = "__HOSTILE__"
        listing = json.dumps(shs.entries).replace('"__HOSTILE__"', number)
        shs.overrides["applications?"] = _filtered_listing(listing)
    else:
        key = _key_of(BAD, where)
        shs.overrides[key.partition("?")[0]] = _hostile_body(BAD, where, number)
    result = run_server(factory, server(shs), FETCHER_CONFIG, FetchOptions())
    assert result.loaded == len(IDS) - 1 and stored(factory) == sorted(set(IDS) - {BAD})
    assert [a for a, _ in result.failed] == [BAD]
    reason = result.failed[0][1]
    assert "number out of range" in reason
    [(app, count, error)] = failures(factory)
    assert (app, count) == (BAD, 1) and "number out of range" in error
    run = last_run(factory)
    assert (run.status, run.apps_loaded, run.apps_failed) == ("partial", len(IDS) - 1, 1)
    assert run.finished_at_ms is not None and run.finished_at_ms >= run.started_at_ms


def _filtered_listing(listing: str) -> Any:
    """A listing answer built from raw text (the filter would choke on the hostile number)."""

    def write(handler: Any) -> None:
        body = listing.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return write


def test_poisoned_app_is_retried_up_to_max_failures_then_given_up(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    shs.overrides[_key_of(BAD, "/jobs").partition("?")[0]] = _hostile_body(BAD, "/jobs", "1e400")
    outcomes = []
    for _ in range(3):
        r = run_server(factory, server(shs), FETCHER_CONFIG, FetchOptions(reconcile=True))
        outcomes.append(([a for a, _ in r.failed], r.gave_up))
    assert outcomes == [([BAD], []), ([BAD], []), ([], [BAD])]
    assert [(a, n) for a, n, _ in failures(factory)] == [(BAD, FETCHER_CONFIG.max_app_failures)]
    assert stored(factory) == sorted(set(IDS) - {BAD})


def test_listing_that_keeps_returning_limit_entries_is_bounded(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    """A server that ignores maxEndDate and pads every page to `limit` with one app."""
    one = shs.entries[-1]

    def pad(handler: Any) -> None:
        limit = int(handler.path.rsplit("limit=", 1)[1].split("&")[0])
        body = json.dumps([one] * limit).encode()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    shs.overrides["applications?"] = pad
    cfg = FetcherConfig(threads=1, retries=0, backoff_factor_s=0, listing_page_size=3)
    result = run_server(factory, server(shs), cfg, FetchOptions())
    assert result.loaded == 1 and stored(factory) == [one["id"]]
    listing_calls = [p for p in shs.paths if p.startswith("applications?")]
    assert len(listing_calls) == 3  # a page, the same page, once twice as large: stop


@pytest.mark.parametrize("evil_id", ["..", "."])
def test_dot_ids_cannot_address_another_resource(
    shs: FakeShs, factory: sessionmaker[Session], evil_id: str
) -> None:
    entry = json.loads(json.dumps(shs.entries[0]))
    entry["id"] = evil_id
    shs.alias(shs.entries[0]["id"], evil_id)
    shs.entries = [entry]
    result = run_server(factory, server(shs), FETCHER_CONFIG, FetchOptions())
    assert (result.loaded, result.failed) == (1, [])
    per_app = [p for p in shs.paths if not p.startswith("applications?")]
    encoded = evil_id.replace(".", "%2E")
    assert per_app and all(p.startswith(f"applications/{encoded}/") for p in per_app)
    assert stored(factory) == [evil_id]


def test_slow_drip_hits_the_total_deadline_and_is_reported_as_a_timeout(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    key = _key_of(BAD, "/jobs")
    body = (recorded.RECORDING / recorded.index()[key]).read_bytes()
    shs.overrides[key.partition("?")[0]] = drip(body, seconds_per_byte=0.5)
    started = time.monotonic()
    result = run_server(
        factory, server(shs, request_deadline_s=2.0), FETCHER_CONFIG, FetchOptions()
    )
    assert time.monotonic() - started < 15  # the read timeout (5 s) never trips on a drip
    assert [a for a, _ in result.failed] == [BAD] and result.unreachable is None
    assert "timed out: no complete answer within 2 s" in result.failed[0][1]
    assert result.loaded == len(IDS) - 1


def test_cli_hostile_app_exit_1_with_summary(shs: FakeShs, fresh_pg_url: str, monkeypatch) -> None:
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_pg_url)
    monkeypatch.delenv("SPARKSCOPE_CONFIG", raising=False)
    shs.overrides[_key_of(BAD, "/stages").partition("?")[0]] = _hostile_body(BAD, "/stages", "NaN")
    result = CliRunner().invoke(cli, ["fetch", "--url", shs.url, "--no-analyze"])
    assert result.exit_code == 1, result.output
    assert f"loaded {len(IDS) - 1}, skipped 0, failed 1" in result.output
    assert f"failed {BAD}: number out of range: NaN" in result.output
    engine = make_engine(fresh_pg_url)
    with engine.connect() as c:
        assert c.execute(select(FetchRun.status)).scalars().all() == ["partial"]
        assert c.scalar(select(func.count()).select_from(FetchFailure)) == 1
    engine.dispose()


def test_read_timeout_after_retries_fails_that_app_not_the_run(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    def silent(handler: Any) -> None:
        time.sleep(2.5)  # longer than the read timeout: no byte at all

    shs.overrides[_key_of(BAD, "/jobs").partition("?")[0]] = silent
    cfg = ServerConfig(name="fake", url=shs.url, connect_timeout_s=2, read_timeout_s=1)
    result = run_server(factory, cfg, FETCHER_CONFIG, FetchOptions())
    assert result.unreachable is None and result.loaded == len(IDS) - 1
    assert [a for a, _ in result.failed] == [BAD]
    assert "timed out: no answer within 1 s (read timeout)" in result.failed[0][1]
    jobs_calls = [p for p in shs.paths if p.startswith(f"applications/{BAD}/jobs")]
    assert len(jobs_calls) == 1 + FETCHER_CONFIG.retries
