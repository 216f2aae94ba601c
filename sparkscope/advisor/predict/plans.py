"""Plan shapes of SQL executions, and what changed between two runs of a recurring application.

A shape keeps what decides how a query runs and leaves out what changes every run: the join
strategies in plan order (``BroadcastHashJoin Inner``), the operators by kind, the scans (location
with digits as ``#`` so day folders and run ids compare equal; files, partitions and bytes read;
partition filters) and the files written. Executions are matched across runs by description (the
k-th execution with a description to the k-th one with it), then by a strategy-insensitive shape.

:func:`changes` says what differs, join strategies first: ``BroadcastHashJoin → SortMergeJoin in
query 3 'enrich orders'``. A scan's files, partitions or bytes, or the files written, count as
changed from a factor of :data:`SIZE_FACTOR` and a difference of :data:`MIN_COUNT_CHANGE` (bytes:
:data:`MIN_BYTES_CHANGE`); partition filters when they appear or vanish.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from heuristics.appdata import SqlExecutionSummary, SqlPlanNode
from heuristics.stats import fmt_bytes

SIZE_FACTOR = 2.0
#: ... and by at least this much: one file more or less is not a change of plan.
MIN_COUNT_CHANGE = 10
MIN_BYTES_CHANGE = 64 * 1024 * 1024
JOINS = (
    "BroadcastHashJoin",
    "SortMergeJoin",
    "ShuffledHashJoin",
    "BroadcastNestedLoopJoin",
    "CartesianProduct",
)
# operators that come and go with the join strategy or adaptive execution: left out of the
# strategy-insensitive shape that matches renamed queries
_STRATEGY_OPS = frozenset(
    {
        "Exchange",
        "BroadcastExchange",
        "Sort",
        "AQEShuffleRead",
        "ColumnarToRow",
        "InputAdapter",
        "CustomShuffleReader",
        "Project",
        "Filter",
        "AdaptiveSparkPlan",
    }
)
_SCAN_WORDS = ("Scan", "FileScan", "BatchScan")


@dataclass(frozen=True)
class ScanShape:
    """One scan of a shape."""

    location: str
    files: float | None
    partitions: float | None
    bytes: float | None
    partition_filters: int


@dataclass
class Shape:
    """The plan shape of one execution."""

    execution_id: int
    description: str
    joins: list[str]
    operators: dict[str, int]
    scans: list[ScanShape]
    files_written: float | None
    loose: str
    strict: str
    match_key: str = ""

    @property
    def label(self) -> str:
        """``query 3 'enrich orders'``."""
        desc = " ".join(self.description.split())[:60]
        return f"query {self.execution_id}" + (f" '{desc}'" if desc else "")


def _key(name: str) -> str:
    words = name.split()
    if not words:
        return ""
    return (
        " ".join(words[:2])
        if words[0] in (*_SCAN_WORDS, "Execute") and len(words) > 1
        else words[0]
    )


def _total(node: SqlPlanNode, metric: str) -> float | None:
    m = node.metrics.get(metric)
    return m.total if m is not None else None


def normalise_location(text: str) -> str:
    """Digits replaced by ``#``, so day partitions and run ids compare equal across runs."""
    return re.sub(r"\d+", "#", text.rstrip("/"))


def _location(node: SqlPlanNode) -> str:
    words = node.name.split()
    if len(words) > 2:
        return " ".join(words[2:])  # a catalog table
    loc = node.detail.get("Location", "")
    m = re.search(r"\[(.*?)\]?$", loc)
    return (m.group(1) if m else loc) or node.name


def _partition_filters(node: SqlPlanNode) -> int:
    text = node.detail.get("PartitionFilters", "")
    return len(
        [
            f
            for f in re.split(r",\s*(?![^()]*\))", text.strip("[]"))
            if f and not f.lower().startswith("isnotnull")
        ]
    )


def _hash(parts: Sequence[str]) -> str:
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:12]


def shape_of(ex: SqlExecutionSummary) -> Shape:
    """The shape of one execution, from the nodes that ran."""
    ops = [
        n
        for n in ex.nodes
        if not n.in_cached_plan and n.metrics and not n.name.startswith("WholeStageCodegen")
    ]
    joins = [
        f"{n.name.split()[0]} {(n.detail.get('Join type') or '').strip()}".strip()
        for n in ops
        if n.name.startswith(JOINS)
    ]
    counts = Counter(
        _key(n.name) for n in ops if _key(n.name) not in ("AdaptiveSparkPlan", "AQEShuffleRead")
    )
    scans = [
        ScanShape(
            normalise_location(_location(n)),
            _total(n, "number of files read"),
            _total(n, "number of partitions read"),
            _total(n, "size of files read"),
            _partition_filters(n),
        )
        for n in ops
        if n.name.split(" ")[0] in _SCAN_WORDS
    ]
    written = [w for w in (_total(n, "number of written files") for n in ops) if w is not None]
    loose = [
        "Join" if n.name.startswith(JOINS) else _key(n.name)
        for n in ops
        if _key(n.name) not in _STRATEGY_OPS
    ]
    strict = [
        _key(n.name) if not n.name.startswith(JOINS) else j
        for n, j in zip(ops, _labels(ops), strict=True)
    ]
    return Shape(
        execution_id=ex.execution_id,
        description=ex.description,
        joins=joins,
        operators=dict(counts),
        scans=scans,
        files_written=sum(written) if written else None,
        loose=_hash(loose),
        strict=_hash(strict + [s.location for s in scans]),
    )


def _labels(ops: Sequence[SqlPlanNode]) -> list[str]:
    return [f"{n.name.split()[0]} {n.detail.get('Join type', '')}".strip() for n in ops]


def shapes(executions: Sequence[SqlExecutionSummary]) -> list[Shape]:
    """The shapes of a run's executions, each with the key that matches it in other runs."""
    out = [shape_of(ex) for ex in executions]
    seen: Counter[str] = Counter()
    for s in out:
        desc = " ".join(s.description.split())
        base = f"desc:{desc}" if desc else f"shape:{s.loose}"
        s.match_key = f"{base}#{seen[base]}"
        seen[base] += 1
    return out


def signature(run: Sequence[Shape]) -> tuple[tuple[str, str], ...]:
    """What identifies a run's plans as a whole (the same queries with the same shapes)."""
    return tuple(sorted((s.match_key, s.strict) for s in run))


def reference(runs: Sequence[Sequence[Shape]]) -> Sequence[Shape] | None:
    """Of earlier runs (oldest first), the plans most of them had: the run whose signature is
    the most common, the latest of those on a tie; None without runs with SQL."""
    with_sql = [r for r in runs if r]
    if not with_sql:
        return None
    counts = Counter(signature(r) for r in with_sql)
    best = max(counts.values())
    return next(r for r in reversed(with_sql) if counts[signature(r)] == best)


@dataclass(frozen=True)
class PlanChange:
    """One difference between two runs' plans."""

    kind: str  # join | operators | scan | write | only_old | only_new
    text: str
    old_execution_id: int | None = None
    new_execution_id: int | None = None
    details: dict[str, object] = field(default_factory=dict)


def _moved(a: float | None, b: float | None, least: float = MIN_COUNT_CHANGE) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    lo, hi = sorted((abs(a), abs(b)))
    return hi - lo >= least and (lo == 0 or hi / lo >= SIZE_FACTOR)


def _pairs(
    old: Sequence[Shape], new: Sequence[Shape]
) -> tuple[list[tuple[Shape, Shape]], list[Shape], list[Shape]]:
    by_key = {s.match_key: s for s in new}
    pairs, left = [], []
    taken: set[str] = set()
    for s in old:
        t = by_key.get(s.match_key)
        if t is not None:
            pairs.append((s, t))
            taken.add(t.match_key)
        else:
            left.append(s)
    loose: dict[str, list[Shape]] = {}
    for t in new:
        if t.match_key not in taken:
            loose.setdefault(t.loose, []).append(t)
    only_old = []
    for s in left:
        candidates = loose.get(s.loose)
        if candidates:
            t = candidates.pop(0)
            pairs.append((s, t))
            taken.add(t.match_key)
        else:
            only_old.append(s)
    return pairs, only_old, [t for t in new if t.match_key not in taken]


def _fmt(v: float | None) -> str:
    return "none" if v is None else f"{v:,.0f}"


def _size(v: float | None) -> str:
    return "none" if v is None else fmt_bytes(v)


def changes(old: Sequence[Shape], new: Sequence[Shape]) -> list[PlanChange]:
    """What changed from the ``old`` run's plans to the ``new`` one's, join strategies first."""
    out: list[PlanChange] = []
    pairs, only_old, only_new = _pairs(old, new)
    for s, t in pairs:
        q = t.label
        if s.joins != t.joins:
            if len(s.joins) == len(t.joins):
                for a, b in zip(s.joins, t.joins, strict=True):
                    if a.split()[0] != b.split()[0]:
                        out.append(
                            PlanChange(
                                "join",
                                f"{a.split()[0]} → {b.split()[0]} in {q}",
                                s.execution_id,
                                t.execution_id,
                                {"old": a, "new": b},
                            )
                        )
                    elif a != b:
                        out.append(
                            PlanChange(
                                "join",
                                f"{a} → {b} (join type) in {q}",
                                s.execution_id,
                                t.execution_id,
                                {"old": a, "new": b},
                            )
                        )
            else:
                out.append(
                    PlanChange(
                        "join",
                        f"joins {', '.join(s.joins) or 'none'} → {', '.join(t.joins) or 'none'} in {q}",
                        s.execution_id,
                        t.execution_id,
                        {"old": s.joins, "new": t.joins},
                    )
                )
        added = {
            k: t.operators[k] - s.operators.get(k, 0)
            for k in t.operators
            if t.operators[k] > s.operators.get(k, 0)
        }
        removed = {
            k: s.operators[k] - t.operators.get(k, 0)
            for k in s.operators
            if s.operators[k] > t.operators.get(k, 0)
        }
        for k in (*_STRATEGY_OPS, *JOINS):  # explained by the join change, or noise
            added.pop(k, None)
            removed.pop(k, None)
        if added or removed:
            parts = [
                f"{k} appeared" + (f" ({n}x)" if n > 1 else "") for k, n in sorted(added.items())
            ]
            parts += [
                f"{k} vanished" + (f" ({n}x)" if n > 1 else "") for k, n in sorted(removed.items())
            ]
            out.append(
                PlanChange(
                    "operators",
                    f"{'; '.join(parts)} in {q}",
                    s.execution_id,
                    t.execution_id,
                    {"added": added, "removed": removed},
                )
            )
        out.extend(_scan_changes(s, t, q))
        if _moved(s.files_written, t.files_written):
            out.append(
                PlanChange(
                    "write",
                    f"files written {_fmt(s.files_written)} → {_fmt(t.files_written)} in {q}",
                    s.execution_id,
                    t.execution_id,
                )
            )
    out += [PlanChange("only_old", f"{s.label} is gone", s.execution_id, None) for s in only_old]
    out += [PlanChange("only_new", f"{t.label} is new", None, t.execution_id) for t in only_new]
    order = {"join": 0, "operators": 1, "scan": 2, "write": 3, "only_old": 4, "only_new": 5}
    return sorted(out, key=lambda c: order[c.kind])


def _scan_changes(s: Shape, t: Shape, q: str) -> list[PlanChange]:
    out = []
    old: dict[str, list[ScanShape]] = {}
    new: dict[str, list[ScanShape]] = {}
    for sc in s.scans:
        old.setdefault(sc.location, []).append(sc)
    for sc in t.scans:
        new.setdefault(sc.location, []).append(sc)
    for loc in sorted(set(old) | set(new)):
        a_list, b_list = old.get(loc, []), new.get(loc, [])
        if len(a_list) != len(b_list):
            out.append(
                PlanChange(
                    "scan",
                    f"scans of {loc} {len(a_list)} → {len(b_list)} in {q}",
                    s.execution_id,
                    t.execution_id,
                )
            )
            continue
        for a, b in zip(a_list, b_list, strict=True):
            moved = [
                f"{k} {show(getattr(a, k))} → {show(getattr(b, k))}"
                for k, show, least in (
                    ("files", _fmt, MIN_COUNT_CHANGE),
                    ("partitions", _fmt, MIN_COUNT_CHANGE),
                    ("bytes", _size, MIN_BYTES_CHANGE),
                )
                if _moved(getattr(a, k), getattr(b, k), least)
            ]
            if (a.partition_filters > 0) != (b.partition_filters > 0):
                moved.append("partition filter " + ("gone" if a.partition_filters else "added"))
            if moved:
                out.append(
                    PlanChange(
                        "scan",
                        f"scan of {loc}: {', '.join(moved)} in {q}",
                        s.execution_id,
                        t.execution_id,
                    )
                )
    return out
