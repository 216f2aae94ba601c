"""The application page: one application, its findings, configuration, stages and executors."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from sqlalchemy import func, select
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from heuristics.registry import Registry
from heuristics.result import HeuristicResult
from sparkscope.accounting.resources import Resources, compute_resources, cost
from sparkscope.advisor.whatif.sizing import Prices
from sparkscope.analysis.inputs import load_inputs
from sparkscope.analysis.results import impact_of
from sparkscope.analysis.scoring import ensure_analyzed
from sparkscope.models.application import Application, EnvironmentProperty, Executor, Stage
from sparkscope.models.fetch import HistoryServer
from sparkscope.present.answer import ConfLine, Verdict, rank_findings, suggested_conf, verdict_of
from sparkscope.present.catalogs import APP_METRICS, KEY_CONFIG, Metric
from sparkscope.queries.cache import cached, db_key
from sparkscope.queries.errors import AmbiguousAppError, NotFoundError
from sparkscope.redaction import redact, without_credentials


def app_metrics(app: Application) -> list[tuple[Metric, Any]]:
    """The application's totals in display order."""
    return [(m, getattr(app, m.key)) for m in APP_METRICS]


def find_app(
    session: Session, app_id: str, server: str | None = None, attempt: str | None = None
) -> Application:
    """The application with this Spark id (latest attempt unless ``attempt`` is given)."""
    query = (
        select(Application, HistoryServer.name)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.app_id == app_id)
    )
    if server is not None:
        query = query.where(HistoryServer.name == server)
    if attempt is not None:
        query = query.where(Application.attempt_id == attempt)
    rows = list(session.execute(query).all())
    if not rows:
        where = f" on server {server!r}" if server is not None else ""
        raise NotFoundError(f"no application {app_id!r}{where}")
    servers = sorted({name for _app, name in rows})
    if len(servers) > 1:
        raise AmbiguousAppError(app_id, servers)
    # Several attempts: the latest one is the one that counts (as Spark's own UI does).
    rows.sort(key=lambda r: (r[0].start_time_ms or 0, r[0].attempt_id or ""))
    app: Application = rows[-1][0]
    return app


def previous_run(session: Session, app: Application) -> Application | None:
    """The run of the same name on the same server that started just before this one."""
    if app.start_time_ms is None:
        return None
    return session.scalars(
        select(Application)
        .where(Application.server_id == app.server_id)
        .where(Application.name == app.name)
        .where(Application.start_time_ms < app.start_time_ms)
        .order_by(Application.start_time_ms.desc())
        .limit(1)
    ).first()


def shs_app_url(server_url: str, app: Application) -> str | None:
    """The application's page on its History Server UI; None when the server is a local folder."""
    if not server_url.startswith(("http://", "https://")):
        return None
    # Rows written before credentials were kept apart may still hold user:password@.
    base = without_credentials(server_url).rstrip("/")
    # The configured URL may point at the REST root; the UI lives at the server's root.
    base = re.sub(r"/api/v1$", "", base)
    # Each id one path segment, percent-encoded whole ("/", "?", "#", "%" and dots included).
    path = f"{base}/history/{quote(app.app_id, safe='')}/"
    if app.attempt_id:
        path += f"{quote(app.attempt_id, safe='')}/"
    return path


def environment(
    session: Session, application_pk: int, redaction_regex: str
) -> dict[str, list[tuple[str, str | None]]]:
    """All environment properties by section, sorted by name, secrets masked."""
    out: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
    rows = session.execute(
        select(EnvironmentProperty.section, EnvironmentProperty.name, EnvironmentProperty.value)
        .where(EnvironmentProperty.application_id == application_pk)
        .order_by(EnvironmentProperty.section, EnvironmentProperty.name)
    )
    for section, name, value in rows:
        # Stored values were redacted by the fetcher; a pattern widened since then applies here too.
        out[section].append((name, redact(name, value, redaction_regex)))
    return dict(out)


def key_config(env: dict[str, list[tuple[str, str | None]]]) -> list[tuple[str, str | None]]:
    """The KEY_CONFIG settings with their values (None when unset)."""
    spark = dict(env.get("spark", []))
    return [(k, spark.get(k)) for k in KEY_CONFIG]


_STAGE_COLUMNS = (
    Stage.stage_id,
    Stage.attempt_id,
    Stage.name,
    Stage.status,
    Stage.num_tasks,
    Stage.num_failed_tasks,
    Stage.submission_time_ms,
    Stage.first_task_launched_time_ms,
    Stage.completion_time_ms,
    Stage.executor_run_time_ms,
    Stage.jvm_gc_time_ms,
    Stage.input_bytes,
    Stage.output_bytes,
    Stage.shuffle_read_bytes,
    Stage.shuffle_write_bytes,
    Stage.memory_bytes_spilled,
    Stage.disk_bytes_spilled,
)

_EXECUTOR_COLUMNS = (
    Executor.executor_id,
    Executor.is_driver,
    Executor.host_port,
    Executor.total_cores,
    Executor.max_memory_bytes,
    Executor.add_time_ms,
    Executor.remove_time_ms,
    Executor.remove_reason,
    Executor.total_duration_ms,
    Executor.total_gc_time_ms,
    Executor.total_tasks,
    Executor.failed_tasks,
    Executor.total_input_bytes,
    Executor.total_shuffle_read_bytes,
    Executor.total_shuffle_write_bytes,
    Executor.peak_jvm_heap_bytes,
)


def stages(
    session: Session, application_pk: int, limit: int | None = None, offset: int | None = None
) -> list[Any]:
    """Stage attempts of one application by id; with ``limit``, only the longest-running ones,
    or with ``offset`` too, the ``limit`` from ``offset`` on in id order (a page)."""
    query = select(*_STAGE_COLUMNS).where(Stage.application_id == application_pk)
    if offset is not None:
        query = query.order_by(Stage.stage_id, Stage.attempt_id).offset(offset).limit(limit)
    elif limit is not None:
        query = query.order_by(Stage.executor_run_time_ms.desc()).limit(limit)
    rows = list(session.execute(query).all())
    rows.sort(key=lambda r: (r.stage_id, r.attempt_id))
    return rows


def stage_count(session: Session, application_pk: int) -> int:
    """Number of stage attempts stored for one application."""
    return (
        session.scalar(
            select(func.count()).select_from(Stage).where(Stage.application_id == application_pk)
        )
        or 0
    )


def executors(session: Session, application_pk: int) -> list[Any]:
    """Executors (and the driver) of one application."""
    rows = session.execute(
        select(*_EXECUTOR_COLUMNS).where(Executor.application_id == application_pk)
    ).all()

    # Driver first, then executors by numeric id (ASCII digits: int('²') fails), then other ids.
    def order(r: Any) -> tuple[bool, bool, int, str]:
        numeric = r.executor_id.isascii() and r.executor_id.isdigit()
        return (not r.is_driver, not numeric, int(r.executor_id) if numeric else 0, r.executor_id)

    return sorted(rows, key=order)


# Stored applications are finished and only change when re-fetched, so their resource figures are
# kept per process; the key holds the database and the fetch time.
RESOURCES_CACHE_SECONDS = 3600.0


def resources(
    session: Session,
    app: Application,
    prices: Prices | None = None,
) -> dict[str, Any] | None:
    """Resource accounting of one application (issue 6), with money when prices are set."""

    def compute() -> tuple[Resources, dict[str, Any]] | None:
        # One encoded row rather than every stage, job and executor row (read-only: a GET).
        data = load_inputs(session, [app.id], store=False).get(app.id)
        if data is None:
            return None
        computed = compute_resources(data)
        return computed, computed.to_dict()

    key = ("resources", db_key(session), app.id, app.fetched_at_ms)
    entry = cached(key, RESOURCES_CACHE_SECONDS, compute)
    if entry is None:
        return None
    computed, figures = entry
    # Money is the cached figures times the prices in force now.
    prices = prices or Prices()
    return {**figures, "cost": cost(computed, prices.core_hour, prices.gb_hour)}


def resource_value(res: dict[str, Any] | None, dotted: str) -> Any:
    """A value of the `resources` dict by dotted key (None when absent)."""
    value: Any = res
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def sort_findings(results: list[HeuristicResult], by: str) -> list[HeuristicResult]:
    """Findings worst first, the costliest first among equals (``by='severity'``), or costliest
    first whatever their severity (``by='impact'``)."""
    return rank_findings(results, by)


@dataclass
class AppDetail:
    """Everything the application page and `/api/apps/<id>` show."""

    app: Application
    server: HistoryServer
    findings: list[HeuristicResult]
    env: dict[str, list[tuple[str, str | None]]]
    key_config: list[tuple[str, str | None]]
    previous: Application | None
    shs_url: str | None
    resources: dict[str, Any] | None
    stages: list[Any] = field(default_factory=list)
    stage_total: int = 0
    executors: list[Any] = field(default_factory=list)
    #: The settings the findings suggest for the next run, in the order of the ranked findings.
    conf: list[ConfLine] = field(default_factory=list)
    #: The one line under the title: the worst finding, its cost and its fix (None: nothing found).
    verdict: Verdict | None = None


def app_detail(
    session: Session,
    app: Application,
    registry: Registry,
    redaction_regex: str,
    with_tables: bool = True,
    findings_sort: str = "severity",
    prices: Prices | None = None,
    stage_limit: int | None = None,
    stage_offset: int | None = None,
) -> AppDetail:
    """Load one application's page: findings under the config in force (scored in memory if the
    stored ones are stale; nothing is written)."""
    findings = sort_findings(ensure_analyzed(session, app.id, registry), findings_sort)
    if findings and app.analysis_fingerprint != registry.fingerprint:
        # Scored in memory under the config in force: the page shows their worst severity and
        # impact, set without marking the row changed so that nothing is flushed (a GET never
        # writes).
        worst = max(int(f.severity) for f in findings)
        set_committed_value(app, "worst_severity", worst)
        impact = impact_of([f.to_dict(thresholds=False) for f in findings])
        set_committed_value(app, "impact_core_hours", impact)
    server = session.get(HistoryServer, app.server_id)
    assert server is not None  # the foreign key guarantees it
    env = environment(session, app.id, redaction_regex)
    return AppDetail(
        app=app,
        server=server,
        findings=findings,
        env=env,
        key_config=key_config(env),
        previous=previous_run(session, app),
        shs_url=shs_app_url(server.url, app),
        resources=resources(session, app, prices),
        stages=stages(session, app.id, stage_limit, stage_offset) if with_tables else [],
        stage_total=stage_count(session, app.id) if with_tables else 0,
        executors=executors(session, app.id) if with_tables else [],
        conf=suggested_conf(findings),
        verdict=verdict_of(findings, {e.name: e.title for e in registry.entries}),
    )
