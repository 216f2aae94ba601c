"""Reading SQL plans: walks over an execution's plan graph, and a typed view of file scans.

Not a heuristic (no `evaluate`): the shared reading of :class:`heuristics.appdata.SqlExecutionSummary`
for the SQL checks of this folder. Every walk is iterative and bounded, so a plan of any size or
depth is read without recursion.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from heuristics.appdata import SqlExecutionSummary, SqlPlanNode

#: Operators a row or size passes through unchanged, for finding what feeds a join or a write.
PASS_THROUGH = (
    "Sort",
    "AQEShuffleRead",
    "CustomShuffleReader",
    "Project",
    "Filter",
    "ColumnarToRow",
    "InputAdapter",
    "WholeStageCodegen",
    "ReusedExchange",
    "Coalesce",
)
JOINS = (
    "BroadcastHashJoin",
    "SortMergeJoin",
    "ShuffledHashJoin",
    "BroadcastNestedLoopJoin",
    "CartesianProduct",
)
_WALK_LIMIT = 100_000


K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """What ``build`` gives for the objects most recently asked about, kept per thread by
    identity (inputs hold dicts, so they do not hash): the SQL checks of one application each
    read the same facts and plan graphs, which are then worked out once instead of once per
    check. The object is kept with its value, so its id cannot be reused while it is."""

    def __init__(self, build: Callable[[K], V], keep: int = 256) -> None:
        self._build = build
        self._keep = keep
        self._local = threading.local()

    def __call__(self, key: K) -> V:
        """``build(key)``, from the memo when ``key`` itself was asked about lately."""
        try:
            memo: dict[int, tuple[K, V]] = self._local.memo
        except AttributeError:  # this thread's first call
            memo = self._local.memo = {}
        found = memo.get(id(key))
        if found is not None and found[0] is key:
            return found[1]
        value = self._build(key)
        if len(memo) >= self._keep:
            memo.clear()
        memo[id(key)] = (key, value)
        return value


class Graph:
    """One execution's plan graph with lookups by node id."""

    def __init__(self, ex: SqlExecutionSummary) -> None:
        self.ex = ex
        self.nodes: dict[int, SqlPlanNode] = {}
        self._clusters: dict[str, SqlPlanNode] = {}
        # Every check walks these; listed once per graph rather than filtered on each walk (one
        # pass over the nodes; the tests of is_cluster and ran written out).
        self._operators: list[SqlPlanNode] = []
        self._ran: list[SqlPlanNode] = []
        for n in ex.nodes:
            self.nodes[n.node_id] = n
            if n.name.startswith(_CLUSTER):
                self._clusters[n.name] = n
            else:
                self._operators.append(n)
                if not n.in_cached_plan and n.metrics:
                    self._ran.append(n)
        self._scans: dict[int, Scan | None] = {}
        self._ran_scans: list[tuple[SqlPlanNode, Scan]] | None = None

    def scan(self, node: SqlPlanNode) -> Scan | None:
        """:func:`scan_of` a node of this graph, read once."""
        key = node.node_id
        if self.nodes.get(key) is not node:  # not one of this graph's nodes
            return scan_of(node)
        if key not in self._scans:
            self._scans[key] = scan_of(node)
        return self._scans[key]

    def ran_scans(self) -> list[tuple[SqlPlanNode, Scan]]:
        """The operators that ran and are file scans, by node id, each with its :meth:`scan`
        (listed once per graph: several checks read only the scans)."""
        if self._ran_scans is None:
            self._ran_scans = [(n, s) for n in self._ran if (s := self.scan(n)) is not None]
        return self._ran_scans

    def operators(self) -> Iterator[SqlPlanNode]:
        """Nodes that are operators (codegen clusters left out), by node id."""
        return iter(self._operators)

    def ran(self) -> Iterator[SqlPlanNode]:
        """Operators that ran in this execution: with metrics, not in a cached relation's plan."""
        return iter(self._ran)

    def child(self, node: SqlPlanNode, i: int) -> SqlPlanNode | None:
        """The i-th child of a node (children by node id)."""
        if i >= len(node.children):
            return None
        return self.nodes.get(node.children[i])

    def parent(self, node: SqlPlanNode) -> SqlPlanNode | None:
        """The first parent of a node."""
        return self.nodes.get(node.parents[0]) if node.parents else None

    def descend(
        self,
        start: int,
        want: Callable[[SqlPlanNode], bool],
        through: Callable[[SqlPlanNode], bool] = lambda n: n.name.startswith(PASS_THROUGH),
    ) -> SqlPlanNode | None:
        """The first node from `start` down (itself included) that `want` accepts, going
        only through the nodes `through` accepts."""
        stack = [start]
        seen: set[int] = set()
        while stack and len(seen) < _WALK_LIMIT:
            nid = stack.pop()
            node = self.nodes.get(nid)
            if node is None or nid in seen:
                continue
            seen.add(nid)
            if want(node):
                return node
            if nid == start or through(node):
                stack.extend(reversed(node.children))
        return None

    def below(self, start: int) -> Iterator[SqlPlanNode]:
        """Every node under `start` (itself included)."""
        stack = [start]
        seen: set[int] = set()
        while stack and len(seen) < _WALK_LIMIT:
            nid = stack.pop()
            node = self.nodes.get(nid)
            if node is None or nid in seen:
                continue
            seen.add(nid)
            yield node
            stack.extend(node.children)

    def rows_of(self, nid: int) -> float | None:
        """Rows flowing out of a node: its row metric, else that of the first node below along
        single-child operators (Sort, AQEShuffleRead and Project count none), else the sum over
        several children when each is known."""
        todo: list[int] = [nid]
        total = 0.0
        steps = 0
        while todo and steps < _WALK_LIMIT:
            steps += 1
            node = self.nodes.get(todo.pop())
            if node is None:
                return None
            value = _row_count(node)
            if value is not None:
                total += value
            elif node.children:
                todo.extend(node.children)
            else:
                return None
        return total if not todo else None

    def scans_below(self, nid: int) -> list[Scan]:
        """The file scans under a node."""
        return [s for s in map(scan_of, self.below(nid)) if s is not None]

    def relation_name(self, nid: int) -> str | None:
        """A short name for the data under a node (for hints): a table, else a folder."""
        for scan in self.scans_below(nid):
            if scan.table:
                return scan.table.split(".")[-1]
            if scan.paths:
                parts = scan.paths[0].rstrip("/").split("/")
                seg = parts[-1]
                if "=" in seg and len(parts) > 1:  # a partition folder: name the table above it
                    seg = parts[-2]
                return seg or None
        return None

    def cluster(self, node: SqlPlanNode) -> SqlPlanNode | None:
        """The `WholeStageCodegen` cluster holding a node."""
        if node.codegen_id is None:
            return None
        return self._clusters.get(f"WholeStageCodegen ({node.codegen_id})")

    def pipeline_ms(self, node: SqlPlanNode) -> float | None:
        """The codegen pipeline time (summed over tasks) of the cluster holding a node."""
        cluster = self.cluster(node)
        return total(cluster, "duration") if cluster is not None else None


def _row_count(node: SqlPlanNode) -> float | None:
    for metric in ("number of output rows", "records read", "shuffle records written"):
        value = total(node, metric)
        if value is not None:
            return value
    return None


_CLUSTER = "WholeStageCodegen"


def is_cluster(node: SqlPlanNode) -> bool:
    """A `WholeStageCodegen (n)` cluster node rather than an operator."""
    return node.name.startswith(_CLUSTER)


def ran(node: SqlPlanNode) -> bool:
    """The node ran in its execution (nodes of a cached relation's plan carry no metrics)."""
    return not node.in_cached_plan and bool(node.metrics)


def total(node: SqlPlanNode, metric: str) -> float | None:
    """A metric's total (None when the node has no such metric, or it is an average)."""
    m = node.metrics.get(metric)
    return m.total if m is not None else None


def join_type(node: SqlPlanNode) -> str:
    """The join type, lower case without punctuation (`leftouter`); `inner` when not shown."""
    text = node.detail.get("Join type") or ""
    return re.sub(r"[^a-z]", "", text.lower().split("(")[0]) or "inner"


_ATTR_RE = re.compile(r"#\d+L?\b")


def strip_attr_ids(text: str) -> str:
    """`event_date#13` -> `event_date` (expression ids differ between runs)."""
    return _ATTR_RE.sub("", text)


_LIST_MARKS = re.compile(r"[,'\"`()\[\]{}]")
_NESTING = re.compile(r"['\"`()\[\]{}]")


def split_list(value: str) -> list[str]:
    """`'[IsNotNull(a), GreaterThan(b,1)]'` -> `['IsNotNull(a)', 'GreaterThan(b,1)']`:
    split at top-level commas, quotes and brackets respected."""
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    elif text.startswith("["):
        text = text[1:]  # cut by spark.sql.maxMetadataStringLength ("...")
    if _NESTING.search(text) is None:  # no quote or bracket: every comma separates two items
        return [item for item in map(str.strip, text.split(",")) if item]
    out: list[str] = []
    depth = 0
    quote: str | None = None
    start = 0  # where the current item begins
    # Only the quotes, brackets and commas change the state: the text between them is skipped.
    for m in _LIST_MARKS.finditer(text):
        ch = m.group()
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:  # a comma between items
            item = text[start : m.start()].strip()
            if item:
                out.append(item)
            start = m.end()
    item = text[start:].strip()
    if item:
        out.append(item)
    return out


def field_list(node: SqlPlanNode, key: str) -> list[str] | None:
    """A bracketed list field of the operator's plan text; None when the line is absent (the
    formatted plan leaves out empty lists)."""
    value = node.detail.get(key)
    return None if value is None else split_list(value)


@dataclass(frozen=True)
class Scan:
    """A file scan node read with its plan-text fields, each list field read when first asked
    for (most checks look at a scan's metrics and location only; a scan may read 500 columns)."""

    node: SqlPlanNode
    format: str
    table: str | None
    files: float | None
    bytes: float | None
    partitions: float | None
    scan_time_ms: float | None

    @functools.cached_property
    def paths(self) -> tuple[str, ...]:
        """The paths of the Location line (a path cut short with "..." left out)."""
        loc = self.node.detail.get("Location")
        if loc:
            m = _LOC_RE.match(loc.strip())
            if m:
                raw = [p.strip() for p in m.group("paths").rstrip("]").split(", ")]
                return tuple(p for p in raw if p and not p.startswith("..."))
        return ()

    @functools.cached_property
    def partition_filters(self) -> tuple[str, ...] | None:
        """The PartitionFilters; None: no such line (no partition filter)."""
        pf = field_list(self.node, "PartitionFilters")
        return tuple(pf) if pf is not None else None

    @functools.cached_property
    def pushed_filters(self) -> tuple[str, ...]:
        return tuple(field_list(self.node, "PushedFilters") or ())

    @functools.cached_property
    def data_filters(self) -> tuple[str, ...]:
        return tuple(field_list(self.node, "DataFilters") or ())

    @functools.cached_property
    def read_columns(self) -> dict[str, str]:
        """ReadSchema: column -> type."""
        read: dict[str, str] = {}
        schema = self.node.detail.get("ReadSchema", "")
        if schema.startswith("struct<") and schema.endswith(">"):
            for item in split_list(schema[7:-1]):
                if ":" in item:
                    k, v = item.split(":", 1)
                    read[k.strip("`")] = v
        return read

    @functools.cached_property
    def partition_columns(self) -> tuple[str, ...]:
        """Output columns not read from the files."""
        read = self.read_columns
        output = [strip_attr_ids(c).strip() for c in field_list(self.node, "Output") or []]
        return tuple(c for c in output if read and c not in read)

    @property
    def location(self) -> str:
        """The table, else the first path, else the node name."""
        return self.table or (self.paths[0] if self.paths else self.node.name)

    @property
    def location_key(self) -> str:
        """What identifies the same data across scans: the table or the sorted paths."""
        if self.table:
            return "table:" + self.table
        if self.paths:
            return "path:" + ",".join(sorted(p.rstrip("/") for p in self.paths))
        return "node:" + self.node.name


_LOC_RE = re.compile(r"^(?P<kind>[A-Za-z]+)\s*(?:\(\d+ paths?\))?\s*\[(?P<paths>.*)\]?\s*$")
_NOT_FILES = ("existingrdd", "onerowrelation", "range")


def scan_of(node: SqlPlanNode) -> Scan | None:
    """The scan view of a file-source scan node (`Scan parquet`, `Scan orc db.t`), else None."""
    words = node.name.split()
    if len(words) < 2 or words[0] not in ("Scan", "FileScan", "BatchScan"):
        return None
    fmt = words[1].lower()
    if fmt in _NOT_FILES:
        return None
    return Scan(
        node=node,
        format=fmt,
        table=" ".join(words[2:]) or None,
        files=total(node, "number of files read"),
        bytes=total(node, "size of files read"),
        partitions=total(node, "number of partitions read"),
        scan_time_ms=total(node, "scan time"),
    )


#: The plan graph of an execution, built once however many checks read it (see ByIdentity).
graph = ByIdentity(Graph)
