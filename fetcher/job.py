"""One fetch run of a server: list apps from the watermark -> a thread pool of per-app requests ->
load each application and run the post-load pipeline's per-application steps on it.

HTTP runs in worker threads, one application per worker with all of its calls back to back (the
SHS caches a bounded number of replayed applications). Database writes stay on the main thread as
it consumes finished applications, oldest first: once one is fetched it waits briefly for more
(:func:`_gather`), and those fetched by then are written together in one transaction (a few
statements for all of them, one per table), so an application
is stored complete or not at all, and the watermark (:mod:`fetcher.watermark`) moves in the
transaction of the applications that complete a prefix of the listing. When that transaction
fails, each of its applications is loaded again in a transaction of its own, so that a bad one
fails alone and is recorded. What is derived from the
applications beyond that (predictions, what-if models) is queued by the pipeline in the same
transaction and done by its ``complete`` once the caller has fetched every server.

A database that refuses a write (read-only, full: :class:`~sparkscope.db.StorageFault`) stops the
run there: no later application is asked for or loaded, the run is marked failed if that can
still be written, and the fault goes up to the caller.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from fetcher import loader, watermark
from fetcher.affinity import one_cpu
from fetcher.collector import collector_for_a_crawl
from fetcher.eventlog.source import EventLogSource
from fetcher.listing import FetchPlan, plan
from fetcher.options import FetchOptions, ServerResult
from fetcher.parse.app import AppBundle
from fetcher.parse.entry import AppEntry
from fetcher.parse.fields import ParseError
from fetcher.runs import finish_run
from fetcher.shs.client import ShsClient, ShsError, ShsUnreachable, make_client
from fetcher.shs.request_plan import fetch_app
from fetcher.watermark import Advance
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.db import StorageFault, factory_url, now_ms, storage_fault, storage_faults
from sparkscope.models.fetch import FetchRun
from sparkscope.pipeline.steps import Pipeline

log = logging.getLogger("sparkscope.fetch")

Progress = Callable[[int, int, str], None]

# ------------------------------------------------------------------------------------------ run


def run_server(
    factory: sessionmaker[Session],
    server: ServerConfig,
    fetcher_config: FetcherConfig,
    opts: FetchOptions,
    pipeline: Pipeline | None = None,
    progress: Progress | None = None,
    logs: EventLogSource | None = None,
) -> ServerResult:
    """Fetch new and changed completed applications of one server into the database, each with
    the per-application steps of ``pipeline`` (default: no findings stored, default settings).
    ``logs``: the event-log source of an ``event_logs`` server, when the caller brings its own
    (``ingest --spark`` reads the logs on a cluster).

    The run's ``fetch_run`` row is finished whatever happens (an error, Ctrl-C, a database that
    stopped taking writes, if it can still take that one): only a killed process leaves it
    ``running``, and :func:`close_interrupted_runs` closes it at the next run.
    """
    started = time.perf_counter()
    pipeline = pipeline or Pipeline()
    result = ServerResult(server=server.name)
    if logs is None and server.event_logs:
        logs = EventLogSource(server, fetcher_config)
    client: ShsClient | EventLogSource = logs or make_client(server, fetcher_config)
    redaction = re.compile(fetcher_config.redaction_regex)
    url = factory_url(factory)
    with storage_faults(url), factory() as session, session.begin():
        server_id = loader.ensure_server(session, server.name, server.url)
        run = FetchRun(server_id=server_id, started_at_ms=now_ms(), status="running")
        session.add(run)
        session.flush()
        run_id = run.id
        pipeline.start_run(session)  # once per run, not per application
    crashed: str | None = None
    try:
        # an SHS crawl's threads on one CPU; an event-log read decompresses beside its parse
        keep_one = logs is None and fetcher_config.one_cpu
        with storage_faults(url), collector_for_a_crawl(), one_cpu(keep_one):
            try:
                if logs is not None:
                    todo = FetchPlan(
                        logs.plan(factory, server_id, fetcher_config, opts, result),
                        fetch=logs.fetch,
                        loaded=logs.loaded,
                        failed=logs.failed,
                    )
                else:
                    assert isinstance(client, ShsClient)
                    todo = plan(factory, client, server_id, fetcher_config, opts, result)
            except ShsError as exc:
                result.unreachable = str(exc)
                log.error("%s: cannot list applications: %s", server.name, exc)
                todo = FetchPlan([])
            _fetch_and_load(
                factory,
                client,
                server_id,
                fetcher_config,
                opts,
                todo,
                redaction,
                pipeline,
                result,
                progress,
            )
    except StorageFault as exc:
        crashed = f"stopped: {exc}"[:2000]
        raise
    except BaseException as exc:
        crashed = f"interrupted: {type(exc).__name__}: {exc}"[:2000]
        raise
    finally:
        result.requests, result.bytes = client.requests, client.bytes
        result.seconds = time.perf_counter() - started
        _finish(factory, run_id, result, crashed)
    return result


def _finish(
    factory: sessionmaker[Session], run_id: int, result: ServerResult, crashed: str | None
) -> None:
    """Finish the run's row. When the run is already going up with an error, failing to write
    that too must not hide the error: the row stays ``running`` and the next run closes it."""
    try:
        finish_run(factory, run_id, result, crashed)
    except SQLAlchemyError as exc:
        if crashed is None:
            fault = storage_fault(factory_url(factory), exc)
            if fault is None:
                raise
            raise fault from exc
        log.debug("could not mark the run failed (the next run will)", exc_info=exc)


def _fetch_and_load(
    factory: sessionmaker[Session],
    client: ShsClient | EventLogSource,
    server_id: int,
    fetcher_config: FetcherConfig,
    opts: FetchOptions,
    todo: FetchPlan,
    redaction: re.Pattern[str],
    pipeline: Pipeline,
    result: ServerResult,
    progress: Progress | None,
) -> None:
    """Fetch the planned apps in a thread pool and load each one as it completes, oldest first."""
    threads = opts.threads or fetcher_config.threads
    pending: dict[Future[AppBundle], AppEntry] = {}
    queue = iter(todo.todo)
    frontier = todo.frontier
    marks = watermark.Marks(server_id)
    done = 0

    def submit_more(pool: ThreadPoolExecutor) -> None:
        # A bounded number in flight keeps memory flat however many apps are listed.
        while len(pending) < threads * IN_FLIGHT_PER_THREAD and result.unreachable is None:
            entry = next(queue, None)
            if entry is None:
                return
            fetch: Callable[..., AppBundle] = todo.fetch or fetch_app
            pending[pool.submit(fetch, client, entry, fetcher_config, redaction)] = entry

    def loaded_one(entry: AppEntry, bundle: AppBundle) -> None:
        result.loaded += 1
        log.info("loaded %s (%s)", entry.app_id, entry.name)
        if bundle.sql_error is not None:
            result.partial.append((entry.app_id, f"SQL executions: {bundle.sql_error}"))
            log.warning("loaded %s without its SQL executions: %s", entry.app_id, bundle.sql_error)

    def finished_one(entry: AppEntry, recorded: bool = True) -> None:
        nonlocal done
        done += 1
        if not recorded:
            return  # neither loaded nor recorded: the prefix stays where it is
        if frontier is not None:
            frontier.done(entry.key)
        if progress is not None:
            progress(done, len(todo.todo), entry.app_id)

    def one(entry: AppEntry, fut: Future[AppBundle], error: str | None) -> None:
        """Load (or record the failure of) one application in its own transaction."""
        advance = frontier.advance_if_done(entry.key) if frontier else None
        if error is None:
            error = _load(factory, [fut.result()], pipeline, marks, advance, todo.loaded)
        if error is None:
            loaded_one(entry, fut.result())
        else:
            result.failed.append((entry.app_id, error))
            log.warning("failed %s: %s", entry.app_id, error)
            if not _record_failure(factory, entry, error, marks, advance, todo.failed):
                finished_one(entry, recorded=False)
                return
        finished_one(entry)

    def together(batch: list[tuple[AppEntry, Future[AppBundle]]]) -> None:
        """Load fetched applications, consecutive in plan order, in one transaction; when that
        fails, each one in its own (so that only a bad one fails)."""
        if len(batch) == 1:
            one(*batch[0], None)
        elif batch:
            keys = [entry.key for entry, _ in batch]
            advance = frontier.advance_if_done_many(keys) if frontier else None
            bundles = [fut.result() for _, fut in batch]
            failed = _load(factory, bundles, pipeline, marks, advance, todo.loaded)
            if failed is None:
                # all of them counted as loaded before any progress is reported: an interrupt
                # raised there (Ctrl-C) finds the run's count equal to what was committed
                for entry, fut in batch:
                    loaded_one(entry, fut.result())
                for entry, _ in batch:
                    finished_one(entry)
            else:  # each one on its own: only a bad one fails
                log.debug("%d applications loaded together failed (%s)", len(batch), failed)
                for entry, fut in batch:
                    one(entry, fut, None)
        batch.clear()

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="shs") as pool:
        try:
            submit_more(pool)
            while pending:
                finished = _gather(pending, min(threads * LOADED_PER_THREAD, len(pending)))
                # in plan order (oldest first), not the set's: the watermark advances soonest.
                # The fetched ones are loaded together, up to the first that failed, which is
                # recorded on its own; then the next ones.
                batch: list[tuple[AppEntry, Future[AppBundle]]] = []
                for fut in [f for f in pending if f in finished]:
                    entry = pending.pop(fut)
                    error = _fetch_error(fut, result)
                    if error is None and fut.exception() is None:
                        batch.append((entry, fut))
                        continue
                    together(batch)
                    if error is not None:
                        one(entry, fut, error)
                    # else the server went away: neither loaded nor this app's failure
                together(batch)
                submit_more(pool)
        except BaseException:
            # Stopping (a database that refuses writes, Ctrl-C): nothing more is asked for.
            client.stop("the run stopped")
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    if frontier is not None:
        with factory() as session, session.begin():
            marks.committed(marks.apply(session, frontier.advance_now()))


#: Applications asked for and not yet loaded, per thread of the pool: a bound on the memory the
#: fetched ones hold, whatever the listing's length.
IN_FLIGHT_PER_THREAD = 4
#: Applications the loader waits for to load in one transaction, per thread: half of those in
#: flight, so that the threads fetch the other half meanwhile.
LOADED_PER_THREAD = 2
#: How long the loader waits for more fetched applications to load with those it has.
GATHER_WAIT_S = 1.0


def _gather(pending: Iterable[Future[AppBundle]], want: int) -> set[Future[AppBundle]]:
    """The fetches that have finished: at least one, and up to ``want`` of them when they finish
    within :data:`GATHER_WAIT_S` of the first. Loading several applications in one transaction
    costs less per application than loading each alone (one commit, one statement per table
    for all of them: on PostgreSQL a table's COPY costs about three times a one-row query,
    whatever its rows), and the workers go on fetching meanwhile."""
    finished, running = wait(list(pending), return_when=FIRST_COMPLETED)
    deadline = time.monotonic() + GATHER_WAIT_S
    while len(finished) < want and running:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        more, running = wait(running, timeout=left, return_when=FIRST_COMPLETED)
        finished |= more
    return finished


def _fetch_error(fut: Future[AppBundle], result: ServerResult) -> str | None:
    """Why an app's requests failed (None when they did, or when the server went away)."""
    exc = fut.exception()
    if exc is None:
        return None
    if isinstance(exc, ShsUnreachable):
        if result.unreachable is None:
            result.unreachable = str(exc)
            log.error("the server went away: %s; stopping this run", exc)
        return None
    if isinstance(exc, ShsError | ParseError):
        return str(exc)
    log.debug("unexpected error in one application", exc_info=exc)
    return f"internal error: {type(exc).__name__}: {exc}"[:2000]


def _load(
    factory: sessionmaker[Session],
    bundles: list[AppBundle],
    pipeline: Pipeline,
    marks: watermark.Marks,
    advance: Advance | None,
    loaded: Callable[[Session, int, int, AppBundle], None] | None = None,
) -> str | None:
    """Load applications and run the pipeline's per-application steps on them, all in one
    transaction (with what their source writes beside each), a few statements for all of them;
    return an error text (nothing of them is then stored) or None."""
    server_id = marks.server_id
    try:
        prepared = [pipeline.prepare(bundle) for bundle in bundles]  # in memory, before writing
        with factory() as session, session.begin():
            stored = loader.load_applications(
                session,
                server_id,
                [(b, p.application) for b, p in zip(bundles, prepared, strict=True)],
            )
            if loaded is not None:
                for bundle, one in zip(bundles, stored, strict=True):
                    loaded(session, server_id, one.app_pk, bundle)
            pipeline.after_load(
                session, server_id, list(zip(bundles, stored, prepared, strict=True))
            )
            written = marks.apply(session, advance)
        marks.committed(written)
    except SQLAlchemyError as exc:
        fault = storage_fault(factory_url(factory), exc)
        if fault is not None:
            raise fault from exc  # every later write would fail too: the run stops here
        return f"database error: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    except Exception as exc:  # one app's data must not stop the others (e.g. a value too big)
        ids = ", ".join(b.entry.app_id for b in bundles)
        log.debug("unexpected error loading %s", ids, exc_info=exc)
        return f"internal error: {type(exc).__name__}: {exc}"[:2000]
    return None


def _record_failure(
    factory: sessionmaker[Session],
    entry: AppEntry,
    error: str,
    marks: watermark.Marks,
    advance: Advance | None,
    failed: Callable[[Session, int, AppEntry], None] | None = None,
) -> bool:
    """Record one app's failure (and the watermark it allows); False if that failed too."""
    try:
        with factory() as session, session.begin():
            count = loader.record_failure(
                session,
                marks.server_id,
                entry.app_id,
                entry.attempt_id,
                error,
                entry.last_updated_ms,
            )
            if failed is not None:
                failed(session, marks.server_id, entry)
            written = marks.apply(session, advance)
        marks.committed(written)
        log.debug("%s has failed %d time(s)", entry.app_id, count)
    except SQLAlchemyError as exc:
        fault = storage_fault(factory_url(factory), exc)
        if fault is not None:
            raise fault from exc
        log.exception("could not record the failure of %s", entry.app_id)
        return False
    return True
