"""Stored rows -> heuristic inputs -> registry -> stored findings.

The web app calls :func:`ensure_analyzed` when it shows an application: findings computed with the
config now in force are reused; otherwise the application is re-scored and the new findings replace
the old ones in one transaction. ``sparkscope analyze`` and the fetcher use :func:`analyze_all`.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time
import zlib
from array import array
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from multiprocessing import get_context
from multiprocessing.context import BaseContext
from typing import Any, cast

import orjson
from sqlalchemy import Table, bindparam, delete, func, insert, or_, select, text
from sqlalchemy.orm import Session, sessionmaker

from heuristics import Registry, build_registry
from heuristics import base as hb
from heuristics.base import HeuristicResult
from sparkscope import inputs, summary
from sparkscope.config import ConfigError, load_heuristics_mapping
from sparkscope.db import dialect_insert, is_postgres, now_ms
from sparkscope.models import (
    Analysis,
    AnalysisInput,
    AnalysisResult,
    Application,
    EnvironmentProperty,
    Executor,
    HeuristicsConfig,
    Job,
    Stage,
    StageTaskDistribution,
    Task,
)
from sparkscope.resources import core_hours

log = logging.getLogger(__name__)

# Applications per transaction (and per task of a worker process): large enough that the
# statements of a batch cost little per application, small enough to spread over the workers.
BATCH_SIZE = 1000


# ------------------------------------------------------------------------------ heuristics config


def load_heuristics(path: str) -> Registry:
    """Read and validate the heuristics YAML; raise ConfigError naming the file and key."""
    mapping = load_heuristics_mapping(path)
    try:
        return build_registry(mapping)
    except hb.ConfigError as exc:
        raise ConfigError(path, exc.path, exc.message) from None


class HeuristicsState:
    """The heuristics config in force for a long-running process, re-read when the file changes.

    A bad edit never takes effect: the last valid registry stays in force and :meth:`current`
    reports the error, so the page can say so.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._registry: Registry | None = None
        self._error: str | None = None

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def current(self) -> tuple[Registry, str | None]:
        """The registry in force and the error of the file on disk, if it is invalid."""
        stamp = self._file_stamp()
        with self._lock:
            if self._registry is None or stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._registry = load_heuristics(self.path)
                    self._error = None
                except ConfigError as exc:
                    self._error = (
                        f"heuristics config not applied, previous one still in force: {exc}"
                    )
                    log.error("%s", self._error)
                    if self._registry is None:
                        self._registry = build_registry({})
            return self._registry, self._error


# ------------------------------------------------------------------------------------- loading


def _field_names(cls: Any, *, drop: tuple[str, ...] = ()) -> list[str]:
    return [f for f in cls._fields if f not in drop]


def _rows_by_app(
    session: Session,
    model: Any,
    columns: list[str],
    ids: list[int],
    order_by: tuple[Any, ...] = (),
    *where: Any,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(application.id, {column: value}) for the rows of ``model`` under the given applications.

    The dataclasses in heuristics.base name their fields after these columns, so a field list is
    also the column list.
    """
    query = (
        select(model.application_id.label("_app"), *(getattr(model, c).label(c) for c in columns))
        .where(model.application_id.in_(ids), *where)
        .order_by(*order_by)
    )
    for row in session.execute(query).mappings():
        values = dict(row)
        yield values.pop("_app"), values


EXECUTOR_FIELDS = _field_names(hb.ExecutorSummary, drop=("host",))
EXECUTOR_COLUMNS = [*EXECUTOR_FIELDS, "host_port"]
JOB_COLUMNS = _field_names(hb.JobSummary)
STAGE_COLUMNS = _field_names(hb.StageSummary, drop=("distribution",))
TASK_COLUMNS = _field_names(hb.TaskSummary)


# Row (a database row or a fetched row dict, which share column names) -> heuristic input.


def executor_input(row: Mapping[str, Any]) -> hb.ExecutorSummary:
    """An executor row as the heuristics see it."""
    host_port = row.get("host_port")
    host = host_port.rsplit(":", 1)[0] if host_port else None
    return hb.ExecutorSummary(host=host, **{k: row[k] for k in EXECUTOR_FIELDS})


def job_input(row: Mapping[str, Any]) -> hb.JobSummary:
    """A job row as the heuristics see it."""
    values = {k: row[k] for k in JOB_COLUMNS}
    values["name"] = values["name"] or ""
    values["stage_ids"] = tuple(values["stage_ids"] or ())
    return hb.JobSummary(**values)


def distribution_input(
    quantiles: Sequence[float], metrics: Mapping[str, Any]
) -> hb.TaskDistribution:
    """A stage's task quantiles, reduced to the metrics the heuristics read, as float arrays."""
    kept = {}
    for key in hb.DISTRIBUTION_METRICS:
        values = metrics.get(key)
        if values is None:
            continue
        try:
            kept[key] = array("d", values)
        except TypeError:  # a null among the values: the metric is unusable
            continue
    return hb.TaskDistribution(quantiles=tuple(float(q) for q in quantiles), metrics=kept)


def stage_input(row: Mapping[str, Any], dist: hb.TaskDistribution | None) -> hb.StageSummary:
    """A stage attempt row (with its distribution) as the heuristics see it."""
    values = {k: row[k] for k in STAGE_COLUMNS}
    values["name"] = values["name"] or ""
    return hb.StageSummary(distribution=dist, **values)


def task_input(row: Mapping[str, Any]) -> hb.TaskSummary:
    """A task row as the heuristics see it."""
    return hb.TaskSummary(**{k: row[k] for k in TASK_COLUMNS})


def is_input_task(row: Mapping[str, Any]) -> bool:
    """Whether a stored task is a heuristic input: the heuristics read failed attempts (task
    failures) and attempts that spilled (disk spill names the task that spilled most). The same
    rule as the query in :func:`load_app_data`."""
    return str(row["status"]).upper() == "FAILED" or (row["memory_bytes_spilled"] or 0) > 0


def load_app_data(session: Session, application_ids: Sequence[int]) -> dict[int, hb.AppData]:
    """Build the heuristic inputs of several applications with one query per table."""
    ids = list(application_ids)
    if not ids:
        return {}
    apps = session.execute(
        select(
            Application.id,
            Application.app_id,
            Application.attempt_id,
            Application.name,
            Application.spark_user,
            Application.start_time_ms,
            Application.end_time_ms,
            Application.duration_ms,
        ).where(Application.id.in_(ids))
    ).all()
    props: dict[int, dict[str, str]] = defaultdict(dict)
    for app_pk, name, value in session.execute(
        select(
            EnvironmentProperty.application_id, EnvironmentProperty.name, EnvironmentProperty.value
        )
        .where(EnvironmentProperty.application_id.in_(ids))
        .where(EnvironmentProperty.section == "spark")
    ):
        props[app_pk][name] = value if value is not None else ""

    execs: dict[int, list[hb.ExecutorSummary]] = defaultdict(list)
    for app_pk, v in _rows_by_app(session, Executor, EXECUTOR_COLUMNS, ids):
        execs[app_pk].append(executor_input(v))

    jobs: dict[int, list[hb.JobSummary]] = defaultdict(list)
    for app_pk, v in _rows_by_app(session, Job, JOB_COLUMNS, ids, (Job.application_id, Job.job_id)):
        jobs[app_pk].append(job_input(v))

    dists: dict[tuple[int, int, int], hb.TaskDistribution] = {}
    metric_cols = [StageTaskDistribution.metrics[k] for k in hb.DISTRIBUTION_METRICS]
    for dr in session.execute(
        select(
            StageTaskDistribution.application_id,
            StageTaskDistribution.stage_id,
            StageTaskDistribution.attempt_id,
            StageTaskDistribution.quantiles,
            *metric_cols,
        ).where(StageTaskDistribution.application_id.in_(ids))
    ):
        metrics = dict(zip(hb.DISTRIBUTION_METRICS, dr[4:], strict=True))
        dists[(dr[0], dr[1], dr[2])] = distribution_input(dr[3], metrics)

    stages: dict[int, list[hb.StageSummary]] = defaultdict(list)
    order = (Stage.application_id, Stage.stage_id, Stage.attempt_id)
    for app_pk, v in _rows_by_app(session, Stage, STAGE_COLUMNS, ids, order):
        dist = dists.get((app_pk, v["stage_id"], v["attempt_id"]))
        stages[app_pk].append(stage_input(v, dist))

    tasks: dict[int, list[hb.TaskSummary]] = defaultdict(list)
    order = (Task.application_id, Task.stage_id, Task.task_id)
    input_tasks = or_(func.upper(Task.status) == "FAILED", Task.memory_bytes_spilled > 0)
    for app_pk, v in _rows_by_app(session, Task, TASK_COLUMNS, ids, order, input_tasks):
        tasks[app_pk].append(task_input(v))

    return {
        a.id: hb.AppData(
            app_id=a.app_id,
            attempt_id=a.attempt_id or None,
            name=a.name,
            user=a.spark_user,
            start_time_ms=a.start_time_ms,
            end_time_ms=a.end_time_ms,
            duration_ms=a.duration_ms or 0,
            spark_properties=props.get(a.id, {}),
            executors=tuple(execs.get(a.id, ())),
            jobs=tuple(jobs.get(a.id, ())),
            stages=tuple(stages.get(a.id, ())),
            tasks=tuple(tasks.get(a.id, ())),
        )
        for a in apps
    }


# ------------------------------------------------------------------------------------- scoring


def load_inputs(
    session: Session, application_ids: Sequence[int], store: bool = True
) -> dict[int, hb.AppData]:
    """The heuristic inputs of several applications, from their encoded rows where those are
    current, otherwise built from the tables (and, with ``store``, encoded for next time)."""
    ids = list(application_ids)
    if not ids:
        return {}
    data: dict[int, hb.AppData] = {}
    for app_pk, blob in session.execute(
        select(AnalysisInput.application_id, AnalysisInput.data)
        .where(AnalysisInput.application_id.in_(ids))
        .where(AnalysisInput.format == inputs.FORMAT)
    ):
        try:
            data[app_pk] = inputs.decode(blob)
        except (ValueError, EOFError, TypeError, zlib.error) as exc:
            log.warning("encoded inputs of application %s unreadable (%s): rebuilt", app_pk, exc)
    missing = [pk for pk in ids if pk not in data]
    if missing:
        built = load_app_data(session, missing)
        if store:
            store_inputs(session, built)
        data.update(built)
    return data


def store_inputs(session: Session, data: Mapping[int, hb.AppData]) -> None:
    """Write (or replace) the encoded inputs of the given applications."""
    rows = []
    for app_pk, app in data.items():
        try:
            rows.append(
                {"application_id": app_pk, "format": inputs.FORMAT, "data": inputs.encode(app)}
            )
        except ValueError as exc:  # a value marshal cannot hold: stay on the rows path
            log.warning("inputs of application %s not encodable: %s", app_pk, exc)
    if not data:
        return
    session.execute(delete(AnalysisInput).where(AnalysisInput.application_id.in_(list(data))))
    if rows:
        session.execute(insert(cast(Table, AnalysisInput.__table__)), rows)


def _stored_documents(session: Session, application_ids: Sequence[int]) -> dict[int, str]:
    return {
        pk: doc
        for pk, doc in session.execute(
            select(Analysis.application_id, Analysis.results).where(
                Analysis.application_id.in_(list(application_ids))
            )
        )
    }


def _store(
    session: Session,
    scored: dict[int, list[dict[str, Any]]],
    stored: dict[int, str],
    fingerprint: str,
    core: dict[int, tuple[float, float]],
) -> None:
    """Write the results of a batch: each application's document (and its finding rows) where it
    differs from the stored one, and every application's fingerprint, severity and core-hours.

    Most documents are unchanged by a re-score (a threshold edit moves few applications across a
    boundary, and stored results leave the thresholds out), and reading a document back costs a
    fraction of rewriting it.
    """
    before = summary.read(session, list(scored))
    documents = {pk: orjson.dumps(results).decode() for pk, results in scored.items()}
    changed = [pk for pk, doc in documents.items() if stored.get(pk) != doc]
    if changed:
        session.execute(delete(AnalysisResult).where(AnalysisResult.application_id.in_(changed)))
        _write_documents(session, {pk: documents[pk] for pk in changed}, now_ms())
        findings = [
            {
                "application_id": pk,
                "heuristic": r["name"],
                "severity": r["severity"],
                "value": r["value"],
                "title": r["title"],
                "impact_core_hours": (r["impact"] or {}).get("core_hours"),
                "impact_wall_seconds": (r["impact"] or {}).get("wall_seconds"),
            }
            for pk in changed
            for r in scored[pk]
            if r["severity"] > hb.Severity.NONE
        ]
        if findings:
            session.execute(insert(cast(Table, AnalysisResult.__table__)), findings)
    _update_applications(
        session,
        [
            (pk, max((r["severity"] for r in results), default=0), *core[pk])
            for pk, results in scored.items()
        ],
        fingerprint,
    )
    summary.apply(session, before, summary.read(session, list(scored)))


def _write_documents(session: Session, documents: dict[int, str], at: int) -> None:
    """Insert or replace result documents. An update rather than a delete and insert keeps the
    row, so PostgreSQL can rewrite it in place without touching the index."""
    if is_postgres(session):
        # One statement for the batch: with ON CONFLICT, psycopg2 would get one per row.
        session.execute(
            text(
                "INSERT INTO analysis (application_id, analyzed_at_ms, results) "
                "SELECT v.id, :at, v.doc FROM unnest(CAST(:pks AS integer[]), "
                "CAST(:docs AS text[])) AS v(id, doc) "
                "ON CONFLICT (application_id) DO UPDATE "
                "SET results = excluded.results, analyzed_at_ms = excluded.analyzed_at_ms"
            ),
            {"at": at, "pks": list(documents), "docs": list(documents.values())},
        )
        return
    upsert = dialect_insert(session, cast(Table, Analysis.__table__))
    upsert = upsert.on_conflict_do_update(
        index_elements=["application_id"],
        set_={"results": upsert.excluded.results, "analyzed_at_ms": upsert.excluded.analyzed_at_ms},
    )
    session.execute(
        upsert,
        [
            {"application_id": pk, "analyzed_at_ms": at, "results": doc}
            for pk, doc in documents.items()
        ],
    )


def _update_applications(
    session: Session, rows: list[tuple[int, int, float | None, float | None]], fingerprint: str
) -> None:
    """Set (worst severity, allocated and wasted core-hours) and the fingerprint per application."""
    if is_postgres(session):
        # One statement for the batch (psycopg2's executemany would send one per application),
        # touching only the rows that change.
        pks, worst, alloc, waste = (list(col) for col in zip(*rows, strict=True))
        session.execute(
            text(
                "UPDATE application AS a SET worst_severity = v.worst, "
                "analysis_fingerprint = :fp, allocated_core_hours = v.alloc, "
                "wasted_core_hours = v.waste "
                "FROM unnest(CAST(:pks AS integer[]), CAST(:worst AS integer[]), "
                "CAST(:alloc AS double precision[]), CAST(:waste AS double precision[])) "
                "AS v(id, worst, alloc, waste) WHERE a.id = v.id AND ("
                "a.analysis_fingerprint IS DISTINCT FROM :fp "
                "OR a.worst_severity IS DISTINCT FROM v.worst "
                "OR a.allocated_core_hours IS DISTINCT FROM v.alloc "
                "OR a.wasted_core_hours IS DISTINCT FROM v.waste)"
            ),
            {"fp": fingerprint, "pks": pks, "worst": worst, "alloc": alloc, "waste": waste},
        )
        return
    table = cast(Table, Application.__table__)
    session.execute(
        table.update()
        .where(table.c.id == bindparam("b_pk"))
        .values(
            worst_severity=bindparam("b_worst"),
            analysis_fingerprint=fingerprint,
            allocated_core_hours=bindparam("b_alloc"),
            wasted_core_hours=bindparam("b_waste"),
        ),
        [
            {"b_pk": pk, "b_worst": worst, "b_alloc": alloc, "b_waste": waste}
            for pk, worst, alloc, waste in rows
        ],
    )


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
    session: Session, data: Mapping[int, hb.AppData], registry: Registry, reuse: bool = False
) -> None:
    """Score already-built inputs (application.id -> AppData) and replace their findings (the
    caller records the config with :func:`record_config`).

    With ``reuse``, a heuristic whose params are the same as under the config an application was
    last scored with keeps its stored result instead of running again.
    """
    if not data:
        return
    ids = list(data)
    stored = _stored_documents(session, ids)
    digests = registry.digests
    previous = _previous_digests(session, ids) if reuse else {}
    scored: dict[int, list[dict[str, Any]]] = {}
    for pk, app in data.items():
        kept: dict[str, dict[str, Any]] = {}
        before = previous.get(pk)
        if before and pk in stored:
            kept = {
                r["name"]: r
                for r in _parse_document(stored[pk]) or ()
                if before.get(r["name"], "-") == digests.get(r["name"])
            }
        scored[pk] = [
            kept.get(entry.name) or registry.run_one(entry, app).to_dict(thresholds=False)
            for entry in registry.enabled
        ]
    core = {pk: core_hours(app) for pk, app in data.items()}
    _store(session, scored, stored, registry.fingerprint, core)


def record_config(session: Session, registry: Registry) -> None:
    """Keep the digests of a config results are computed under (a no-op once recorded).

    Callers of :func:`score_and_store` record it once per run, not per application; results
    stored under an unrecorded config are only never reused (every heuristic runs again).
    """
    stmt = dialect_insert(session, cast(Table, HeuristicsConfig.__table__)).values(
        fingerprint=registry.fingerprint,
        digests=orjson.dumps(registry.digests).decode(),
        config=orjson.dumps(registry.effective_config(), default=str).decode(),
        first_used_at_ms=now_ms(),
    )
    session.execute(stmt.on_conflict_do_nothing(index_elements=["fingerprint"]))


def _previous_digests(session: Session, ids: list[int]) -> dict[int, dict[str, str]]:
    """Per application, the digests of the config its stored results were computed under."""
    fingerprints = {
        pk: fp
        for pk, fp in session.execute(
            select(Application.id, Application.analysis_fingerprint).where(Application.id.in_(ids))
        )
        if fp
    }
    if not fingerprints:
        return {}
    configs = {
        fp: orjson.loads(digests)
        for fp, digests in session.execute(
            select(HeuristicsConfig.fingerprint, HeuristicsConfig.digests).where(
                HeuristicsConfig.fingerprint.in_(set(fingerprints.values()))
            )
        )
    }
    return {pk: configs[fp] for pk, fp in fingerprints.items() if fp in configs}


def _parse_document(document: str) -> list[dict[str, Any]] | None:
    """The results in a stored document, or None when it is not what _store writes."""
    try:
        results = orjson.loads(document)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(results, list) or not all(
        isinstance(r, dict) and isinstance(r.get("name"), str) for r in results
    ):
        return None
    return results


def stored_results(
    session: Session, application_id: int, registry: Registry
) -> list[HeuristicResult] | None:
    """The stored results of one application (NONE ones included), worst first; None when its
    stored document is unreadable.

    Only for results computed under ``registry`` (``application.analysis_fingerprint`` equal to
    its fingerprint): the thresholds each result shows are that registry's params.
    """
    document = session.scalar(
        select(Analysis.results).where(Analysis.application_id == application_id)
    )
    parsed = _parse_document(document) if document is not None else []
    if parsed is None:
        return None
    results = []
    for data in parsed:
        try:
            params = hb.params_view(registry.params(data["name"]))
        except KeyError:  # a heuristic this version no longer has
            params = None
        try:
            results.append(HeuristicResult.from_dict(data, params))
        except (KeyError, TypeError, ValueError):
            return None
    results.sort(key=lambda r: (-int(r.severity), r.name))
    return results


def ensure_analyzed(
    session: Session, application_id: int, registry: Registry
) -> list[HeuristicResult]:
    """Findings of one application under the config in force, re-scoring (and committing) if
    stale or if the stored results are unreadable."""
    fingerprint = session.scalar(
        select(Application.analysis_fingerprint).where(Application.id == application_id)
    )
    if fingerprint == registry.fingerprint:
        results = stored_results(session, application_id, registry)
        if results is not None:
            return results
        log.warning("stored results of application %s unreadable: re-scored", application_id)
    analyze_apps(session, [application_id], registry, reuse=True)
    session.commit()
    return stored_results(session, application_id, registry) or []


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
    with _gc_paused(), factory() as session, session.begin():
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
