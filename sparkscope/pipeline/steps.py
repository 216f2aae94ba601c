"""The post-load pipeline, declared in one place and run by ``fetch`` and ``analyze`` alike.

For each fetched application, first in memory (:meth:`Pipeline.prepare`, before anything is
written: the application row takes its findings' columns from it), then, once the loader has
written the application's rows, in the same transaction (:meth:`Pipeline.after_load`, for the
applications loaded together):

1. ``inputs`` -- the application's heuristic inputs, encoded (re-scoring reads them back);
2. ``score`` -- the heuristics' findings (skipped by ``fetch --no-analyze``; the page then scores
   in memory and ``analyze`` stores them);
3. ``whatif_input`` -- the run's what-if input, encoded;
4. ``day_summary`` -- the application's contribution to the fleet's per-day summary, taken from
   the row and findings as written (not read back), less that of the version it replaced;
5. the queued steps below are put on the ledger for the application's server and key.

Then, once per run, from the ledger (each unit in its own transaction, which also takes it off
the ledger; a unit that fails stays queued and is retried by the next run):

6. ``predictions`` -- expected duration, verdict and forecast of the server's recurring runs
   (every run again when :data:`FULL` is queued: ``analyze --force``);
7. ``whatif`` -- the what-if calibration of each queued recurring key, and the server's prior;
8. ``alerts`` -- the notification rules evaluated on each newly loaded application (its findings,
   its verdict from step 6, failure, cost, duration and forecast), the messages they decide
   written to the outbox (``sparkscope notify`` sends them). It waits while the server's
   predictions are queued and have failed fewer than :data:`ALERTS_WAIT_ATTEMPTS` times.

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
from sparkscope.analysis.assembly import assemble, sql_input
from sparkscope.analysis.codec import APP_COLUMNS
from sparkscope.analysis.inputs import encode_or_none, insert_encoded
from sparkscope.analysis.results import flagged, insert_loaded, record_config
from sparkscope.analysis.scoring import Scored, score_new
from sparkscope.config.loader import PredictionConfig, PriceConfig
from sparkscope.config.notifications.model import NotificationSettings
from sparkscope.db import factory_url, storage_fault
from sparkscope.notify.alerts import app_subject, decide_alerts
from sparkscope.notify.occurrences import Context
from sparkscope.pipeline import ledger
from sparkscope.prediction.refresh import refresh_session
from sparkscope.whatif.calibration import encode_input, refit_keys, store_inputs

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


class StoredApplication(Protocol):
    """What the loader wrote of one application."""

    @property
    def app_pk(self) -> int: ...
    @property
    def row(self) -> Mapping[str, Any]:
        """The application row as stored (its day-summary columns included)."""

    @property
    def replaced(self) -> Mapping[Any, Any]:
        """The day-summary contribution of the version it replaced (empty for a new one)."""


@dataclass(frozen=True)
class Prepared:
    """The per-application steps' work done in memory, before the application is written."""

    data: AppData
    #: the encoded heuristic inputs (None: a value cannot be encoded)
    inputs: bytes | None
    #: the findings (None: not stored at load time)
    scored: Scored | None
    whatif: bytes

    @property
    def application(self) -> dict[str, Any]:
        """The application row's analysis columns: worst severity and the heuristics config's
        fingerprint (None when not scored), and its core-hours when scored."""
        if self.scored is None:
            return {"worst_severity": None, "analysis_fingerprint": None, "impact_core_hours": None}
        return self.scored.columns


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
    """A step run from the ledger: ``run(pipeline, session, server_id, subjects)`` returns how
    many things (runs predicted, keys fitted) it computed, or None."""

    name: str
    run: Callable[[Pipeline, Session, int, Sequence[str]], int | None]
    #: the subject an application queues: '' (the whole server), its recurring key, or the
    #: application itself
    subject: Callable[[Pipeline, LoadedEntry], str]
    #: whether a loaded application queues this step under the pipeline's settings
    wanted: Callable[[Pipeline], bool] = lambda p: True


#: The predictions subject that asks for every run of the server to be predicted again.
FULL = "*all runs*"


def _predict(p: Pipeline, session: Session, server_id: int, subjects: Sequence[str]) -> int:
    return refresh_session(session, server_id, p.predictions, full=FULL in subjects).runs


def _refit_whatif(p: Pipeline, session: Session, server_id: int, subjects: Sequence[str]) -> int:
    keys = set(subjects)
    if "" in keys:  # every key of the server (queued by an upgrade, or `analyze --force`)
        from sqlalchemy import select

        from sparkscope.models.application import Application

        names = session.scalars(
            select(Application.name).where(Application.server_id == server_id).distinct()
        )
        keys = {recurring_key(n, p.predictions.key_patterns) for n in names}
    return refit_keys(session, server_id, keys, p.predictions.key_patterns)


#: Failed attempts of a server's queued predictions after which its alerts go ahead without
#: the verdicts they would bring.
ALERTS_WAIT_ATTEMPTS = 3


class WaitingForPredictions(Exception):
    """The alerts of a server wait for its predictions (their regression verdicts)."""


def _alerts(p: Pipeline, session: Session, server_id: int, subjects: Sequence[str]) -> None:
    if p.notifications is None:
        return
    waiting = [
        u for u in ledger.pending(session, ["predictions"], [server_id])
        if u.attempts < ALERTS_WAIT_ATTEMPTS
    ]  # fmt: skip
    if waiting:
        raise WaitingForPredictions("waiting for this server's predictions")
    ctx = Context(
        base_url=p.notifications.base_url,
        key_patterns=p.predictions.key_patterns,
        min_history=p.predictions.min_history,
        core_hour_price=p.prices.core_hour,
        currency=p.prices.currency,
    )
    decide_alerts(session, server_id, subjects, p.notifications, ctx)


QUEUED: tuple[QueuedStep, ...] = (
    QueuedStep("predictions", _predict, lambda p, entry: ""),
    QueuedStep(
        "whatif",
        _refit_whatif,
        lambda p, entry: recurring_key(entry.name, p.predictions.key_patterns),
    ),
    QueuedStep(
        "alerts",
        _alerts,
        lambda p, entry: app_subject(entry.app_id, entry.attempt_id),
        lambda p: p.notifications is not None,  # no notifications: nothing to decide
    ),
)


@dataclass
class Completed:
    """What one pass over the ledger did: units done and things computed per step, and the
    units that failed."""

    done: dict[str, int] = field(default_factory=dict)
    failed: list[tuple[str, int, str]] = field(default_factory=list)
    computed: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Pipeline:
    """The post-load pipeline with what it needs: the heuristics registry (None: findings are not
    stored at load time), the prediction settings, the notification settings (None: no alerts)
    and the prices of the configuration in force."""

    registry: Registry | None = None
    predictions: PredictionConfig = field(default_factory=PredictionConfig)
    notifications: NotificationSettings | None = None
    prices: PriceConfig = field(default_factory=PriceConfig)
    #: the queued steps, in order (a plugin or a test may add its own)
    queued: tuple[QueuedStep, ...] = QUEUED

    def start_run(self, session: Session) -> None:
        """Once per run, before its applications: record the heuristics config scored under."""
        if self.registry is not None:
            record_config(session, self.registry)

    def prepare(self, rows: LoadedRows) -> Prepared:
        """Steps 1-3 of one fetched application in memory (no database): its inputs, encoded;
        its findings; its what-if input, encoded."""
        data = app_data(rows)
        scored = score_new(data, self.registry) if self.registry is not None else None
        inputs = encode_or_none(None, data)
        return Prepared(data, inputs, scored, encode_input(rows, data.spark_properties))

    def after_load(
        self,
        session: Session,
        server_id: int,
        loaded: Sequence[tuple[LoadedRows, StoredApplication, Prepared]],
    ) -> None:
        """Steps 1-5 for applications loaded together, in the caller's (the load's) transaction,
        once the loader has written them (each row holding its ``prepared.application``) and
        removed what the versions they replaced had of these: one statement per step for all
        of them."""
        inputs: list[tuple[int, bytes]] = []
        scored: list[tuple[int, list[dict[str, Any]], str]] = []
        whatif: list[tuple[int, bytes]] = []
        before: dict[day_summary.Key, list[float]] = {}
        now: dict[day_summary.Key, list[float]] = {}
        work: list[ledger.Work] = []
        for rows, stored, prepared in loaded:
            app_pk = stored.app_pk
            if prepared.inputs is not None:
                inputs.append((app_pk, prepared.inputs))
            flagged_heuristics: list[str] = []
            if prepared.scored is not None:
                scored.append((app_pk, prepared.scored.results, prepared.scored.document))
                flagged_heuristics = flagged(prepared.scored.results)
            whatif.append((app_pk, prepared.whatif))
            day_summary.add_into(before, stored.replaced)
            day_summary.add_into(now, day_summary.contribution(stored.row, flagged_heuristics))
            entry = rows.entry
            work.extend(
                (s.name, server_id, s.subject(self, entry)) for s in self.queued if s.wanted(self)
            )
        insert_encoded(session, inputs)
        insert_loaded(session, scored)
        store_inputs(session, whatif)
        day_summary.apply(session, before, now)
        ledger.enqueue(session, work)

    def complete(
        self, factory: sessionmaker[Session], server_ids: Sequence[int] | None = None
    ) -> Completed:
        """Steps 6-8: everything on the ledger (of the given servers, else of all), step by
        step; each unit in its own transaction, a failed one recorded and left queued. A
        database that refuses writes stops it at once (:class:`StorageFault`): the unit stays
        queued, as it was, for a run that can write."""
        url = factory_url(factory)
        result = Completed()
        steps = {s.name: s for s in self.queued}
        with factory() as session:
            todo = ledger.pending(session, list(steps), server_ids)
        for unit in todo:
            step = steps[unit.step]
            try:
                with factory() as session, session.begin():
                    n = step.run(self, session, unit.server_id, unit.subjects)
                    ledger.done(session, unit)
            except Exception as exc:  # derived work must not stop the others; it stays queued
                fault = storage_fault(url, exc)
                if fault is not None:
                    raise fault from exc
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
            result.computed[unit.step] = result.computed.get(unit.step, 0) + (n or 0)
        return result

    def queue_all(
        self,
        factory: sessionmaker[Session],
        steps: Sequence[str] | None = None,
        full: bool = False,
    ) -> None:
        """Queue the given steps (default: all) for the whole of every server with applications,
        in one transaction; ``full``: every prediction again (``analyze --force``), which a run
        killed before it is done leaves on the ledger like any other work."""
        from sqlalchemy import select

        from sparkscope.models.application import Application

        chosen = [s.name for s in self.queued if steps is None or s.name in steps]
        with factory() as session, session.begin():
            servers = session.scalars(select(Application.server_id).distinct()).all()
            ledger.enqueue(
                session,
                [
                    (step, sid, FULL if full and step == "predictions" else "")
                    for sid in servers
                    for step in chosen
                ],
            )
