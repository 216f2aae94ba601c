"""What the SQL checks share besides reading plans: the application facts they judge against, the
cost of an operator, and one outcome built from a check's findings.

Not a heuristic (no `evaluate`). Each check finds zero or more operators (a join, a scan, a
write); its outcome is the worst of them, with every finding in the details table (query,
operator, value, what was seen, the fix, its cost) and the impact summed over them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from heuristics.appdata import AppData, SqlExecutionSummary, SqlPlanNode
from heuristics.builtin.sql.plan import ByIdentity, Graph, graph
from heuristics.result import (
    Details,
    Impact,
    Outcome,
    Setting,
    Severity,
    StageRef,
    make_result,
    no_data,
)
from heuristics.sparkconf import parse_size_bytes
from heuristics.stats import fmt_bytes, fmt_ms, total_task_cores
from heuristics.tuning import merge_conf

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
#: spark.sql.autoBroadcastJoinThreshold's default (10 MB).
DEFAULT_BROADCAST_THRESHOLD = 10 * MIB
#: spark.sql.files.maxPartitionBytes's default (128 MB).
DEFAULT_MAX_PARTITION_BYTES = 128 * MIB
#: Rows of the details table (the worst findings).
MAX_ROWS = 25
#: The SQL inputs (AppData fields) every SQL check reads.
SQL_INPUTS = frozenset({"sql_executions", "sql_status", "spark_properties", "executors", "stages"})


@dataclass(frozen=True)
class Finding:
    """One operator (or one group of scans) a check flags."""

    severity: Severity
    value: float
    execution: SqlExecutionSummary
    node: SqlPlanNode | None
    summary: str
    fix: str
    cost_ms: float | None  # task time the pattern costs (summed over tasks)
    cost_basis: str
    stage_ids: tuple[int, ...] = ()
    conf: tuple[Setting, ...] = field(default=())  # settings that are (part of) the fix


@dataclass(frozen=True)
class Facts:
    """The application facts the SQL checks judge plans against."""

    conf: dict[str, str]
    heap_bytes: float | None  # the smaller of driver and executor heap (a broadcast is in both)
    cores: int
    stage_run_ms: dict[int, float]
    stage_attempts: dict[int, tuple[int, ...]]

    def conf_bytes(self, key: str, default: float) -> float:
        """A size setting in bytes (a bare number is bytes, as for the spark.sql.* sizes)."""
        raw = self.conf.get(key)
        if raw is None:
            return float(default)
        if raw.strip().startswith("-"):
            return -1.0  # -1 disables (broadcast thresholds)
        value = parse_size_bytes(raw, "b")
        return float(default if value is None else value)

    def stage_time_ms(self, stage_ids: Iterable[int]) -> float | None:
        """Task time of the given stages (all attempts), None when none is known."""
        values = [self.stage_run_ms[s] for s in set(stage_ids) if s in self.stage_run_ms]
        return float(sum(values)) if values else None

    def execution_task_ms(self, ex: SqlExecutionSummary) -> float | None:
        """Task time of the stages an execution ran."""
        return self.stage_time_ms(ex.stage_ids)


def facts(app: AppData) -> Facts:
    """The facts of one application (worked out once for all the checks that read them)."""
    return _facts(app)


def _read_facts(app: AppData) -> Facts:
    props = dict(app.spark_properties)
    driver = app.conf.driver_memory_bytes
    executor = driver if app.conf.local else app.conf.executor_memory_bytes
    run_ms: dict[int, float] = {}
    attempts: dict[int, list[int]] = {}
    for st in app.stages:
        if st.status == "SKIPPED":
            continue
        run_ms[st.stage_id] = run_ms.get(st.stage_id, 0.0) + float(st.executor_run_time_ms)
        attempts.setdefault(st.stage_id, []).append(st.attempt_id)
    heap = min(driver, executor) if driver and executor else (driver or executor or None)
    return Facts(
        conf=props,
        heap_bytes=float(heap) if heap else None,
        cores=total_task_cores(app),
        stage_run_ms=run_ms,
        stage_attempts={s: tuple(sorted(a)) for s, a in attempts.items()},
    )


_facts = ByIdentity(_read_facts)


def no_sql(app: AppData) -> Outcome | None:
    """The outcome when there is no SQL to judge (None when there is)."""
    if app.sql_executions:
        return None
    reasons = {
        "failed": "The SQL executions could not be fetched (the next fetch retries them)",
        "partial": "None of the application's SQL executions could be read",
        "unavailable": "The History Server has no SQL endpoint (Spark before 3.0)",
        "unknown": "No SQL executions stored (fetched before Sparkscope read them)",
    }
    return no_data(reasons.get(app.sql_status, "The application ran no SQL query"))


def operator_cost(
    fx: Facts, g: Graph, node: SqlPlanNode, own_ms: float | None = None
) -> tuple[float | None, str]:
    """The task time attributable to an operator, and what it is based on: its own time metrics,
    else its stages' task time, else its codegen pipeline, else the execution's wall clock."""
    if own_ms:
        return own_ms, "the operator's time metrics (summed over tasks)"
    stage_ms = fx.stage_time_ms(node.stage_ids) if node.stage_ids else None
    if stage_ms:
        return stage_ms, f"task time of stage(s) {', '.join(map(str, sorted(node.stage_ids)))}"
    pipeline = g.pipeline_ms(node)
    if pipeline:
        return pipeline, "its codegen pipeline's duration (summed over tasks)"
    if g.ex.duration_ms:
        return float(g.ex.duration_ms) * fx.cores, "the query's duration x task slots"
    return None, "unknown"


def label(ex: SqlExecutionSummary) -> str:
    """`query 3 'daily report'` (the description cut at 60 characters)."""
    desc = " ".join(ex.description.split())
    return f"query {ex.execution_id}" + (f" '{desc[:60]}'" if desc else "")


def nice_size_setting(nbytes: float) -> str:
    """A round size setting at least 25 % above `nbytes` (`'64MB'`)."""
    target = nbytes * 1.25
    for mb in (10, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
        if mb * MIB >= target:
            return f"{mb}MB"
    return f"{math.ceil(target / GIB)}GB"


def count(n: float | None) -> str:
    """A count with thousands separators ("?" when unknown)."""
    return "?" if n is None else f"{n:,.0f}"


def size(n: float | None) -> str:
    """A size in binary units ("?" when unknown)."""
    return "?" if n is None else fmt_bytes(n)


def _impact(findings: Sequence[Finding], fx: Facts) -> Impact | None:
    costs = [(f.cost_ms, f.execution.duration_ms) for f in findings if f.cost_ms]
    if not costs:
        return None
    core_ms = sum(c for c, _ in costs)
    wall_ms = sum(min(c / fx.cores, d) if d else c / fx.cores for c, d in costs)
    return Impact(
        wall_seconds=wall_ms / 1000,
        core_hours=core_ms / 3_600_000,
        formula=(
            "core-hours = the task time each flagged operator costs (see each finding's basis), "
            f"summed; wall = that / {fx.cores} task slots, at most each query's duration"
        ),
    )


_COLUMNS = ("query", "node", "operator", "severity", "value", "finding", "fix", "cost", "stages")


def stage_refs(findings: Sequence[Finding], fx: Facts) -> tuple[StageRef, ...]:
    """The (stage id, attempt id) pairs of the findings, in their order, each once; a stage's
    latest attempt first."""
    out: dict[StageRef, None] = {}
    for f in findings:
        for sid in f.stage_ids:
            for attempt in reversed(fx.stage_attempts.get(sid, (0,))):
                out.setdefault((sid, attempt), None)
    return tuple(out)


def flagged_nodes(
    app: AppData,
    wanted: Callable[[SqlPlanNode], bool],
    check: Callable[[Graph, SqlPlanNode], Finding | None],
) -> list[Finding]:
    """The findings ``check`` makes of every operator that ran and that ``wanted`` picks, over
    every SQL execution of the application, in execution and node order."""
    found = []
    for ex in app.sql_executions:
        g = graph(ex)
        for node in g.ran():
            if wanted(node):
                finding = check(g, node)
                if finding is not None:
                    found.append(finding)
    return found


def outcome(
    findings: Sequence[Finding],
    fx: Facts,
    nothing: str,
    show: Callable[[float], str] = count,
    conf: Sequence[Setting] | None = None,
) -> Outcome:
    """One check's outcome: the worst finding's severity, value and summary (with how many more),
    every finding in the details, the fixes as advice, the settings of the worst findings (or
    ``conf``) for the next run, their stages worst first, and the costs summed as impact."""
    if not findings:
        return make_result(severity=Severity.NONE, value=None, title=nothing)
    ranked = sorted(findings, key=lambda f: (-f.severity, -f.value))
    worst = ranked[0]
    more = len(ranked) - 1
    title = worst.summary + (f" (and {more} more)" if more else "")
    rows = tuple(
        (
            f.execution.execution_id,
            f.node.node_id if f.node is not None else None,
            f.node.name if f.node is not None else None,
            int(f.severity),
            show(f.value),
            f.summary,
            f.fix,
            f"{fmt_ms(f.cost_ms)} ({f.cost_basis})" if f.cost_ms else "unknown",
            ", ".join(map(str, f.stage_ids)),
        )
        for f in ranked[:MAX_ROWS]
    )
    fixes: list[str] = []
    for f in ranked:
        if f.severity == worst.severity and f.fix not in fixes:
            fixes.append(f.fix)
    return make_result(
        severity=worst.severity,
        value=worst.value,
        title=title,
        details=Details(_COLUMNS, rows),
        advice=" ".join(fixes[:3]),
        impact=_impact(ranked, fx),
        conf=merge_conf(*(f.conf for f in ranked if f.severity == worst.severity))
        if conf is None
        else tuple(conf),
        stages=stage_refs(ranked, fx),
    )
