"""One fetch run: lock -> watermark -> list apps -> thread pool of per-app requests -> load -> analyse.

HTTP runs in worker threads, one application per worker with all of its calls back to back (the
SHS caches a bounded number of replayed applications). Database writes stay on the main thread as
it consumes finished applications, each in its own transaction, so an application is stored
complete or not at all.
"""

from __future__ import annotations

import fcntl
import logging
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from fetcher import endpoints, loader
from fetcher.client import ShsClient, ShsError, ShsNotFound, ShsUnreachable
from fetcher.parse import (
    AppBundle,
    AppEntry,
    ParseError,
    parse_app_entry,
    parse_environment,
    parse_executors,
    parse_jobs,
    parse_listing,
    parse_stage_executors,
    parse_stage_failed_tasks,
    parse_stages,
    parse_task_list,
    parse_task_summary,
)
from heuristics.base import AppData
from sparkscope.analysis import (
    distribution_input,
    executor_input,
    is_input_task,
    job_input,
    record_config,
    score_and_store,
    stage_input,
    store_inputs,
    task_input,
)
from sparkscope.config import FetcherConfig, ServerConfig
from sparkscope.db import is_postgres, now_ms
from sparkscope.models import Application, FetchFailure, FetchRun
from sparkscope.whatif import refit_after_fetch
from sparkscope.whatif import store_input as store_whatif_input

log = logging.getLogger("sparkscope.fetch")

#: Key of the PostgreSQL advisory lock that serialises fetch runs on one database.
ADVISORY_LOCK_KEY = 0x5350_4B53_434F_5045 & 0x7FFF_FFFF_FFFF_FFFF
FAILED_TASKS_KEPT_FACTOR = 5
#: With 21 quantiles on the 0.05 grid every task of a stage of at most 20 tasks is known exactly.
TAIL_MIN_TASKS = 20
TAIL_MIN_SHARE = 0.01
TAIL_MAX_STAGES = 50


@dataclass
class FetchOptions:
    """What one `sparkscope fetch` run asks for."""

    since_ms: int | None = None
    limit: int | None = None
    app_ids: tuple[str, ...] = ()
    threads: int | None = None


@dataclass
class ServerResult:
    """The outcome of fetching from one server."""

    server: str
    seen: int = 0
    loaded: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    requests: int = 0
    bytes: int = 0
    seconds: float = 0.0
    unreachable: str | None = None
    locked: bool = False


Progress = Callable[[int, int, str], None]


# ------------------------------------------------------------------------------------------ lock


class FetchLocked(Exception):
    """Another fetch run holds the lock on this database."""


@contextmanager
def fetch_lock(engine: Engine) -> Iterator[None]:
    """Hold the database-wide fetch lock: a PostgreSQL advisory lock, or a file lock for SQLite."""
    if is_postgres(engine):
        with engine.connect() as conn:
            got = conn.execute(
                text("SELECT pg_try_advisory_lock(:k)"), {"k": ADVISORY_LOCK_KEY}
            ).scalar()
            conn.commit()
            if not got:
                raise FetchLocked("another fetch holds the PostgreSQL advisory lock")
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_LOCK_KEY})
                conn.commit()
        return
    database = make_url(str(engine.url)).database
    lock_path = Path(f"{database}.fetch-lock") if database and database != ":memory:" else None
    if lock_path is None:
        yield
        return
    with open(lock_path, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FetchLocked(f"another fetch holds {lock_path}") from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------- listing


def list_completed(
    client: ShsClient, min_end_ms: int | None, limit: int | None, page_size: int
) -> tuple[list[AppEntry], dict[str, Any]]:
    """Completed apps ending at or after ``min_end_ms``, newest first, paging by end time.

    The SHS listing has no offset; it is sorted by end time, newest first, so the next page is
    asked for with ``maxEndDate`` set to the oldest end time seen (apps on the boundary come again
    and are de-duplicated). Returns the entries and the raw listing items by app id.
    """
    if limit is not None:
        data = client.get_json(endpoints.applications(min_end_ms, None, limit))
        return parse_listing(data), {str(i.get("id")): i for i in data if isinstance(i, dict)}
    entries: dict[str, AppEntry] = {}
    raw: dict[str, Any] = {}
    max_end: int | None = None
    size = page_size
    while True:
        data = client.get_json(endpoints.applications(min_end_ms, max_end, size))
        page = parse_listing(data)
        new = [e for e in page if e.app_id not in entries]
        for e in new:
            entries[e.app_id] = e
        raw.update({str(i.get("id")): i for i in data if isinstance(i, dict)})
        if len(data) < size:
            break
        if not new:
            # More than a page of apps share one end time: widen the page and ask again.
            size *= 2
            continue
        ends = [e.end_time_ms for e in page if e.end_time_ms]
        if not ends:
            break
        max_end = min(ends)
    return list(entries.values()), raw


# ---------------------------------------------------------------------------------- one app's HTTP


def fetch_app(
    client: ShsClient, entry: AppEntry, fcfg: FetcherConfig, redaction: re.Pattern[str]
) -> AppBundle:
    """All requests for one application, back to back; parsed into an AppBundle."""
    app, att = entry.app_id, entry.attempt_id
    bundle = AppBundle(entry=entry)
    bundle.environment = parse_environment(
        client.get_json(endpoints.environment(app, att)), redaction
    )
    bundle.executors = parse_executors(client.get_json(endpoints.all_executors(app, att)))
    bundle.jobs = parse_jobs(client.get_json(endpoints.jobs(app, att)))
    bundle.stages, bundle.distributions = parse_stages(
        client.get_json(endpoints.stages_with_summaries(app, att))
    )
    # Servers before Spark 3.4 ignore withSummaries: ask for each stage's summary instead.
    have = {(d["stage_id"], d["attempt_id"]) for d in bundle.distributions}
    for s in bundle.stages:
        key = (s["stage_id"], s["attempt_id"])
        if key not in have and s["num_tasks"] > 0 and s["status"] != "SKIPPED":
            try:
                summary = client.get_json(endpoints.task_summary(app, att, *key))
            except ShsNotFound:
                continue  # a stage with no finished task has no summary
            dist = parse_task_summary(summary)
            if dist is not None:
                bundle.distributions.append({"stage_id": key[0], "attempt_id": key[1], **dist})
    if fcfg.tasks_per_stage > 0:
        for s in stages_for_slowest_tasks(bundle.stages, fcfg.top_stages):
            data = client.get_json(
                endpoints.slowest_tasks(
                    app, att, s["stage_id"], s["attempt_id"], fcfg.tasks_per_stage
                )
            )
            bundle.merge_tasks(parse_task_list(s["stage_id"], s["attempt_id"], data, "slowest"))
    for s in bundle.stages:
        if s["num_failed_tasks"] <= 0:
            continue
        data = client.get_json(
            endpoints.failed_tasks_with_executors(app, att, s["stage_id"], s["attempt_id"])
        )
        failed = parse_stage_failed_tasks(s["stage_id"], s["attempt_id"], data)
        failed.sort(key=lambda t: t["task_id"])
        bundle.merge_tasks(failed[: max(1, fcfg.tasks_per_stage) * FAILED_TASKS_KEPT_FACTOR])
        bundle.stage_executors.extend(parse_stage_executors(s["stage_id"], s["attempt_id"], data))
    return bundle


def stages_for_slowest_tasks(stages: list[dict[str, Any]], top_k: int) -> list[dict[str, Any]]:
    """Stage attempts whose slowest tasks are asked for: the ``top_k`` longest by executor run time
    (for the heuristics), plus every stage whose 21-point quantiles cannot pin each task (more than
    `TAIL_MIN_TASKS` tasks) and that holds at least `TAIL_MIN_SHARE` of the run time, up to
    `TAIL_MAX_STAGES` of them, longest first (for the what-if simulation: a heavy tail beyond the
    95th percentile is what quantiles miss)."""
    ran = sorted(
        (s for s in stages if s["num_tasks"] > 0),
        key=lambda s: s["executor_run_time_ms"],
        reverse=True,
    )
    total = sum(s["executor_run_time_ms"] for s in ran)
    tail = [
        s
        for s in ran
        if s["num_tasks"] > TAIL_MIN_TASKS and s["executor_run_time_ms"] >= TAIL_MIN_SHARE * total
    ][:TAIL_MAX_STAGES]
    chosen = {id(s) for s in ran[:top_k]} | {id(s) for s in tail}
    return [s for s in ran if id(s) in chosen]


# ------------------------------------------------------------------------------------------ run


def _watermark(session: Session, server_id: int, overlap_minutes: int) -> int | None:
    newest = session.scalar(
        select(func.max(Application.end_time_ms)).where(Application.server_id == server_id)
    )
    return None if newest is None else int(newest) - overlap_minutes * 60_000


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


def _failures(session: Session, server_id: int) -> dict[tuple[str, str], FetchFailure]:
    rows = session.scalars(select(FetchFailure).where(FetchFailure.server_id == server_id)).all()
    return {(f.app_id, f.attempt_id): f for f in rows}


def make_client(server: ServerConfig, fcfg: FetcherConfig, recorder: Any = None) -> ShsClient:
    """A client for one configured server."""
    verify: bool | str = (
        server.ca_bundle if (server.verify_tls and server.ca_bundle) else server.verify_tls
    )
    return ShsClient(
        server.url,
        connect_timeout_s=server.connect_timeout_s,
        read_timeout_s=server.read_timeout_s,
        retries=fcfg.retries,
        backoff_factor_s=fcfg.backoff_factor_s,
        verify=verify,
        recorder=recorder,
    )


def run_server(
    factory: sessionmaker[Session],
    server: ServerConfig,
    fcfg: FetcherConfig,
    opts: FetchOptions,
    registry: Any = None,
    progress: Progress | None = None,
) -> ServerResult:
    """Fetch new and changed completed applications of one server into the database."""
    started = time.perf_counter()
    result = ServerResult(server=server.name)
    client = make_client(server, fcfg)
    redaction = re.compile(fcfg.redaction_regex)
    with factory() as session, session.begin():
        server_id = loader.ensure_server(session, server.name, server.url)
        run = FetchRun(server_id=server_id, started_at_ms=now_ms(), status="running")
        session.add(run)
        session.flush()
        run_id = run.id
        if registry is not None:
            record_config(session, registry)  # once per run, not per application
    try:
        todo = _plan(factory, client, server_id, fcfg, opts, result)
    except ShsError as exc:
        result.unreachable = str(exc)
        log.error("%s: cannot list applications: %s", server.name, exc)
        todo = []
    if result.unreachable is None:
        _fetch_and_load(
            factory, client, server_id, fcfg, opts, todo, redaction, registry, result, progress
        )
        refit_after_fetch(factory, server_id, [e.name for e in todo])
    result.requests, result.bytes = client.requests, client.bytes
    result.seconds = time.perf_counter() - started
    status = "failed" if result.unreachable else ("partial" if result.failed else "ok")
    with factory() as session, session.begin():
        session.execute(
            update(FetchRun)
            .where(FetchRun.id == run_id)
            .values(
                finished_at_ms=now_ms(),
                status=status,
                apps_seen=result.seen,
                apps_loaded=result.loaded,
                apps_skipped=result.skipped,
                apps_failed=len(result.failed),
                requests=result.requests,
                bytes=result.bytes,
                error=result.unreachable,
                failed_apps=[[a, e[:500]] for a, e in result.failed] or None,
            )
        )
    return result


def _plan(
    factory: sessionmaker[Session],
    client: ShsClient,
    server_id: int,
    fcfg: FetcherConfig,
    opts: FetchOptions,
    result: ServerResult,
) -> list[AppEntry]:
    """Decide which applications to fetch."""
    with factory() as session:
        if opts.app_ids:
            entries = []
            for app_id in opts.app_ids:
                try:
                    entries.append(parse_app_entry(client.get_json(endpoints.application(app_id))))
                except ShsNotFound:
                    result.failed.append((app_id, "not found on the server"))
                except (ShsError, ParseError) as exc:
                    if isinstance(exc, ShsUnreachable):
                        raise
                    result.failed.append((app_id, str(exc)))
            result.seen = len(entries)
            return [e for e in entries if e.completed]
        min_end = opts.since_ms
        if min_end is None and opts.limit is None:
            min_end = _watermark(session, server_id, fcfg.overlap_minutes)
        listed, _raw = list_completed(client, min_end, opts.limit, fcfg.listing_page_size)
        listed = [e for e in listed if e.completed]
        result.seen = len(listed)
        stored = _stored_versions(session, server_id, [e.app_id for e in listed])
        failures = _failures(session, server_id)
        todo: list[AppEntry] = []
        for e in listed:
            if e.key in stored and stored[e.key] == e.last_updated_ms:
                result.skipped += 1
                continue
            f = failures.get(e.key)
            if (
                f is not None
                and f.failures >= fcfg.max_app_failures
                and f.last_updated_ms == e.last_updated_ms
            ):
                result.gave_up.append(e.app_id)
                result.skipped += 1
                continue
            todo.append(e)
        # Earlier failures the listing window no longer covers are retried by id.
        listed_keys = {e.key for e in listed}
        for key, f in failures.items():
            if key in listed_keys or f.failures >= fcfg.max_app_failures:
                continue
            try:
                entry = parse_app_entry(client.get_json(endpoints.application(key[0])))
            except ShsUnreachable:
                raise
            except (ShsError, ParseError):
                continue  # still failing; counted when it is next listed or retried
            if entry.completed:
                todo.append(entry)
        return todo


def _fetch_and_load(
    factory: sessionmaker[Session],
    client: ShsClient,
    server_id: int,
    fcfg: FetcherConfig,
    opts: FetchOptions,
    todo: list[AppEntry],
    redaction: re.Pattern[str],
    registry: Any,
    result: ServerResult,
    progress: Progress | None,
) -> None:
    threads = opts.threads or fcfg.threads
    pending: dict[Future[AppBundle], AppEntry] = {}
    queue = iter(todo)
    done = 0

    def submit_more(pool: ThreadPoolExecutor) -> None:
        # A bounded number in flight keeps memory flat however many apps are listed.
        while len(pending) < threads * 2:
            entry = next(queue, None)
            if entry is None:
                return
            pending[pool.submit(fetch_app, client, entry, fcfg, redaction)] = entry

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="shs") as pool:
        submit_more(pool)
        while pending:
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in finished:
                entry = pending.pop(fut)
                error: str | None = None
                try:
                    bundle = fut.result()
                except (ShsError, ParseError) as exc:
                    error = str(exc)
                else:
                    error = _load(factory, server_id, bundle, registry)
                done += 1
                if error is None:
                    result.loaded += 1
                    log.info("loaded %s (%s)", entry.app_id, entry.name)
                else:
                    result.failed.append((entry.app_id, error))
                    log.warning("failed %s: %s", entry.app_id, error)
                    _record_failure(factory, server_id, entry, error)
                if progress is not None:
                    progress(done, len(todo), entry.app_id)
            submit_more(pool)


def _load(
    factory: sessionmaker[Session], server_id: int, bundle: AppBundle, registry: Any
) -> str | None:
    """Load (and analyse) one application in one transaction; return an error text or None."""
    try:
        with factory() as session, session.begin():
            app_pk = loader.load_application(session, server_id, bundle)
            # Inputs from the rows in memory rather than read back from what was just written;
            # encoded for re-scoring, and scored here unless analysis is off.
            data = {app_pk: app_data(bundle)}
            store_inputs(session, data)
            store_whatif_input(session, app_pk, bundle)
            if registry is not None:
                score_and_store(session, data, registry)
    except SQLAlchemyError as exc:
        return f"database error: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    return None


def app_data(bundle: AppBundle) -> AppData:
    """The heuristic inputs of a fetched application, from its parsed rows."""
    e = bundle.entry
    known = {(s["stage_id"], s["attempt_id"]) for s in bundle.stages}
    dists = {
        (d["stage_id"], d["attempt_id"]): distribution_input(d["quantiles"], d["metrics"])
        for d in bundle.distributions
    }
    return AppData(
        app_id=e.app_id,
        attempt_id=e.attempt_id,
        name=e.name,
        user=e.user,
        start_time_ms=e.start_time_ms,
        end_time_ms=e.end_time_ms,
        duration_ms=e.duration_ms or 0,
        spark_properties={
            p["name"]: p["value"] or "" for p in bundle.environment if p["section"] == "spark"
        },
        executors=tuple(executor_input(x) for x in bundle.executors),
        jobs=tuple(job_input(j) for j in sorted(bundle.jobs, key=lambda j: j["job_id"])),
        stages=tuple(
            stage_input(s, dists.get((s["stage_id"], s["attempt_id"])))
            for s in sorted(bundle.stages, key=lambda s: (s["stage_id"], s["attempt_id"]))
        ),
        tasks=tuple(
            task_input(t)
            for t in sorted(bundle.tasks, key=lambda t: (t["stage_id"], t["task_id"]))
            if (t["stage_id"], t["stage_attempt_id"]) in known and is_input_task(t)
        ),
    )


def _record_failure(
    factory: sessionmaker[Session], server_id: int, entry: AppEntry, error: str
) -> None:
    try:
        with factory() as session, session.begin():
            count = loader.record_failure(
                session, server_id, entry.app_id, entry.attempt_id, error, entry.last_updated_ms
            )
        log.debug("%s has failed %d time(s)", entry.app_id, count)
    except SQLAlchemyError:
        log.exception("could not record the failure of %s", entry.app_id)
