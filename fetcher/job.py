"""One fetch run: list apps from the watermark -> thread pool of per-app requests -> load -> analyse.

HTTP runs in worker threads, one application per worker with all of its calls back to back (the
SHS caches a bounded number of replayed applications). Database writes stay on the main thread as
it consumes finished applications, oldest first, each in its own transaction, so an application is
stored complete or not at all, and the watermark (:mod:`fetcher.watermark`) moves in the
transaction of the application that completes a prefix of the listing.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from fetcher import endpoints, loader, watermark
from fetcher.client import ShsClient, ShsError, ShsNotFound, ShsUnreachable, make_client
from fetcher.listing import Plan, list_completed, plan
from fetcher.lock import ADVISORY_LOCK_KEY, FetchLocked, fetch_lock
from fetcher.parse import (
    AppBundle,
    AppEntry,
    ParseError,
    parse_environment,
    parse_executors,
    parse_jobs,
    parse_stage_executors,
    parse_stage_failed_tasks,
    parse_stages,
    parse_task_list,
    parse_task_summary,
)
from fetcher.runs import close_interrupted_runs, finish_run
from fetcher.watermark import Advance
from heuristics.base import AppData
from sparkscope import inputs
from sparkscope.analysis import record_config, score_and_store, store_inputs
from sparkscope.config import FetcherConfig, PredictionConfig, ServerConfig
from sparkscope.db import now_ms
from sparkscope.models import FetchRun
from sparkscope.predictions import refresh_after_fetch, settings_or_default
from sparkscope.whatif import refit_after_fetch
from sparkscope.whatif import store_input as store_whatif_input

__all__ = [
    "ADVISORY_LOCK_KEY",
    "FetchLocked",
    "FetchOptions",
    "ServerResult",
    "close_interrupted_runs",
    "fetch_app",
    "fetch_lock",
    "list_completed",
    "make_client",
    "run_server",
]

log = logging.getLogger("sparkscope.fetch")

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
    backfill: bool = False
    reconcile: bool = False
    #: `predictions:` of the config the fetch was given (None: the default config file's).
    predictions: PredictionConfig | None = None


@dataclass
class ServerResult:
    """The outcome of fetching from one server."""

    server: str
    seen: int = 0
    loaded: int = 0
    #: names of the applications loaded (their recurring keys' what-if models are refitted)
    loaded_names: set[str] = field(default_factory=set)
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    requests: int = 0
    bytes: int = 0
    seconds: float = 0.0
    unreachable: str | None = None
    locked: bool = False


Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------------------------- one app's HTTP


def fetch_app(
    client: ShsClient, entry: AppEntry, fcfg: FetcherConfig, redaction: re.Pattern[str]
) -> AppBundle:
    """All requests for one application, back to back; parsed into an AppBundle."""
    app, att = entry.app_id, entry.attempt_id
    bundle = AppBundle(entry=entry)
    bundle.environment = parse_environment(
        client.get_json(endpoints.environment(app, att)), redaction, fcfg.store_hadoop_properties
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


def run_server(
    factory: sessionmaker[Session],
    server: ServerConfig,
    fcfg: FetcherConfig,
    opts: FetchOptions,
    registry: Any = None,
    progress: Progress | None = None,
) -> ServerResult:
    """Fetch new and changed completed applications of one server into the database.

    The run's ``fetch_run`` row is finished whatever happens (an error, Ctrl-C): only a killed
    process leaves it ``running``, and :func:`close_interrupted_runs` closes it at the next run.
    """
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
    crashed: str | None = None
    try:
        try:
            todo = plan(factory, client, server_id, fcfg, opts, result)
        except ShsError as exc:
            result.unreachable = str(exc)
            log.error("%s: cannot list applications: %s", server.name, exc)
            todo = Plan([])
        _fetch_and_load(
            factory, client, server_id, fcfg, opts, todo, redaction, registry, result, progress
        )
        pcfg = settings_or_default(opts.predictions)
        refresh_after_fetch(factory, server_id, pcfg)
        refit_after_fetch(factory, server_id, sorted(result.loaded_names), pcfg.key_patterns)
    except BaseException as exc:
        crashed = f"interrupted: {type(exc).__name__}: {exc}"[:2000]
        raise
    finally:
        result.requests, result.bytes = client.requests, client.bytes
        result.seconds = time.perf_counter() - started
        finish_run(factory, run_id, result, crashed)
    return result


def _fetch_and_load(
    factory: sessionmaker[Session],
    client: ShsClient,
    server_id: int,
    fcfg: FetcherConfig,
    opts: FetchOptions,
    todo: Plan,
    redaction: re.Pattern[str],
    registry: Any,
    result: ServerResult,
    progress: Progress | None,
) -> None:
    """Fetch the planned apps in a thread pool and load each one as it completes, oldest first."""
    threads = opts.threads or fcfg.threads
    pending: dict[Future[AppBundle], AppEntry] = {}
    queue = iter(todo.todo)
    frontier = todo.frontier
    done = 0

    def submit_more(pool: ThreadPoolExecutor) -> None:
        # A bounded number in flight keeps memory flat however many apps are listed.
        while len(pending) < threads * 2 and result.unreachable is None:
            entry = next(queue, None)
            if entry is None:
                return
            pending[pool.submit(fetch_app, client, entry, fcfg, redaction)] = entry

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="shs") as pool:
        submit_more(pool)
        while pending:
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            # in plan order (oldest first), not the set's: the watermark then advances soonest
            for fut in [f for f in pending if f in finished]:
                entry = pending.pop(fut)
                advance = frontier.advance_if_done(entry.key) if frontier else None
                error = _fetch_error(fut, result)
                if error is None and fut.exception() is None:
                    error = _load(factory, server_id, fut.result(), registry, advance)
                elif error is None:
                    continue  # the server went away: neither loaded nor a failure of this app
                done += 1
                if error is None:
                    result.loaded += 1
                    result.loaded_names.add(entry.name)
                    log.info("loaded %s (%s)", entry.app_id, entry.name)
                else:
                    result.failed.append((entry.app_id, error))
                    log.warning("failed %s: %s", entry.app_id, error)
                    if not _record_failure(factory, server_id, entry, error, advance):
                        continue
                if frontier is not None:
                    frontier.done(entry.key)
                if progress is not None:
                    progress(done, len(todo.todo), entry.app_id)
            submit_more(pool)
    if frontier is not None:
        with factory() as session, session.begin():
            watermark.apply(session, server_id, frontier.advance_now())


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
    server_id: int,
    bundle: AppBundle,
    registry: Any,
    advance: Advance | None,
) -> str | None:
    """Load (and analyse) one application in one transaction; return an error text or None."""
    try:
        with factory() as session, session.begin():

            def derive(app_pk: int) -> None:
                # Inputs from the rows in memory rather than read back from what was just
                # written; encoded for re-scoring, and scored here unless analysis is off.
                data = {app_pk: app_data(bundle)}
                store_inputs(session, data)
                store_whatif_input(session, app_pk, bundle)
                if registry is not None:
                    score_and_store(session, data, registry, just_loaded=True)

            loader.load_application(session, server_id, bundle, derive)
            watermark.apply(session, server_id, advance)
    except SQLAlchemyError as exc:
        return f"database error: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    except Exception as exc:  # one app's data must not stop the others (e.g. a value too big)
        log.debug("unexpected error loading %s", bundle.entry.app_id, exc_info=exc)
        return f"internal error: {type(exc).__name__}: {exc}"[:2000]
    return None


def app_data(bundle: AppBundle) -> AppData:
    """The heuristic inputs of a fetched application, from its parsed rows."""
    e = bundle.entry
    return inputs.assemble(
        {c: getattr(e, c) for c in inputs.APP_COLUMNS},
        bundle.environment,
        bundle.executors,
        bundle.jobs,
        bundle.stages,
        bundle.distributions,
        bundle.tasks,
    )


def _record_failure(
    factory: sessionmaker[Session],
    server_id: int,
    entry: AppEntry,
    error: str,
    advance: Advance | None,
) -> bool:
    """Record one app's failure (and the watermark it allows); False if that failed too."""
    try:
        with factory() as session, session.begin():
            count = loader.record_failure(
                session, server_id, entry.app_id, entry.attempt_id, error, entry.last_updated_ms
            )
            watermark.apply(session, server_id, advance)
        log.debug("%s has failed %d time(s)", entry.app_id, count)
    except SQLAlchemyError:
        log.exception("could not record the failure of %s", entry.app_id)
        return False
    return True
