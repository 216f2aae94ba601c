"""The post-load pipeline, declared in one place and run by ``fetch`` and ``analyze`` alike.

After the loader has written an application's rows, in the same transaction:

1. ``inputs`` -- the application's heuristic inputs, encoded (re-scoring reads them back);
2. ``score`` -- the heuristics' findings (skipped by ``fetch --no-analyze``; the page then scores
   in memory and ``analyze`` stores them);
3. ``whatif_input`` -- the run's what-if input, encoded;
4. ``day_summary`` -- the application's contribution to the fleet's per-day summary;
5. the queued steps below are put on the ledger for the application's server and key.

Then, once per run, from the ledger (each unit in its own transaction, which also takes it off
the ledger; a unit that fails stays queued and is retried by the next run):

6. ``predictions`` -- expected duration, verdict and forecast of the server's recurring runs;
7. ``whatif`` -- the what-if calibration of each queued recurring key, and the server's prior.

All work comes from what is passed in (rows in memory, the registry, the configuration): nothing
here reads a configuration file or calls a server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from heuristics.appdata import AppData
from heuristics.registry import Registry
from sparkscope.accounting import day_summary
from sparkscope.advisor.predict.features import recurring_key
from sparkscope.analysis.codec import APP_COLUMNS
from sparkscope.analysis.inputs import assemble, sql_input, store_inputs
from sparkscope.analysis.results import record_config
from sparkscope.analysis.scoring import score_and_store
from sparkscope.config.loader import PredictionConfig
from sparkscope.pipeline import ledger
from sparkscope.prediction.refresh import refresh_session
from sparkscope.whatif.calibration import refit_keys, store_input

log = logging.getLogger("sparkscope.pipeline")

Rows = list[dict[str, Any]]


class LoadedEntry(Protocol):
    """The listing facts of a loaded application (the fetcher's listing entry), read-only."""

    @property
    def app_id(self) -> str: ...
    @property
    def attempt_id(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def user(self) -> str | None: ...
    @property
    def start_time_ms(self) -> int | None: ...
    @property
    def end_time_ms(self) -> int | None: ...
    @property
    def duration_ms(self) -> int | None: ...
    @property
    def spark_version(self) -> str | None: ...
    @property
    def completed(self) -> bool: ...


class LoadedRows(Protocol):
    """One loaded application's rows as the loader wrote them, per table."""

    @property
    def entry(self) -> LoadedEntry: ...

    environment: Rows
    executors: Rows
    jobs: Rows
    stages: Rows
    distributions: Rows
    tasks: Rows
    sql_fetch: Rows
    sql_executions: Rows
    sql_nodes: Rows
    sql_stages: Rows


def app_data(rows: LoadedRows) -> AppData:
    """The heuristic inputs of a loaded application, from its rows in memory."""
    e = rows.entry
    return assemble(
        {c: getattr(e, c) for c in APP_COLUMNS},
        rows.environment,
        rows.executors,
        rows.jobs,
        rows.stages,
        rows.distributions,
        rows.tasks,
        sql_input(rows.sql_fetch, rows.sql_executions, rows.sql_nodes, rows.sql_stages),
    )


@dataclass(frozen=True)
class QueuedStep:
    """A step run from the ledger: ``run(pipeline, session, server_id, subjects)``."""

    name: str
    run: Callable[[Pipeline, Session, int, Sequence[str]], None]
    #: the subject an application queues: '' (the whole server) or its recurring key
    subject: Callable[[Pipeline, str], str]


def _predict(p: Pipeline, session: Session, server_id: int, subjects: Sequence[str]) -> None:
    refresh_session(session, server_id, p.predictions)


def _refit_whatif(p: Pipeline, session: Session, server_id: int, subjects: Sequence[str]) -> None:
    keys = set(subjects)
    if "" in keys:  # every key of the server (queued by an upgrade, or `analyze --force`)
        from sqlalchemy import select

        from sparkscope.models.application import Application

        names = session.scalars(
            select(Application.name).where(Application.server_id == server_id).distinct()
        )
        keys = {recurring_key(n, p.predictions.key_patterns) for n in names}
    refit_keys(session, server_id, keys, p.predictions.key_patterns)


QUEUED: tuple[QueuedStep, ...] = (
    QueuedStep("predictions", _predict, lambda p, name: ""),
    QueuedStep(
        "whatif", _refit_whatif, lambda p, name: recurring_key(name, p.predictions.key_patterns)
    ),
)


@dataclass
class Completed:
    """What one pass over the ledger did: units done per step, and the units that failed."""

    done: dict[str, int] = field(default_factory=dict)
    failed: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Pipeline:
    """The post-load pipeline with what it needs: the heuristics registry (None: findings are not
    stored at load time) and the prediction settings of the configuration in force."""

    registry: Registry | None = None
    predictions: PredictionConfig = field(default_factory=PredictionConfig)
    #: the queued steps, in order (a plugin or a test may add its own)
    queued: tuple[QueuedStep, ...] = QUEUED

    def start_run(self, session: Session) -> None:
        """Once per run, before its applications: record the heuristics config scored under."""
        if self.registry is not None:
            record_config(session, self.registry)

    def after_load(
        self,
        session: Session,
        server_id: int,
        app_pk: int,
        rows: LoadedRows,
        replaced: Mapping[Any, Any],
    ) -> None:
        """Steps 1-5 for one application, in the caller's (the load's) transaction; ``replaced``
        is the day-summary contribution of the version the load replaced (empty if new)."""
        data = {app_pk: app_data(rows)}
        store_inputs(session, data)
        if self.registry is not None:
            score_and_store(session, data, self.registry, just_loaded=True)
        store_input(session, app_pk, rows)
        day_summary.apply(session, replaced, day_summary.read(session, [app_pk]))
        name = rows.entry.name
        ledger.enqueue(session, [(s.name, server_id, s.subject(self, name)) for s in self.queued])

    def complete(
        self, factory: sessionmaker[Session], server_ids: Sequence[int] | None = None
    ) -> Completed:
        """Steps 6-7: everything on the ledger (of the given servers, else of all), step by
        step; each unit in its own transaction, a failed one recorded and left queued."""
        result = Completed()
        steps = {s.name: s for s in self.queued}
        with factory() as session:
            todo = ledger.pending(session, list(steps), server_ids)
        for unit in todo:
            step = steps[unit.step]
            try:
                with factory() as session, session.begin():
                    step.run(self, session, unit.server_id, unit.subjects)
                    ledger.done(session, unit.step, unit.server_id, unit.subjects)
            except Exception as exc:  # derived work must not stop the others; it stays queued
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                log.warning(
                    "%s of server %s not done (attempt %d, retried by the next run): %s",
                    unit.step,
                    unit.server_id,
                    unit.attempts + 1,
                    error[:300],
                )
                log.debug("pipeline step failed", exc_info=exc)
                with factory() as session, session.begin():
                    ledger.failed(session, unit.step, unit.server_id, unit.subjects, error)
                result.failed.append((unit.step, unit.server_id, error))
                continue
            result.done[unit.step] = result.done.get(unit.step, 0) + len(unit.subjects)
        return result

    def queue_all(self, factory: sessionmaker[Session], steps: Sequence[str] | None = None) -> None:
        """Queue the given steps (default: all) for the whole of every server with applications."""
        from sqlalchemy import select

        from sparkscope.models.application import Application

        chosen = [s.name for s in self.queued if steps is None or s.name in steps]
        with factory() as session, session.begin():
            servers = session.scalars(select(Application.server_id).distinct()).all()
            ledger.enqueue(session, [(step, sid, "") for sid in servers for step in chosen])
