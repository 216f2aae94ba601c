"""The compare page: two applications side by side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from heuristics.registry import Registry
from heuristics.result import HeuristicResult, Severity
from sparkscope.advisor.predict.plans import PlanChange, changes, shapes
from sparkscope.advisor.whatif.sizing import Prices
from sparkscope.analysis.inputs import load_inputs
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.predictions import RunPrediction
from sparkscope.prediction.reads import app_predictions
from sparkscope.present.catalogs import APP_METRICS, COMPARE_RESOURCES, KEY_CONFIG, Metric
from sparkscope.queries.compare_stages import StagePair, compare_stages
from sparkscope.queries.detail import AppDetail, app_detail, previous_run, resource_value


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

    @property
    def is_key(self) -> bool:
        """One of the settings the application page shows first (KEY_CONFIG)."""
        return self.key in KEY_CONFIG


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

    @property
    def change(self) -> str:
        """The right run against the left: ``gained`` (it has the problem, the left did not),
        ``lost`` (the left had it, the right does not) or ``both``."""
        if self.left is None:
            return "gained"
        return "lost" if self.right is None else "both"


@dataclass
class Comparison:
    """Two applications aligned row by row."""

    left: AppDetail
    right: AppDetail
    metrics: list[MetricDelta]
    config: list[ConfigDiff]
    findings: list[FindingPair]
    resources: list[tuple[str, str, str, Any, Any]]
    plan_changes: list[PlanChange] = field(default_factory=list)
    stages: list[StagePair] = field(default_factory=list)
    left_prediction: RunPrediction | None = None
    right_prediction: RunPrediction | None = None


@dataclass(frozen=True)
class OtherRun:
    """A run of the same name to compare with, for the run picker."""

    app_id: str
    attempt_id: str
    server: str
    start_time_ms: int | None
    duration_ms: int | None
    worst_severity: int | None
    previous: bool


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
    prices: Prices | None = None,
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
    # Gained and lost first: what the right run changed, before what both share.
    pairs.sort(key=lambda p: not p.one_sided)
    res_rows = [
        (key, label, unit, resource_value(ld.resources, key), resource_value(rd.resources, key))
        for key, label, unit in COMPARE_RESOURCES
        # Money rows only when prices are configured.
        if unit != "money" or resource_value(ld.resources, "cost") is not None
    ]
    inputs = load_inputs(session, [left.id, right.id], store=False)
    plans = changes(
        shapes(inputs[left.id].sql_executions) if left.id in inputs else [],
        shapes(inputs[right.id].sql_executions) if right.id in inputs else [],
    )
    predictions = app_predictions(session, [left.id, right.id])
    return Comparison(
        left=ld,
        right=rd,
        metrics=metrics,
        config=_config_diff(ld.env, rd.env),
        findings=pairs,
        resources=res_rows,
        plan_changes=plans,
        stages=compare_stages(session, left.id, right.id),
        left_prediction=predictions.get(left.id),
        right_prediction=predictions.get(right.id),
    )


_UNREAD = Application()


def same_name_runs(
    session: Session, app: Application, limit: int = 20, prev: Application | None = _UNREAD
) -> list[OtherRun]:
    """Other runs named like ``app``, its own server's first, newest first, at most ``limit``;
    the run just before it on its server (``prev`` when the caller read it already) is always
    among them (``previous``). Each read walks the (name, start_time_ms) index."""
    if prev is _UNREAD:
        prev = previous_run(session, app)
    cols = (
        Application.id,
        Application.app_id,
        Application.attempt_id,
        HistoryServer.name.label("server"),
        Application.start_time_ms,
        Application.duration_ms,
        Application.worst_severity,
    )
    base = (
        select(*cols)
        .join(HistoryServer, HistoryServer.id == Application.server_id)
        .where(Application.name == app.name)
        .where(Application.start_time_ms.is_not(None))
        .order_by(Application.start_time_ms.desc())
    )
    own = base.where(Application.server_id == app.server_id, Application.app_id != app.app_id)
    rows = list(session.execute(own.limit(limit)))
    if len(rows) < limit:
        rows += session.execute(
            base.where(Application.server_id != app.server_id).limit(limit - len(rows))
        )
    if prev is not None and prev.app_id != app.app_id and prev.id not in {r.id for r in rows}:
        rows = [*rows[: limit - 1], *session.execute(own.where(Application.id == prev.id))]
    seen: set[tuple[str, str]] = set()
    out = []
    for r in rows:
        # One entry per application: its attempts compare as the latest one.
        if (r.server, r.app_id) in seen:
            continue
        seen.add((r.server, r.app_id))
        out.append(
            OtherRun(
                app_id=r.app_id,
                attempt_id=r.attempt_id or "",
                server=r.server,
                start_time_ms=r.start_time_ms,
                duration_ms=r.duration_ms,
                worst_severity=r.worst_severity,
                previous=prev is not None and r.id == prev.id,
            )
        )
    return out
