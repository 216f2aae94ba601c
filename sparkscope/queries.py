"""Read-side queries for the web pages and the JSON API: search, detail, compare, history, dashboard.

Every function takes a Session and returns plain dataclasses (or ORM rows that are only read).
Search filters first and then orders by an indexed column with LIMIT, so it stays fast on a large
fleet; badges of a result page come from one query for its applications.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, and_, exists, func, select, text
from sqlalchemy.orm import Session

from heuristics import Registry
from heuristics.base import HeuristicResult, Severity
from sparkscope.analysis import ensure_analyzed, load_inputs
from sparkscope.models import (
    AnalysisResult,
    Application,
    EnvironmentProperty,
    Executor,
    FetchRun,
    HistoryServer,
    RunPrediction,
    Stage,
)
from sparkscope.redaction import redact
from sparkscope.resources import Resources, compute_resources, cost

T = TypeVar("T")

SEVERITY_NAMES: tuple[str, ...] = tuple(s.name.lower() for s in Severity)
PAGE_SIZE = 50
#: Search counts matches up to this many; beyond it the page says "10,000+".
COUNT_CAP = 10_000
MAX_PAGE = 100_000


_TTL_CACHE: dict[tuple[Any, ...], tuple[float, Any]] = {}
_TTL_LOCK = threading.Lock()


def cached(key: tuple[Any, ...], ttl_s: float, compute: Callable[[], T]) -> T:
    """``compute()``, reused for ``ttl_s`` seconds per key in this process (0 disables)."""
    if ttl_s <= 0:
        return compute()
    now = time.monotonic()
    with _TTL_LOCK:
        hit = _TTL_CACHE.get(key)
    if hit is not None and now - hit[0] < ttl_s:
        value: T = hit[1]
        return value
    value = compute()
    with _TTL_LOCK:
        if len(_TTL_CACHE) > 512:
            _TTL_CACHE.clear()
        _TTL_CACHE[key] = (now, value)
    return value


def db_key(session: Session) -> str:
    """Identity of the session's database, for per-process caches."""
    return str(session.get_bind().engine.url)


def severity_name(level: int | None) -> str:
    """Lower-case name of a severity level; 'unknown' before the application is analysed."""
    if level is None or not 0 <= level < len(SEVERITY_NAMES):
        return "unknown"
    return SEVERITY_NAMES[level]


class NotFoundError(LookupError):
    """No application matches the given id (and server / attempt)."""


class AmbiguousAppError(LookupError):
    """The application id exists on several History Servers; `servers` lists their names."""

    def __init__(self, app_id: str, servers: Sequence[str]) -> None:
        super().__init__(f"application {app_id} exists on several servers: {', '.join(servers)}")
        self.app_id = app_id
        self.servers = list(servers)


# ------------------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Metric:
    """One application total: column, label and unit ('ms', 'ns', 'bytes', 'count', 'hours')."""

    key: str
    label: str
    unit: str


APP_METRICS: tuple[Metric, ...] = (
    Metric("duration_ms", "Duration", "ms"),
    Metric("executor_run_time_ms", "Executor run time", "ms"),
    Metric("executor_cpu_time_ns", "Executor CPU time", "ns"),
    Metric("jvm_gc_time_ms", "GC time", "ms"),
    Metric("num_jobs", "Jobs", "count"),
    Metric("num_failed_jobs", "Failed jobs", "count"),
    Metric("num_stages", "Stages", "count"),
    Metric("num_failed_stages", "Failed stages", "count"),
    Metric("num_tasks", "Tasks", "count"),
    Metric("num_failed_tasks", "Failed tasks", "count"),
    Metric("num_executors", "Executors", "count"),
    Metric("input_bytes", "Input", "bytes"),
    Metric("output_bytes", "Output", "bytes"),
    Metric("shuffle_read_bytes", "Shuffle read", "bytes"),
    Metric("shuffle_write_bytes", "Shuffle write", "bytes"),
    Metric("memory_bytes_spilled", "Spill (memory)", "bytes"),
    Metric("disk_bytes_spilled", "Spill (disk)", "bytes"),
    Metric("allocated_core_hours", "Allocated core-hours", "hours"),
    Metric("wasted_core_hours", "Wasted core-hours", "hours"),
)

#: Metrics the history chart can plot, by the value of its `metric` parameter.
HISTORY_METRICS: dict[str, Metric] = {
    "duration": Metric("duration_ms", "Duration", "ms"),
    "input": Metric("input_bytes", "Input bytes", "bytes"),
    "shuffle": Metric("shuffle_read_bytes", "Shuffle read bytes", "bytes"),
    "spill": Metric("memory_bytes_spilled", "Spill (memory bytes)", "bytes"),
    "gc": Metric("jvm_gc_time_ms", "GC time", "ms"),
    "run_time": Metric("executor_run_time_ms", "Executor run time", "ms"),
    "allocated_core_hours": Metric("allocated_core_hours", "Allocated core-hours", "hours"),
    "wasted_core_hours": Metric("wasted_core_hours", "Wasted core-hours", "hours"),
}

#: Spark settings shown as "key configuration" on the application and compare pages.
KEY_CONFIG: tuple[str, ...] = (
    "spark.master",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.driver.memory",
    "spark.driver.cores",
    "spark.dynamicAllocation.enabled",
    "spark.dynamicAllocation.minExecutors",
    "spark.dynamicAllocation.maxExecutors",
    "spark.sql.shuffle.partitions",
    "spark.default.parallelism",
    "spark.sql.adaptive.enabled",
    "spark.serializer",
    "spark.yarn.queue",
)


def app_metrics(app: Application) -> list[tuple[Metric, Any]]:
    """The application's totals in display order."""
    return [(m, getattr(app, m.key)) for m in APP_METRICS]


# -------------------------------------------------------------------------------------- search


@dataclass(frozen=True)
class SearchFilters:
    """Validated search parameters; times are epoch ms, bounds inclusive."""

    app_id: str | None = None
    name: str | None = None
    user: str | None = None
    queue: str | None = None
    server: str | None = None
    start_from_ms: int | None = None
    start_to_ms: int | None = None
    end_from_ms: int | None = None
    end_to_ms: int | None = None
    min_severity: int | None = None
    heuristic: str | None = None
    verdict: str | None = None
    sort: str = "start"
    descending: bool = True
    page: int = 1


SORT_COLUMNS = {
    "start": Application.start_time_ms,
    "end": Application.end_time_ms,
    "duration": Application.duration_ms,
    "severity": Application.worst_severity,
}


@dataclass(frozen=True)
class Badge:
    """One finding of a search result, for a coloured badge."""

    heuristic: str
    severity: int
    title: str


@dataclass(frozen=True)
class AppRow:
    """One application as listed by search and history."""

    pk: int
    app_id: str
    attempt_id: str
    server: str
    name: str
    user: str | None
    queue: str | None
    start_time_ms: int | None
    end_time_ms: int | None
    duration_ms: int | None
    worst_severity: int | None
    badges: list[Badge] = field(default_factory=list)


@dataclass(frozen=True)
class SearchPage:
    """One page of search results and the total match count."""

    total: int
    page: int
    per_page: int
    rows: list[AppRow]
    total_exact: bool = True

    @property
    def pages(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, -(-self.total // self.per_page))


def _like_pattern(text: str) -> str:
    # Names hold %, _ and backslashes too; escape them so they match literally.
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _search_conditions(f: SearchFilters) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if f.app_id:
        conds.append(Application.app_id == f.app_id)
    if f.name:
        conds.append(Application.name.ilike(_like_pattern(f.name), escape="\\"))
    if f.user:
        conds.append(Application.spark_user == f.user)
    if f.queue:
        conds.append(Application.queue == f.queue)
    if f.server:
        conds.append(
            Application.server_id
            == select(HistoryServer.id).where(HistoryServer.name == f.server).scalar_subquery()
        )
    if f.start_from_ms is not None:
        conds.append(Application.start_time_ms >= f.start_from_ms)
    if f.start_to_ms is not None:
        conds.append(Application.start_time_ms <= f.start_to_ms)
    if f.end_from_ms is not None:
        conds.append(Application.end_time_ms >= f.end_from_ms)
    if f.end_to_ms is not None:
        conds.append(Application.end_time_ms <= f.end_to_ms)
    if f.min_severity is not None and f.min_severity > 0:
        conds.append(Application.worst_severity >= f.min_severity)
    if f.heuristic:
        # A heuristic "matches" when it fired (at least LOW, or the minimum severity asked for).
        floor = max(f.min_severity or 0, int(Severity.LOW))
        conds.append(
            exists().where(
                and_(
                    AnalysisResult.application_id == Application.id,
                    AnalysisResult.heuristic == f.heuristic,
                    AnalysisResult.severity >= floor,
                )
            )
        )
    if f.verdict:  # predictions: runs judged regression/improvement/normal
        conds.append(
            exists().where(
                RunPrediction.application_id == Application.id, RunPrediction.verdict == f.verdict
            )
        )
    return conds


_ROW_COLUMNS = (
    Application.id,
    Application.app_id,
    Application.attempt_id,
    HistoryServer.name.label("server"),
    Application.name,
    Application.spark_user,
    Application.queue,
    Application.start_time_ms,
    Application.end_time_ms,
    Application.duration_ms,
    Application.worst_severity,
)


def _row(r: Any, badges: list[Badge] | None = None) -> AppRow:
    return AppRow(
        pk=r.id,
        app_id=r.app_id,
        attempt_id=r.attempt_id or "",
        server=r.server,
        name=r.name,
        user=r.spark_user,
        queue=r.queue,
        start_time_ms=r.start_time_ms,
        end_time_ms=r.end_time_ms,
        duration_ms=r.duration_ms,
        worst_severity=r.worst_severity,
        badges=badges if badges is not None else [],
    )


def badges_for(session: Session, application_pks: Sequence[int]) -> dict[int, list[Badge]]:
    """Findings above NONE of several applications, worst first, in one query."""
    out: dict[int, list[Badge]] = defaultdict(list)
    if not application_pks:
        return out
    rows = session.execute(
        select(
            AnalysisResult.application_id,
            AnalysisResult.heuristic,
            AnalysisResult.severity,
            AnalysisResult.title,
        )
        .where(AnalysisResult.application_id.in_(list(application_pks)))
        .where(AnalysisResult.severity > int(Severity.NONE))
        .order_by(
            AnalysisResult.application_id,
            AnalysisResult.severity.desc(),
            AnalysisResult.heuristic,
        )
    )
    for r in rows:
        out[r.application_id].append(Badge(r.heuristic, r.severity, r.title))
    return out


def search_apps(session: Session, filters: SearchFilters, per_page: int = PAGE_SIZE) -> SearchPage:
    """One page of applications matching ``filters``, with their badges and the total count."""
    conds = _search_conditions(filters)
    sort_col = SORT_COLUMNS[filters.sort]
    order = sort_col.desc() if filters.descending else sort_col.asc()
    tie = Application.id.desc() if filters.descending else Application.id.asc()
    query = (
        select(*_ROW_COLUMNS)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(*conds)
        .order_by(order, tie)
        .limit(per_page)
        .offset((filters.page - 1) * per_page)
    )
    rows = session.execute(query).all()
    # Counting stops at COUNT_CAP matches: an exact count of a broad filter costs a full scan.
    bounded = select(Application.id).where(*conds).limit(COUNT_CAP + 1).subquery()
    counted = session.scalar(select(func.count()).select_from(bounded)) or 0
    badges = badges_for(session, [r.id for r in rows])
    return SearchPage(
        total=min(counted, COUNT_CAP),
        total_exact=counted <= COUNT_CAP,
        page=filters.page,
        per_page=per_page,
        rows=[_row(r, badges.get(r.id, [])) for r in rows],
    )


# ---------------------------------------------------------------------------------- one app


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
    base = server_url.rstrip("/")
    # The configured URL may point at the REST root; the UI lives at the server's root.
    base = re.sub(r"/api/v1$", "", base)
    path = f"{base}/history/{app.app_id}/"
    if app.attempt_id:
        path += f"{app.attempt_id}/"
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


def stages(session: Session, application_pk: int, limit: int | None = None) -> list[Any]:
    """Stage attempts of one application by id; with ``limit``, only the longest-running ones."""
    query = select(*_STAGE_COLUMNS).where(Stage.application_id == application_pk)
    if limit is not None:
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
    # Driver first, then executors by numeric id.
    return sorted(
        rows,
        key=lambda r: (
            not r.is_driver,
            int(r.executor_id) if r.executor_id.isdigit() else 0,
            r.executor_id,
        ),
    )


# Stored applications are finished and only change when re-fetched, so their resource figures are
# kept per process; the key holds the database and the fetch time.
RESOURCES_CACHE_SECONDS = 3600.0


def resources(
    session: Session,
    app: Application,
    core_hour_price: float | None = None,
    gb_hour_price: float | None = None,
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
    return {**figures, "cost": cost(computed, core_hour_price, gb_hour_price)}


#: Resource figures compared side by side (flattened keys of `resources`).
COMPARE_RESOURCES: tuple[tuple[str, str, str], ...] = (
    ("allocated_core_hours", "Allocated core-hours", "hours"),
    ("used_core_hours", "Used core-hours", "hours"),
    ("cpu_core_hours", "CPU core-hours", "hours"),
    ("wasted_core_hours", "Wasted core-hours", "hours"),
    ("core_efficiency", "Core efficiency", "ratio"),
    ("allocated_gb_hours", "Allocated GB-hours", "hours"),
    ("used_gb_hours", "Used GB-hours", "hours"),
    ("wasted_gb_hours", "Wasted GB-hours", "hours"),
    ("memory_efficiency", "Memory efficiency", "ratio"),
    ("executors", "Executors counted", "count"),
    ("wait.to_first_executor_s", "Wait: start to first executor", "seconds"),
    ("wait.driver_only_s", "Wait: driver only", "seconds"),
    ("wait.stage_scheduling_delay_s", "Wait: stage scheduling delay", "seconds"),
    ("cost.allocated_cost", "Allocated cost", "money"),
    ("cost.wasted_cost", "Wasted cost", "money"),
)


def resource_value(res: dict[str, Any] | None, dotted: str) -> Any:
    """A value of the `resources` dict by dotted key (None when absent)."""
    value: Any = res
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def sort_findings(results: list[HeuristicResult], by: str) -> list[HeuristicResult]:
    """Findings worst first (``by='severity'``) or costliest first (``by='impact'``)."""
    if by == "impact":

        def cost(r: HeuristicResult) -> tuple[float, float, int]:
            core_hours = r.impact.core_hours if r.impact and r.impact.core_hours else 0.0
            wall = r.impact.wall_seconds if r.impact and r.impact.wall_seconds else 0.0
            return (-core_hours, -wall, -int(r.severity))

        return sorted(results, key=cost)
    return sorted(results, key=lambda r: (-int(r.severity), r.name))


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


def app_detail(
    session: Session,
    app: Application,
    registry: Registry,
    redaction_regex: str,
    with_tables: bool = True,
    findings_sort: str = "severity",
    prices: tuple[float | None, float | None] = (None, None),
    stage_limit: int | None = None,
) -> AppDetail:
    """Load one application's page: findings under the config in force (re-scored if stale)."""
    findings = sort_findings(ensure_analyzed(session, app.id, registry), findings_sort)
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
        resources=resources(session, app, *prices),
        stages=stages(session, app.id, stage_limit) if with_tables else [],
        stage_total=stage_count(session, app.id) if with_tables else 0,
        executors=executors(session, app.id) if with_tables else [],
    )


# ------------------------------------------------------------------------------------- compare


@dataclass(frozen=True)
class MetricDelta:
    """One metric on both sides with the change from left to right."""

    metric: Metric
    left: Any
    right: Any

    @property
    def delta(self) -> float | None:
        """right - left, when both are known."""
        if self.left is None or self.right is None:
            return None
        return self.right - self.left

    @property
    def pct(self) -> float | None:
        """Change in percent of the left value; None when the left is zero or unknown."""
        if self.delta is None or not self.left:
            return None
        return 100.0 * self.delta / self.left


@dataclass(frozen=True)
class ConfigDiff:
    """One configuration key on both sides; status is same, differ, left_only or right_only."""

    key: str
    left: str | None
    right: str | None
    status: str


@dataclass(frozen=True)
class FindingPair:
    """One heuristic on both sides; a side is None when that heuristic did not fire there."""

    heuristic: str
    left: HeuristicResult | None
    right: HeuristicResult | None

    @property
    def one_sided(self) -> bool:
        """The problem shows on one side only."""
        return (self.left is None) != (self.right is None)


@dataclass
class Comparison:
    """Two applications aligned row by row."""

    left: AppDetail
    right: AppDetail
    metrics: list[MetricDelta]
    config: list[ConfigDiff]
    findings: list[FindingPair]
    resources: list[tuple[str, str, str, Any, Any]]


def _config_diff(
    left: dict[str, list[tuple[str, str | None]]], right: dict[str, list[tuple[str, str | None]]]
) -> list[ConfigDiff]:
    lmap, rmap = dict(left.get("spark", [])), dict(right.get("spark", []))
    out = []
    for key in sorted(set(lmap) | set(rmap)):
        if key not in rmap:
            status = "left_only"
        elif key not in lmap:
            status = "right_only"
        elif lmap[key] != rmap[key]:
            status = "differ"
        else:
            status = "same"
        out.append(ConfigDiff(key, lmap.get(key), rmap.get(key), status))
    rank = {"differ": 0, "left_only": 1, "right_only": 1, "same": 2}
    out.sort(key=lambda d: (rank[d.status], d.key))
    return out


def _fired(results: list[HeuristicResult]) -> dict[str, HeuristicResult]:
    return {r.name: r for r in results if r.severity > Severity.NONE}


def compare_apps(
    session: Session,
    left: Application,
    right: Application,
    registry: Registry,
    redaction_regex: str,
    prices: tuple[float | None, float | None] = (None, None),
) -> Comparison:
    """Both applications with metric deltas, config differences and one-sided findings."""
    ld = app_detail(session, left, registry, redaction_regex, with_tables=False, prices=prices)
    rd = app_detail(session, right, registry, redaction_regex, with_tables=False, prices=prices)
    metrics = [MetricDelta(m, getattr(left, m.key), getattr(right, m.key)) for m in APP_METRICS]
    lf, rf = _fired(ld.findings), _fired(rd.findings)
    names = sorted(
        set(lf) | set(rf),
        key=lambda n: (-max(int(x.severity) for x in (lf.get(n), rf.get(n)) if x), n),
    )
    pairs = [FindingPair(n, lf.get(n), rf.get(n)) for n in names]
    res_rows = [
        (key, label, unit, resource_value(ld.resources, key), resource_value(rd.resources, key))
        for key, label, unit in COMPARE_RESOURCES
        # Money rows only when prices are configured.
        if unit != "money" or resource_value(ld.resources, "cost") is not None
    ]
    return Comparison(
        left=ld,
        right=rd,
        metrics=metrics,
        config=_config_diff(ld.env, rd.env),
        findings=pairs,
        resources=res_rows,
    )


# ------------------------------------------------------------------------------------- history


@dataclass(frozen=True)
class HistoryPoint:
    """One run of a recurring application for the history chart."""

    app_id: str
    attempt_id: str
    server: str
    start_time_ms: int
    duration_ms: int | None
    worst_severity: int | None
    value: float | None


def history(
    session: Session, name: str, metric: str = "duration", server: str | None = None
) -> list[HistoryPoint]:
    """Every run with exactly this name, oldest first, with the chosen metric."""
    col = getattr(Application, HISTORY_METRICS[metric].key)
    query = (
        select(
            Application.app_id,
            Application.attempt_id,
            HistoryServer.name.label("server"),
            Application.start_time_ms,
            Application.duration_ms,
            Application.worst_severity,
            col.label("value"),
        )
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.name == name)
        .where(Application.start_time_ms.is_not(None))
        .order_by(Application.start_time_ms)
    )
    if server:
        query = query.where(HistoryServer.name == server)
    return [
        HistoryPoint(
            app_id=r.app_id,
            attempt_id=r.attempt_id or "",
            server=r.server,
            start_time_ms=r.start_time_ms,
            duration_ms=r.duration_ms,
            worst_severity=r.worst_severity,
            value=r.value,
        )
        for r in session.execute(query)
    ]


def app_names(session: Session, limit: int = 1000) -> list[str]:
    """Distinct application names for suggestions, alphabetically (bounded)."""
    # A skip scan: one index probe per distinct name instead of grouping the whole table.
    rows = session.execute(
        text(
            "WITH RECURSIVE names(name) AS ("
            " SELECT min(name) FROM application"
            " UNION ALL"
            " SELECT (SELECT min(a.name) FROM application a WHERE a.name > names.name)"
            " FROM names WHERE names.name IS NOT NULL"
            ") SELECT name FROM names WHERE name IS NOT NULL LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [r[0] for r in rows]


# ----------------------------------------------------------------------------------- dashboard


@dataclass(frozen=True)
class Ranked:
    """One line of a top-N list."""

    label: str
    value: float
    count: int
    app: AppRow | None = None


@dataclass(frozen=True)
class FetchStatus:
    """The last fetch run of one server."""

    started_at_ms: int
    finished_at_ms: int | None
    status: str
    apps_loaded: int
    apps_failed: int
    error: str | None


@dataclass
class Dashboard:
    """The landing page's figures."""

    totals: dict[str, int]
    newest: AppRow | None
    fetch_runs: list[tuple[str, FetchStatus | None]]
    severity_day: dict[str, int]
    severity_week: dict[str, int]
    top_findings: list[tuple[str, int]]
    days: int
    top_wasted_apps: list[Ranked]
    top_wasted_users: list[Ranked]
    top_wasted_queues: list[Ranked]


def _severity_counts(
    session: Session, day_start_ms: int, week_start_ms: int
) -> tuple[dict[str, int], dict[str, int]]:
    # One pass over the week's applications gives both the day's and the week's counts.
    rows = session.execute(
        select(
            Application.worst_severity,
            func.count().filter(Application.start_time_ms >= day_start_ms),
            func.count(),
        )
        .where(Application.start_time_ms >= week_start_ms)
        .group_by(Application.worst_severity)
    )
    day = {name: 0 for name in (*SEVERITY_NAMES, "unknown")}
    week = dict(day)
    for level, n_day, n_week in rows:
        day[severity_name(level)] += n_day
        week[severity_name(level)] += n_week
    return day, week


def _top_wasted_by(session: Session, col: Any, since_ms: int, limit: int) -> list[Ranked]:
    rows = session.execute(
        select(col, func.sum(Application.wasted_core_hours), func.count())
        .where(Application.start_time_ms >= since_ms)
        .where(Application.wasted_core_hours.is_not(None))
        .group_by(col)
        .order_by(func.sum(Application.wasted_core_hours).desc())
        .limit(limit)
    )
    return [Ranked(label or "(none)", float(total or 0), n) for label, total, n in rows]


def dashboard(session: Session, now_ms: int, days: int = 7, top: int = 10) -> Dashboard:
    """Totals, newest application, fetch status, severities and waste rankings."""
    sums = session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(Application.num_executors), 0),
            func.coalesce(func.sum(Application.num_jobs), 0),
            func.coalesce(func.sum(Application.num_stages), 0),
            func.coalesce(func.sum(Application.num_tasks), 0),
        )
    ).one()
    totals = dict(
        zip(("applications", "executors", "jobs", "stages", "tasks"), map(int, sums), strict=True)
    )
    newest_row = session.execute(
        select(*_ROW_COLUMNS)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.start_time_ms.is_not(None))
        .order_by(Application.start_time_ms.desc())
        .limit(1)
    ).first()
    servers = session.scalars(select(HistoryServer).order_by(HistoryServer.name)).all()
    fetch_runs: list[tuple[str, FetchStatus | None]] = []
    for s in servers:
        run = session.execute(
            select(
                FetchRun.started_at_ms,
                FetchRun.finished_at_ms,
                FetchRun.status,
                FetchRun.apps_loaded,
                FetchRun.apps_failed,
                FetchRun.error,
            )
            .where(FetchRun.server_id == s.id)
            .order_by(FetchRun.started_at_ms.desc())
            .limit(1)
        ).first()
        # Plain values: the dashboard may be cached and read after this session is closed.
        fetch_runs.append((s.name, FetchStatus(*run) if run else None))
    day_ms, week_ms = 86_400_000, 7 * 86_400_000
    period_start = now_ms - days * day_ms
    week_start = now_ms - week_ms
    severity_day, severity_week = _severity_counts(session, now_ms - day_ms, week_start)
    top_findings = [
        (h, n)
        for h, n in session.execute(
            select(AnalysisResult.heuristic, func.count())
            .join(Application, Application.id == AnalysisResult.application_id)
            .where(Application.start_time_ms >= week_start)
            .where(AnalysisResult.severity > int(Severity.NONE))
            .group_by(AnalysisResult.heuristic)
            .order_by(func.count().desc())
            .limit(top)
        )
    ]
    wasted_rows = session.execute(
        select(*_ROW_COLUMNS, Application.wasted_core_hours)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.start_time_ms >= period_start)
        .where(Application.wasted_core_hours.is_not(None))
        .order_by(Application.wasted_core_hours.desc())
        .limit(top)
    ).all()
    return Dashboard(
        totals=totals,
        newest=_row(newest_row) if newest_row else None,
        fetch_runs=fetch_runs,
        severity_day=severity_day,
        severity_week=severity_week,
        top_findings=top_findings,
        days=days,
        top_wasted_apps=[
            Ranked(r.name, float(r.wasted_core_hours), 1, _row(r)) for r in wasted_rows
        ],
        top_wasted_users=_top_wasted_by(session, Application.spark_user, period_start, top),
        top_wasted_queues=_top_wasted_by(session, Application.queue, period_start, top),
    )
