"""Read-side queries for the web pages and the JSON API, one module per page.

- `search`: filtered, paginated application lists with finding badges;
- `detail`: one application (findings under the config in force, environment, stages, executors,
  resources);
- `compare`: two applications aligned row by row;
- `history`: every run of a recurring application;
- `dashboard`: fleet totals, severities and waste rankings;
- `errors` (lookup errors) and `cache` (per-process TTL cache).

Every function takes a Session and returns plain dataclasses (or ORM rows that are only read).
Names, labels and units for display live in `sparkscope.catalogs`, not here.

The page functions `history()` and `dashboard()` share their module's name: import them from
their module (`from sparkscope.queries.history import history`). Everything else is re-exported.
"""

from __future__ import annotations

from sparkscope.queries.cache import cached, db_key
from sparkscope.queries.compare import (
    Comparison,
    ConfigDiff,
    FindingPair,
    MetricDelta,
    compare_apps,
)
from sparkscope.queries.dashboard import Dashboard, FetchStatus, Ranked
from sparkscope.queries.detail import (
    AppDetail,
    app_detail,
    app_metrics,
    environment,
    executors,
    find_app,
    key_config,
    previous_run,
    resource_value,
    resources,
    shs_app_url,
    sort_findings,
    stage_count,
    stages,
)
from sparkscope.queries.errors import AmbiguousAppError, NotFoundError
from sparkscope.queries.history import HistoryPoint, app_names
from sparkscope.queries.search import (
    PAGE_SIZE,
    AppRow,
    Badge,
    SearchFilters,
    SearchPage,
    badges_for,
    search_apps,
)

__all__ = [
    "PAGE_SIZE",
    "AmbiguousAppError",
    "AppDetail",
    "AppRow",
    "Badge",
    "Comparison",
    "ConfigDiff",
    "Dashboard",
    "FetchStatus",
    "FindingPair",
    "HistoryPoint",
    "MetricDelta",
    "NotFoundError",
    "Ranked",
    "SearchFilters",
    "SearchPage",
    "app_detail",
    "app_metrics",
    "app_names",
    "badges_for",
    "cached",
    "compare_apps",
    "db_key",
    "environment",
    "executors",
    "find_app",
    "key_config",
    "previous_run",
    "resource_value",
    "resources",
    "search_apps",
    "shs_app_url",
    "sort_findings",
    "stage_count",
    "stages",
]
