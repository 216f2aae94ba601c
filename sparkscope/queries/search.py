"""Search: applications matching filters, one page at a time, with their findings as badges.

Search filters first and then orders by an indexed column with LIMIT, so it stays fast on a large
fleet; badges of a result page come from one query for its applications.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, literal_column, select
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.models.analysis import AnalysisResult
from sparkscope.models.application import IMPACT_RANK_SQL, WASTE_RANK_SQL, Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RunPrediction
from sparkscope.models.summary import ApplicationName
from sparkscope.present.catalogs import SORT_KEYS

PAGE_SIZE = 50
#: Search counts matches up to this many; beyond it the page says "10,000+".
COUNT_CAP = 10_000


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
    #: Only applications whose worst severity is exactly this (-1: not analysed yet).
    exact_severity: int | None = None
    heuristic: str | None = None
    verdict: str | None = None
    sort: str = "start"
    descending: bool = True
    page: int = 1


SORT_COLUMNS: dict[str, Any] = {
    "start": Application.start_time_ms,
    "end": Application.end_time_ms,
    "duration": Application.duration_ms,
    "severity": Application.worst_severity,
    # The expressions of the rank indexes (unknown below every known figure), written out so
    # that the database matches them.
    "impact": literal_column(IMPACT_RANK_SQL),
    "waste": literal_column(WASTE_RANK_SQL),
}
assert tuple(SORT_COLUMNS) == SORT_KEYS, "every sort key of the catalog has a column"


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
    impact_core_hours: float | None = None
    wasted_core_hours: float | None = None


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
        # The substring match runs over the distinct names, then the applications are read by
        # name (index): the same matches as ILIKE over every application, for a fraction of it.
        names = select(ApplicationName.name).where(
            ApplicationName.name.ilike(_like_pattern(f.name), escape="\\")
        )
        conds.append(Application.name.in_(names))
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
    if f.exact_severity is not None:
        conds.append(
            Application.worst_severity.is_(None)
            if f.exact_severity < 0
            else Application.worst_severity == f.exact_severity
        )
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
    if f.verdict:  # predictions: runs judged regression / improvement / normal
        conds.append(
            exists().where(
                RunPrediction.application_id == Application.id, RunPrediction.verdict == f.verdict
            )
        )
    return conds


ROW_COLUMNS = (
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
    Application.impact_core_hours,
    Application.wasted_core_hours,
)


def app_row(r: Any, badges: list[Badge] | None = None) -> AppRow:
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
        impact_core_hours=getattr(r, "impact_core_hours", None),
        wasted_core_hours=getattr(r, "wasted_core_hours", None),
    )


def badges_for(session: Session, application_pks: Sequence[int]) -> dict[int, list[Badge]]:
    """Findings above NONE of several applications, worst first (the costliest first among
    equals), in one query."""
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
            func.coalesce(AnalysisResult.impact_core_hours, -1).desc(),
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
    # Ties in a defined order: by start time in the same direction (worst and newest first,
    # as the (worst_severity, start_time_ms) index reads), then by row id.
    keys = [sort_col]
    if sort_col is not Application.start_time_ms:
        keys.append(Application.start_time_ms)
    keys.append(Application.id)
    order = [k.desc() if filters.descending else k.asc() for k in keys]
    # The page's ids first, then their rows: the ordering and filtering can then be answered
    # from indexes alone (e.g. findings -> ix_application_id_start_severity), and only the rows
    # shown are read whole.
    page_ids = (
        select(Application.id)
        .where(*conds)
        .order_by(*order)
        .limit(per_page)
        .offset((filters.page - 1) * per_page)
    )
    query = (
        select(*ROW_COLUMNS)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.id.in_(page_ids))
        .order_by(*order)
    )
    rows = session.execute(query).all()
    # Counting stops at COUNT_CAP matches: an exact count of a broad filter costs a full scan.
    # Selecting a constant lets an index that holds the filtered columns answer alone.
    bounded = (
        select(literal_column("1"))
        .select_from(Application)
        .where(*conds)
        .limit(COUNT_CAP + 1)
        .subquery()
    )
    counted = session.scalar(select(func.count()).select_from(bounded)) or 0
    badges = badges_for(session, [r.id for r in rows])
    return SearchPage(
        total=min(counted, COUNT_CAP),
        total_exact=counted <= COUNT_CAP,
        page=filters.page,
        per_page=per_page,
        rows=[app_row(r, badges.get(r.id, [])) for r in rows],
    )
