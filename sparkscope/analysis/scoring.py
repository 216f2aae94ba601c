"""Heuristic inputs -> registry -> stored results, for one application or all of them.

The web app calls :func:`ensure_analyzed` when it shows an application: findings computed with the
config now in force are read back; otherwise the application is scored in memory for the page and
nothing is written (a GET never writes). ``sparkscope analyze`` and the fetcher use :func:`analyze_all` /
:func:`score_and_store`. Inputs come from :mod:`sparkscope.analysis.inputs`, the stored form is
:mod:`sparkscope.analysis.results`, the config in force :mod:`sparkscope.analysis.heuristics_config`.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from multiprocessing import get_context
from multiprocessing.context import BaseContext
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from heuristics.appdata import AppData
from heuristics.registry import Registry, build_registry
from heuristics.result import HeuristicResult
from sparkscope.accounting.resources import core_hours
from sparkscope.analysis.inputs import load_inputs
from sparkscope.analysis.results import (
    impact_of,
    parse_document,
    previous_digests,
    record_config,
    results_from_dicts,
    store_documents,
    stored_documents,
    stored_results,
)
from sparkscope.db import storage_faults
from sparkscope.models.application import Application

log = logging.getLogger(__name__)

# Applications per transaction (and per task of a worker process): large enough that the
# statements of a batch cost little per application, small enough to spread over the workers.
BATCH_SIZE = 1000


def analyze_apps(
    session: Session, application_ids: Sequence[int], registry: Registry, reuse: bool = True
) -> None:
    """Score the given applications and replace their findings (the caller commits).

    With ``reuse``, a heuristic whose params are unchanged since an application's stored results
    is not run again: its stored result is kept (see :attr:`Registry.digests`).
    """
    record_config(session, registry)
    score_and_store(session, load_inputs(session, application_ids), registry, reuse=reuse)


def score_and_store(
    session: Session,
    data: Mapping[int, AppData],
    registry: Registry,
    reuse: bool = False,
) -> None:
    """Score already-built inputs (application.id -> AppData) and replace their findings (the
    caller records the config with :func:`record_config`).

    With ``reuse``, a heuristic whose params are the same as under the config an application was
    last scored with keeps its stored result instead of running again.
    """
    if not data:
        return
    ids = list(data)
    stored = stored_documents(session, ids)
    digests = registry.digests
    previous = previous_digests(session, ids) if reuse else {}
    scored: dict[int, list[dict[str, Any]]] = {}
    for pk, app in data.items():
        scored[pk] = _score(registry, digests, app, stored.get(pk), previous.get(pk))
    core = {pk: core_hours(app) for pk, app in data.items()}
    store_documents(session, scored, stored, registry.fingerprint, core)


@dataclass(frozen=True)
class Scored:
    """The results of one application scored in memory, as :func:`score_and_store` stores them."""

    results: list[dict[str, Any]]
    #: the ``analysis`` document (the results as JSON)
    document: str
    #: the application row's columns that come from them (and the config's fingerprint)
    columns: dict[str, Any]


def score_new(app: AppData, registry: Registry) -> Scored:
    """Score an application that has no stored results (fetch time, before it is written): every
    enabled heuristic runs."""
    results = _score(registry, registry.digests, app, None, None)
    allocated, wasted = core_hours(app)
    columns = {
        "worst_severity": max((r["severity"] for r in results), default=0),
        "analysis_fingerprint": registry.fingerprint,
        "allocated_core_hours": allocated,
        "wasted_core_hours": wasted,
        "impact_core_hours": impact_of(results),
    }
    return Scored(results, orjson.dumps(results).decode(), columns)


def _score(
    registry: Registry,
    digests: Mapping[str, str],
    app: AppData,
    document: str | None,
    before: Mapping[str, str] | None,
) -> list[dict[str, Any]]:
    """One application's results as stored: a heuristic whose params digest is the same as under
    the config of the stored ``document`` (``before``) keeps its stored result; the others run."""
    if not before or document is None:  # nothing stored to keep (every fetched application)
        return [registry.run_stored(entry, app) for entry in registry.enabled]
    kept = {
        r["name"]: r
        for r in parse_document(document) or ()
        if before.get(r["name"], "-") == digests.get(r["name"])
    }
    return [kept.get(entry.name) or registry.run_stored(entry, app) for entry in registry.enabled]


def ensure_analyzed(
    session: Session, application_id: int, registry: Registry
) -> list[HeuristicResult]:
    """Findings of one application under the config in force, read-only: the stored ones when
    they are current and readable, otherwise scored in memory and not stored (``sparkscope
    analyze`` or the next fetch store them)."""
    fingerprint = session.scalar(
        select(Application.analysis_fingerprint).where(Application.id == application_id)
    )
    if fingerprint == registry.fingerprint:
        results = stored_results(session, application_id, registry)
        if results is not None:
            return results
        log.warning("stored results of application %s unreadable: scored again", application_id)
    return score_in_memory(session, application_id, registry)


def score_in_memory(
    session: Session, application_id: int, registry: Registry
) -> list[HeuristicResult]:
    """What :func:`analyze_apps` would store for one application, computed without writing:
    heuristics whose params are unchanged since its stored results keep them, as there."""
    data = load_inputs(session, [application_id], store=False).get(application_id)
    if data is None:
        return []
    ids = [application_id]
    document = stored_documents(session, ids).get(application_id)
    before = previous_digests(session, ids).get(application_id)
    scored = _score(registry, registry.digests, data, document, before)
    return results_from_dicts(scored, registry) or []


@dataclass(frozen=True)
class AnalyzeStats:
    """What a bulk re-score did."""

    analysed: int
    skipped: int
    seconds: float


def analyze_all(
    factory: sessionmaker[Session],
    registry: Registry,
    app_ids: Sequence[str] | None = None,
    force: bool = False,
    batch_size: int = BATCH_SIZE,
    workers: int = 1,
) -> AnalyzeStats:
    """Re-score stored applications in batches, one transaction per batch.

    Without ``force``, only applications scored under another config are re-scored, and in each
    only the heuristics whose params changed run again; with it, every heuristic runs on every
    application.

    With ``workers`` > 1 the batches are spread over that many processes (scoring is CPU-bound
    Python, so threads would not help); each process opens its own database connection.
    """
    started = time.perf_counter()
    with factory() as session:
        query = select(Application.id, Application.analysis_fingerprint)
        if app_ids:
            query = query.where(Application.app_id.in_(list(app_ids)))
        rows = session.execute(query.order_by(Application.id)).all()
    todo = [pk for pk, fp in rows if force or fp != registry.fingerprint]
    batches = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
    if workers > 1 and len(batches) > 1:
        bind = factory.kw["bind"]
        url = bind.url.render_as_string(hide_password=False)
        config = registry.effective_config()
        with ProcessPoolExecutor(max_workers=workers, mp_context=_worker_context(bind)) as pool:
            for _ in pool.map(
                _analyze_batch_in_worker, repeat(url), repeat(config), repeat(not force), batches
            ):
                pass
    else:
        for batch in batches:
            with _gc_paused(), factory() as session, session.begin():
                analyze_apps(session, batch, registry, reuse=not force)
    return AnalyzeStats(len(todo), len(rows) - len(todo), time.perf_counter() - started)


def _worker_context(engine: Any) -> BaseContext:
    """Fork where it is safe (Linux, no other thread running): workers start at once with
    everything imported, instead of spending about a second each importing it again. The
    caller's pooled connections are closed first, so that no child inherits a live one."""
    if sys.platform == "linux" and threading.active_count() == 1:
        engine.dispose()
        return get_context("fork")
    return get_context("spawn")


_WORKER: dict[str, tuple[sessionmaker[Session], Registry]] = {}


def _analyze_batch_in_worker(url: str, config: dict[str, Any], reuse: bool, ids: list[int]) -> None:
    """One batch in a worker process, which keeps its engine and registry between batches."""
    state = _WORKER.get(url)
    if state is None:
        from sparkscope.db import make_engine, make_sessionmaker

        state = (make_sessionmaker(make_engine(url)), build_registry(config))
        _WORKER[url] = state
    factory, registry = state
    # A storage fault goes back to the parent as one line (a driver error may not survive
    # pickling with what tells it apart).
    with storage_faults(url), _gc_paused(), factory() as session, session.begin():
        analyze_apps(session, ids, registry, reuse=reuse)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one batch.

    Scoring a batch allocates a few hundred thousand small objects that reference counting frees
    (inputs and results hold no cycles); the collector's passes over them find nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
