"""The watermark: what a run lists, what it loads, what later runs do after `--limit`, `--since`,
`--backfill`, and the reconciliation that finds applications the SHS lists late."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlsplit

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from fetcher import watermark
from fetcher.job import run_server
from fetcher.listing import DAY_MS
from fetcher.options import FetchOptions
from fetcher.parse.entry import parse_app_entry
from fetcher.shs.endpoints import shs_time
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.models.application import Application
from sparkscope.models.fetch import FetchWatermark
from tests.fetcher.fake_shs import HOUR_MS, FakeShs, running, set_end, spread_listing

FETCHER_CONFIG = FetcherConfig(threads=2, retries=0, backoff_factor_s=0, listing_page_size=4)
ENTRIES = spread_listing()  # 21 apps, 7 hours apart, oldest first
IDS = [e["id"] for e in ENTRIES]
ENDS = [e["attempts"][0]["endTimeEpoch"] for e in ENTRIES]


@pytest.fixture
def shs() -> Iterator[FakeShs]:
    with running(ENTRIES) as server:
        yield server


def run(shs: FakeShs, factory: sessionmaker[Session], **opts: object):  # type: ignore[no-untyped-def]
    cfg = ServerConfig(name="prod", url=shs.url, connect_timeout_s=2, read_timeout_s=10)
    return run_server(factory, cfg, FETCHER_CONFIG, FetchOptions(**opts))  # type: ignore[arg-type]


def stored(factory: sessionmaker[Session]) -> set[str]:
    with factory() as s:
        return set(s.scalars(select(Application.app_id)))


def coverage(factory: sessionmaker[Session]) -> tuple[int, int]:
    with factory() as s:
        row = s.scalars(select(FetchWatermark)).one()
        return row.covered_from_ms, row.covered_to_ms


def min_end_dates(shs: FakeShs, since_call: int) -> list[str | None]:
    calls = [p for p in shs.paths if p.startswith("applications?")][since_call:]
    return [dict(parse_qsl(urlsplit(p).query)).get("minEndDate") for p in calls]


def entry(i: int, end_ms: int) -> watermark.AppEntry:
    e = json.loads(json.dumps(ENTRIES[i]))
    set_end(e, end_ms)
    return parse_app_entry(e)


def test_merge_only_widens_a_contiguous_range() -> None:
    old = watermark.Coverage(100, 200, None)
    assert watermark.merged(None, 0, 50) == (0, 50)
    assert watermark.merged(old, 150, 300) == (100, 300)
    assert watermark.merged(old, 0, 120) == (0, 200)
    assert watermark.merged(old, 202, 300) is None  # a gap: later runs list it
    assert watermark.merged(old, 120, 180) is None  # nothing new
    assert watermark.merged(old, 50, 40) is None


def test_frontier_moves_only_over_a_done_prefix() -> None:
    f = watermark.Frontier([entry(2, 300), entry(0, 100), entry(1, 200)], covered_from_ms=10)
    first, second, third = (e.key for e in f.entries)
    assert f.advance_if_done(second) is None  # the oldest is still missing
    f.done(second)
    assert f.advance_now() == watermark.Advance(10, 99)
    assert f.advance_if_done(first) == watermark.Advance(10, 299)  # first and second now done
    f.done(first)
    assert f.advance_if_done(third) == watermark.Advance(10, 300, False)


def test_first_run_lists_everything_then_runs_list_from_watermark_minus_overlap(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    first = run(shs, factory)
    assert first.loaded == 21 and stored(factory) == set(IDS)
    assert coverage(factory) == (0, ENDS[-1])
    assert set(min_end_dates(shs, 0)) == {None}
    calls = len([p for p in shs.paths if p.startswith("applications?")])
    second = run(shs, factory)
    assert (second.loaded, second.skipped) == (0, 1)  # only the newest is in the overlap
    assert min_end_dates(shs, calls) == [
        shs_time(ENDS[-1] - FETCHER_CONFIG.overlap_minutes * 60_000)
    ]


def test_limit_first_run_then_plain_runs_go_forward_and_backfill_loads_the_rest(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    shs.listed = set(IDS[:15])
    assert run(shs, factory, limit=5).loaded == 5
    assert stored(factory) == set(IDS[10:15])
    assert coverage(factory) == (ENDS[10] + 1, ENDS[14])
    shs.listed = None  # six newer apps arrive
    plain = run(shs, factory)
    assert plain.loaded == 6 and stored(factory) == set(IDS[10:])
    since = run(shs, factory, since_ms=ENDS[7])
    assert since.loaded == 3 and stored(factory) == set(IDS[7:])
    assert coverage(factory) == (ENDS[7], ENDS[-1])
    backfill = run(shs, factory, backfill=True)
    assert backfill.loaded == 7 and stored(factory) == set(IDS)
    assert coverage(factory) == (0, ENDS[-1])


def test_reconciliation_finds_an_app_listed_late_far_below_the_watermark(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    late = IDS[15]  # ended 42 hours before the newest app, but the SHS lists it only later
    shs.listed = set(IDS) - {late}
    assert run(shs, factory).loaded == 20
    shs.listed = None
    assert run(shs, factory).loaded == 0  # the overlap window does not reach it
    assert late not in stored(factory)
    calls = len([p for p in shs.paths if p.startswith("applications?")])
    found = run(shs, factory, reconcile=True)
    assert found.loaded == 1 and late in stored(factory)
    assert min_end_dates(shs, calls)[0] == shs_time(
        ENDS[-1] - FETCHER_CONFIG.reconcile_days * DAY_MS
    )


def test_reconciliation_runs_by_itself_once_a_day(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    late = IDS[12]
    shs.listed = set(IDS) - {late}
    run(shs, factory)
    shs.listed = None
    assert run(shs, factory).loaded == 0
    with factory() as s, s.begin():
        day_ago = int(time.time() * 1000) - FETCHER_CONFIG.reconcile_every_hours * HOUR_MS - 1
        s.execute(update(FetchWatermark).values(reconciled_at_ms=day_ago))
    assert run(shs, factory).loaded == 1 and late in stored(factory)
    with factory() as s:
        reconciled = s.scalars(select(FetchWatermark.reconciled_at_ms)).one()
    assert reconciled is not None and reconciled > day_ago + HOUR_MS


def test_apps_sharing_one_end_time_beyond_a_page_are_all_listed(
    shs: FakeShs, factory: sessionmaker[Session]
) -> None:
    for e in shs.entries:
        set_end(e, ENDS[-1])
    result = run(shs, factory)
    assert result.loaded == 21 and stored(factory) == set(IDS)
    assert coverage(factory) == (0, ENDS[-1])
