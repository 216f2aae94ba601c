"""Which applications a run fetches: the bounded listing, the watermark window and the plan.

The SHS listing has no offset: it is sorted by end time, newest first, so the next page is asked
for with ``maxEndDate`` set to the oldest end time seen (apps on the boundary come again and are
de-duplicated). A page that brings nothing new (more applications share one end time than a page
holds) is asked for again once, twice as large; when that brings nothing new either, or the page
would grow past 64 pages' worth, the listing stops there and says how far down it is complete.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from fetcher import loader, watermark
from fetcher.parse.app import AppBundle
from fetcher.parse.entry import AppEntry, parse_app_entry
from fetcher.parse.fields import ParseError
from fetcher.shs import endpoints
from fetcher.shs.client import ShsBadResponse, ShsClient, ShsError, ShsNotFound, ShsUnreachable
from fetcher.shs.safejson import INT64_MAX, find_hostile
from fetcher.watermark import Frontier
from sparkscope.config.loader import FetcherConfig
from sparkscope.models.application import Application
from sparkscope.models.fetch import FetchFailure

if TYPE_CHECKING:
    from fetcher.options import FetchOptions, ServerResult

log = logging.getLogger("sparkscope.fetch")

MAX_PAGE_GROWTH = 64
DAY_MS = 86_400_000


@dataclass
class Listing:
    """What one listing pass returned."""

    entries: list[AppEntry] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    #: app id -> why its listing entry cannot be read (a hostile number, a wrong shape)
    bad: dict[str, str] = field(default_factory=dict)
    #: every app that ended at or after this was listed (0: the whole history)
    complete_from_ms: int = 0


def _read(item: Any) -> tuple[str | None, AppEntry | None, str | None]:
    """(app id, entry, error) of one listing item; no id when it has none to name it by."""
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        return None, None, None
    bad = find_hostile(item)
    if bad is not None:
        return item["id"], None, f"listing entry: number out of range: {bad}"
    try:
        return item["id"], parse_app_entry(item), None
    except ParseError as exc:
        return item["id"], None, f"listing entry: {exc}"


def list_completed(
    client: ShsClient, min_end_ms: int | None, limit: int | None, page_size: int
) -> Listing:
    """Completed apps ending at or after ``min_end_ms`` (or the newest ``limit``), newest first."""
    out = Listing()
    max_end: int | None = None
    size = limit or page_size
    stalled = False
    while True:
        request = endpoints.applications(min_end_ms, max_end, size)
        data = client.get_json(request, mark_hostile=True)
        if not isinstance(data, list):
            url = client.shown(client.url_for(request[0]))
            raise ShsBadResponse(
                url, f"applications: expected a JSON list, got {type(data).__name__}"
            )
        new, ends = 0, []
        for item in data:
            app_id, entry, error = _read(item)
            if app_id is None:
                continue
            if app_id not in out.raw and app_id not in out.bad:
                new += 1
            if entry is None:
                out.bad.setdefault(app_id, error or "unreadable")
                continue
            if app_id not in out.raw:
                out.raw[app_id] = item
                out.entries.append(entry)
            if entry.end_time_ms:
                ends.append(entry.end_time_ms)
        if len(data) < size:
            out.complete_from_ms = min_end_ms or 0
            return out
        oldest = min(ends) if ends else None
        if limit is not None:
            out.complete_from_ms = oldest + 1 if oldest is not None else INT64_MAX
            return out
        if new and oldest is not None and (max_end is None or oldest < max_end):
            max_end, stalled = oldest, False
            continue
        # Nothing new, or no progress: more apps share the boundary end time than a page holds.
        if (stalled and not new) or size * 2 > page_size * MAX_PAGE_GROWTH or oldest is None:
            log.warning(
                "the listing stopped making progress at %s; it is complete down to there",
                endpoints.shs_time(max_end) if max_end is not None else "its first page",
            )
            out.complete_from_ms = max_end + 1 if max_end is not None else INT64_MAX
            return out
        stalled = not new
        size *= 2


@dataclass
class FetchPlan:
    """What one run fetches, oldest first, and the pass whose done prefix moves the watermark.

    A source other than a History Server (an event-log folder) brings its own ``fetch`` of one
    entry and what it writes in each application's transaction (``loaded``, ``failed``)."""

    todo: list[AppEntry]
    frontier: Frontier | None = None
    fetch: Callable[..., AppBundle] | None = None
    loaded: Callable[[Session, int, int, AppBundle], None] | None = None
    failed: Callable[[Session, int, AppEntry], None] | None = None


def listing_window(
    session: Session, server_id: int, fetcher_config: FetcherConfig, opts: FetchOptions
) -> tuple[int | None, bool]:
    """(minEndDate to list from, whether the pass counts as a reconciliation)."""
    if opts.backfill:
        return None, opts.limit is None
    if opts.since_ms is not None:
        return opts.since_ms, False
    if opts.limit is not None:
        return None, False
    cov = watermark.read(session, server_id)
    if cov is None:
        return None, True  # the whole history: nothing is known yet
    every_ms = fetcher_config.reconcile_every_hours * 3_600_000
    due = opts.reconcile or (
        every_ms > 0
        and (cov.reconciled_at_ms is None or time.time() * 1000 - cov.reconciled_at_ms >= every_ms)
    )
    window = (
        fetcher_config.reconcile_days * DAY_MS if due else fetcher_config.overlap_minutes * 60_000
    )
    # Never below the covered range: older history is for --backfill / --since to load.
    return max(cov.from_ms, cov.to_ms - window), due


def plan(
    factory: sessionmaker[Session],
    client: ShsClient,
    server_id: int,
    fetcher_config: FetcherConfig,
    opts: FetchOptions,
    result: ServerResult,
) -> FetchPlan:
    """List the server and decide which applications to fetch."""
    if opts.app_ids:
        return FetchPlan(_by_id(client, opts.app_ids, result))
    with factory() as session:
        min_end, reconcile = listing_window(session, server_id, fetcher_config, opts)
    if reconcile and min_end is not None:
        log.info("reconciling: listing applications that ended since %s", _when(min_end))
    listing = list_completed(client, min_end, opts.limit, fetcher_config.listing_page_size)
    complete = listing.complete_from_ms <= (min_end or 0)
    frontier = Frontier(
        [e for e in listing.entries if e.completed],
        listing.complete_from_ms,
        reconcile=reconcile and complete,
    )
    result.seen = len(frontier.entries) + len(listing.bad)
    with factory() as session:
        stored = _stored_versions(session, server_id, [e.app_id for e in frontier.entries])
        failures = {
            (f.app_id, f.attempt_id): f
            for f in session.scalars(
                select(FetchFailure).where(FetchFailure.server_id == server_id)
            )
        }
    todo: list[AppEntry] = []
    for e in frontier.entries:
        f = failures.get(e.key)
        # A stored app with a failure row was stored without its SQL part: retried like a failure.
        if stored.get(e.key, -1) == e.last_updated_ms and f is None:
            result.skipped += 1
        elif _given_up(f, fetcher_config, e.last_updated_ms):
            result.gave_up.append(e.app_id)
            result.skipped += 1
        else:
            todo.append(e)
            continue
        frontier.done(e.key)
    _record_bad_entries(factory, server_id, listing.bad, failures, fetcher_config, result)
    # Earlier failures the listing window no longer covers are retried by id.
    listed = {e.key for e in frontier.entries} | {(a, "") for a in listing.bad}
    for key, f in failures.items():
        if key in listed or f.failures >= fetcher_config.max_app_failures:
            continue
        try:
            entry = parse_app_entry(client.get_json(endpoints.application(key[0])))
        except ShsUnreachable:
            raise
        except (ShsError, ParseError):
            continue  # still failing; counted when it is next listed or retried
        if entry.completed:
            todo.append(entry)
    return FetchPlan(todo, frontier)


def _given_up(
    f: FetchFailure | None, fetcher_config: FetcherConfig, last_updated_ms: int | None
) -> bool:
    return (
        f is not None
        and f.failures >= fetcher_config.max_app_failures
        and f.last_updated_ms == last_updated_ms
    )


def _record_bad_entries(
    factory: sessionmaker[Session],
    server_id: int,
    bad: dict[str, str],
    failures: dict[tuple[str, str], FetchFailure],
    fetcher_config: FetcherConfig,
    result: ServerResult,
) -> None:
    """Listing entries that cannot be read fail their own application only."""
    for app_id, error in bad.items():
        if _given_up(failures.get((app_id, "")), fetcher_config, None):
            result.gave_up.append(app_id)
            result.skipped += 1
            continue
        result.failed.append((app_id, error))
        log.warning("failed %s: %s", app_id, error)
        with factory() as session, session.begin():
            loader.record_failure(session, server_id, app_id, None, error, None)


def _by_id(client: ShsClient, app_ids: tuple[str, ...], result: ServerResult) -> list[AppEntry]:
    entries = []
    for app_id in app_ids:
        try:
            entries.append(parse_app_entry(client.get_json(endpoints.application(app_id))))
        except ShsNotFound:
            result.failed.append((app_id, "not found on the server"))
        except ShsUnreachable:
            raise
        except (ShsError, ParseError) as exc:
            result.failed.append((app_id, str(exc)))
    result.seen = len(entries)
    return [e for e in entries if e.completed]


def _stored_versions(
    session: Session, server_id: int, app_ids: list[str]
) -> dict[tuple[str, str], int | None]:
    out: dict[tuple[str, str], int | None] = {}
    for i in range(0, len(app_ids), 500):
        chunk = app_ids[i : i + 500]
        for app_id, attempt_id, updated in session.execute(
            select(Application.app_id, Application.attempt_id, Application.last_updated_ms).where(
                Application.server_id == server_id, Application.app_id.in_(chunk)
            )
        ):
            out[(app_id, attempt_id)] = updated
    return out


def _when(ms: int | None) -> str:
    return "the start" if ms is None else endpoints.shs_time(ms)
