"""The ``planDescription`` of a SQL execution (Spark's formatted explain), split into parts.

The text is a tree (``+- * SortMergeJoin Inner (15)``), then one block per operator
(``(15) SortMergeJoin [codegen id : 5]`` followed by ``Key: value`` lines), then the subqueries.
Under adaptive execution the tree holds ``== Final Plan ==`` and ``== Initial Plan ==`` (or
``== Current Plan ==``) branches below each ``AdaptiveSparkPlan``, also nested ones inside a cached
relation. Tree lines are read by the column where the operator name starts; every walk is
iterative, so a plan of any depth parses.

Bounds: :data:`PLAN_PARSE_MAX_CHARS` of a description are parsed at all (beyond it the trees and
blocks are partial and a note says so); the text kept for display is cut elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from fetcher.parse.sql.metrics import parse_quantity
from fetcher.parse.sql.opblocks import (
    FIELD_KEEP_CHARS,
    LINE_PAREN_RE,
    OpDetail,
    _detail_head,
    read_field,
)

PLAN_PARSE_MAX_CHARS = 8 * 1024 * 1024


@dataclass(slots=True)
class TreeOp:
    """One line of a plan tree: an operator (``op_id`` is its ``(n)``) or a section marker."""

    op_id: int | None
    name: str
    marker: str | None = None  # "Final Plan" / "Initial Plan" / "Current Plan" on marker lines
    section: str = "plain"  # final | initial | current | plain | subquery
    stats_size_bytes: float | None = None
    stats_rows: float | None = None
    children: list[TreeOp] = field(default_factory=list, repr=False)
    column: int = 0

    @property
    def key(self) -> str:
        """The matching key shared with graph nodes (:func:`op_key`)."""
        return op_key(self.name)


@dataclass
class PlanSubquery:
    """A subquery section: the operator hosting it and its tree."""

    hosting_op_id: int | None
    expression: str
    root: TreeOp | None


@dataclass
class PlanText:
    """A parsed ``planDescription``."""

    chars: int
    adaptive: bool
    roots: list[TreeOp]
    subqueries: list[PlanSubquery]
    details: dict[int, OpDetail]
    notes: list[str] = field(default_factory=list)

    def executed_ops(self, dedupe_exchanges: bool = True) -> list[TreeOp]:
        """Operators that ran, in the graph's pre-order: final (else current, else initial) AQE
        branches, each subquery after its hosting operator's children; marker lines left out.

        ``dedupe_exchanges``: an exchange met again (reuse, a cached plan printed twice) is drawn
        by the SHS graph as an edge to the first one, so its subtree is not walked again.
        """
        return self.executed_walk(dedupe_exchanges)[0]

    def executed_walk(self, dedupe_exchanges: bool = True) -> tuple[list[TreeOp], bool]:
        """:meth:`executed_ops`, and whether an exchange met again was left out (when none was,
        both readings are the same list)."""
        hosted: dict[int, list[TreeOp]] = {}
        for sq in self.subqueries:
            if sq.root is not None and sq.hosting_op_id is not None:
                hosted.setdefault(sq.hosting_op_id, []).append(sq.root)
        out: list[TreeOp] = []
        seen_hosts: set[int] = set()
        seen_exchanges: set[int] = set()
        repeated = False
        stack: list[TreeOp] = list(reversed(self.roots))
        while stack:
            op = stack.pop()
            if op.marker is None:
                if dedupe_exchanges and op.op_id is not None:
                    first = op.name.partition(" ")[0]  # (_is_exchange written out)
                    if ("Exchange" in first and first != "ReusedExchange") or first == "Subquery":
                        if op.op_id in seen_exchanges:
                            repeated = True
                            continue
                        seen_exchanges.add(op.op_id)
                out.append(op)
            kids = op.children
            for c in kids:  # (_executed_children's test written out: most have no marker)
                if c.marker:
                    kids = _executed_children(op)
                    break
            if op.op_id is not None and op.op_id in hosted and op.op_id not in seen_hosts:
                seen_hosts.add(op.op_id)
                kids = kids + hosted[op.op_id]
            stack.extend(reversed(kids))
        return out, repeated

    def initial_ops(self) -> list[TreeOp]:
        """Operators of the ``== Initial Plan ==`` branches (what adaptive execution started from)."""
        return [op for op in walk(self.roots) if op.section == "initial" and op.marker is None]


def _is_exchange(name: str) -> bool:
    first = name.partition(" ")[0]
    return ("Exchange" in first and first != "ReusedExchange") or first == "Subquery"


def _executed_children(op: TreeOp) -> list[TreeOp]:
    for c in op.children:
        if c.marker:
            break
    else:
        return op.children  # no marker among them (not changed by the caller)
    markers = {c.marker: c for c in op.children if c.marker}
    plain = [c for c in op.children if not c.marker]
    for wanted in ("Final Plan", "Current Plan", "Initial Plan"):
        if wanted in markers:
            return plain + markers[wanted].children
    return plain


def walk(roots: Iterable[TreeOp]) -> Iterator[TreeOp]:
    """Every line of the trees in pre-order (iteratively)."""
    stack = list(reversed(list(roots)))
    while stack:
        op = stack.pop()
        yield op
        stack.extend(reversed(op.children))


def op_key(name: str) -> str:
    """The key shared by plan-text operators and graph nodes: the first word
    (``SortMergeJoin Inner`` -> ``SortMergeJoin``), two words for ``Scan x`` / ``Execute X``."""
    words = name.replace("*", " ").split()
    if not words:
        return ""
    if words[0] in ("Scan", "Execute", "BatchScan", "FileScan") and len(words) > 1:
        return words[0] + " " + words[1]
    return words[0]


_TREE_CHARS = " :|+-"  # the drawing left of an operator's name
_OP_ID_RE = re.compile(r"\((\d+)\)")
# (``(?:x|)`` matches as ``(?:x)?`` does, without the regex engine's slow general repeat)
_STATS_TEXT_RE = re.compile(r"Statistics\(sizeInBytes=([^,)]+)(?:,\s*rowCount=([^,)]+)|)")
_SUBQ_HEAD_RE = re.compile(
    r"^Subquery:\d+\s+Hosting operator id\s*=\s*(\d+)\s+Hosting Expression\s*=\s*(.*)$"
)
_SECTIONS = {"Final Plan": "final", "Initial Plan": "initial", "Current Plan": "current"}


def parse_plan(text: str) -> PlanText:
    """Split a ``planDescription`` into trees, subqueries and per-operator blocks; never raises."""
    notes: list[str] = []
    text = text if isinstance(text, str) else ""
    if len(text) > PLAN_PARSE_MAX_CHARS:
        notes.append(
            f"plan text of {len(text):,} chars: only the first {PLAN_PARSE_MAX_CHARS:,} read"
        )
    read = text[:PLAN_PARSE_MAX_CHARS]
    # The tree ends at a blank line, at the latest at the first empty one after the first text:
    # only the lines up to that one are split off (the blocks below are read from ``rest``).
    cut = read.find("\n\n", len(read) - len(read.lstrip()))
    lines = (read[: cut + 1] if cut >= 0 else read).split("\n")
    n = len(lines)
    i = 0
    while i < n and not lines[i].strip():
        i += 1
    if i < n and lines[i].strip().startswith("== "):
        i += 1  # "== Physical Plan =="
    tree_start = i
    while i < n and lines[i].strip():
        i += 1
    roots, adaptive = _parse_tree(lines[tree_start:i], notes)
    subqueries: list[PlanSubquery] = []
    details: dict[int, OpDetail] = {}
    in_subqueries = False
    # The rest, after the blank line that ends the tree: blocks between empty lines. An empty
    # line ends the block being read, so each block reads alone (only "in the subqueries"
    # carries over), and its empty first or last lines change nothing.
    rest = read[sum(map(len, lines[: i + 1])) + i + 1 :]
    for block in rest.split("\n\n"):
        block = block.strip("\n")
        # Nearly every block is an operator's head and its fields: its lines are left for
        # OpDetail.fields to read when asked for, when none of them could start another block or
        # section (a head, a "=====" line) -- what else a line holds concerns that operator alone.
        if not in_subqueries and len(block) <= FIELD_KEEP_CHARS:
            parts = _detail_head(block.partition("\n")[0].strip())
            if parts is not None and "=====" not in block and not LINE_PAREN_RE.search(block):
                op_id, name, codegen_id = parts
                if op_id not in details:  # (the first block of an id is kept)
                    # (arguments by position: a keyword doubles the cost of the call)
                    details[op_id] = OpDetail(op_id, name[:500], codegen_id, None, block)
                continue
        in_subqueries = _read_block(block.split("\n"), in_subqueries, details, subqueries, notes)
    return PlanText(len(text), adaptive, roots, subqueries, details, notes)


def _read_block(
    lines: list[str],
    in_subqueries: bool,
    details: dict[int, OpDetail],
    subqueries: list[PlanSubquery],
    notes: list[str],
) -> bool:
    """Read one block line by line into ``details`` and ``subqueries``; returns whether the text
    is in the subqueries section after it."""
    current: OpDetail | None = None
    last_field: str | None = None
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        i += 1
        stripped = line.strip()
        if not stripped:
            current, last_field = None, None
            continue
        if stripped.startswith("=====") and stripped.endswith("====="):
            in_subqueries = "Subquer" in stripped
            current = None
            continue
        # the head regexes only where their first characters are
        m = _SUBQ_HEAD_RE.match(stripped) if in_subqueries and stripped[0] == "S" else None
        if m:
            sub_start = i
            while i < n and lines[i].strip() and _detail_head(lines[i].strip()) is None:
                i += 1
            sub_roots = _parse_tree(lines[sub_start:i], notes, section="subquery")[0]
            root = sub_roots[0] if sub_roots else None
            subqueries.append(PlanSubquery(int(m.group(1)), m.group(2)[:500], root))
            current = None
            continue
        parts = _detail_head(stripped) if stripped[0] == "(" else None
        if parts is not None and (current is None or not line.startswith(" ")):
            op_id, name, codegen_id = parts
            current = OpDetail(op_id, name[:500], codegen_id)
            details.setdefault(op_id, current)
            last_field = None
            continue
        if current is None:
            continue
        last_field = read_field(current.fields, stripped, last_field)
    return in_subqueries


def _parse_tree(
    lines: list[str], notes: list[str], section: str = "plain"
) -> tuple[list[TreeOp], bool]:
    """The trees of ``lines``, and whether they hold a section marker (an adaptive plan)."""
    roots: list[TreeOp] = []
    stack: list[TreeOp] = []
    adaptive = False
    op_id_search, stats_search = _OP_ID_RE.search, _STATS_TEXT_RE.search
    for raw in lines:
        content = raw.lstrip(_TREE_CHARS)
        col = len(raw) - len(content)
        content = content.rstrip()
        if not content:
            continue
        if content[0] == "=" and content.startswith("== ") and content.endswith("=="):
            label = content.strip("= ").strip()
            marker = TreeOp(None, label, marker=label, column=col)
            adaptive = adaptive or bool(label)
            # a marker belongs to the innermost open AdaptiveSparkPlan at or left of its column
            while stack and (
                stack[-1].column > col or (stack[-1].column == col and stack[-1].marker)
            ):
                stack.pop()
            while stack and not stack[-1].name.startswith("AdaptiveSparkPlan"):
                stack.pop()
            # a marker names the section of the branch below it ("subquery" stays, but for the
            # initial plan of a subquery)
            sec = _SECTIONS.get(label, stack[-1].section if stack else section)
            marker.section = "subquery" if section == "subquery" and sec != "initial" else sec
            if stack:
                stack[-1].children.append(marker)
            else:
                notes.append(f"plan marker '{label}' outside an AdaptiveSparkPlan")
                roots.append(marker)
            stack.append(marker)
            continue
        # "[* ]Name (id)rest": the first "(digits)" ends the name
        m = op_id_search(content)
        size = rows = None
        if m:
            start = 1 if content[0] == "*" and content[1:2].isspace() else 0
            op_id: int | None = int(m[1])
            id_start, id_end = m.span()
            name = content[start:id_start].strip()[:500]
            # in what follows the id (most lines end with it)
            sm = stats_search(content, id_end) if id_end < len(content) else None
            if sm:
                size = parse_quantity(sm.group(1))[0]
                if sm.group(2):
                    rows = parse_quantity(sm.group(2))[0]
        else:
            op_id, name = None, content.lstrip("* ").strip()[:500]
        while stack:
            top = stack[-1]
            if top.column > col or (top.column == col and not top.marker):
                stack.pop()
            else:
                break
        if stack:
            op = TreeOp(op_id, name, None, stack[-1].section, size, rows, [], col)
            stack[-1].children.append(op)
        else:
            op = TreeOp(op_id, name, None, section, size, rows, [], col)
            roots.append(op)
        stack.append(op)
    return roots, adaptive
