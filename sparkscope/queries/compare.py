"""The compare page: two applications side by side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from heuristics.registry import Registry
from heuristics.result import HeuristicResult, Severity
from sparkscope.advisor.predict.plans import PlanChange, changes, shapes
from sparkscope.advisor.whatif.sizing import Prices
from sparkscope.analysis.inputs import load_inputs
from sparkscope.models.application import Application
from sparkscope.present.catalogs import APP_METRICS, COMPARE_RESOURCES, Metric
from sparkscope.queries.detail import AppDetail, app_detail, resource_value


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
    plan_changes: list[PlanChange] = field(default_factory=list)


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
    return Comparison(
        left=ld,
        right=rd,
        metrics=metrics,
        config=_config_diff(ld.env, rd.env),
        findings=pairs,
        resources=res_rows,
        plan_changes=plans,
    )
