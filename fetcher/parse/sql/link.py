"""Which stages each SQL execution and each of its plan nodes ran in.

1. Execution -> stages: the execution's job ids and those jobs' ``stageIds``. A later job lists an
   already computed shuffle-map stage again (skipped there), so a stage belongs to the lowest job
   id listing it; stages that never ran (not among the fetched stage attempts) are left out.
2. Node -> stages: the ``(stage S.A: task T)`` inside its metric strings. A node without one takes
   the stages of its pipeline: the nodes joined by codegen clusters and by graph edges that do not
   leave an exchange (an exchange's write side runs in the map stage below it; its read-side
   metrics name the stage of its parent).
3. A stage whose tasks printed no stage id (a one-task stage prints plain totals) is matched by a
   figure that must be equal: its shuffle records written to an Exchange's, its input records to a
   scan's output rows, its output records to a write command's, its shuffle records read to an
   Exchange's records read -- when exactly one node has that figure. A single stage left over
   then takes the operators left over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from fetcher.parse.sql.graph import GraphNode, ParsedExecution
from fetcher.parse.sql.metrics import STAGE_AT

_READ_SIDE = frozenset(
    {
        "fetch wait time",
        "local bytes read",
        "remote bytes read",
        "remote bytes read to disk",
        "local blocks read",
        "remote blocks read",
        "records read",
        "remote reqs duration",
    }
)
# (stage field, node metric, which nodes may have it)
_FIGURES = (
    ("shuffle_write_records", "shuffle records written", "write"),
    ("input_records", "number of output rows", "scan"),
    ("output_records", "number of output rows", "command"),
    ("shuffle_read_records", "records read", "read"),
)


@dataclass
class StageLinks:
    """Execution <-> stage <-> node maps of one application."""

    execution_stages: dict[int, set[int]] = field(default_factory=dict)
    #: execution id -> node id -> the stages the node ran in
    node_stages: dict[int, dict[int, set[int]]] = field(default_factory=dict)

    def nodes_of(self, execution_id: int) -> dict[int, set[int]]:
        """Node id -> stages, for one execution."""
        return self.node_stages.setdefault(execution_id, {})


_NONE: frozenset[int] = frozenset()


_stage_key = itemgetter("stage_id", "attempt_id")
_job_key = itemgetter("job_id")


def link_stages(
    executions: Iterable[ParsedExecution],
    jobs: Iterable[Mapping[str, Any]],
    stages: Iterable[Mapping[str, Any]],
) -> StageLinks:
    """The maps, from the parsed executions and the application's job and stage rows."""
    execs = list(executions)
    links = StageLinks()
    # (each stage's latest attempt: a later one replaces an earlier one)
    by_stage: dict[int, Mapping[str, Any]] = {
        st["stage_id"]: st for st in sorted(stages, key=_stage_key)
    }
    job_exec: dict[int, int] = {}
    for ex in execs:
        for j in ex.job_ids:
            job_exec.setdefault(j, ex.execution_id)
    owner: dict[int, int] = {}
    for job in sorted(jobs, key=_job_key):
        exec_id = job_exec.get(job["job_id"])
        if exec_id is None:
            continue
        for s in job.get("stage_ids") or ():
            if s in by_stage:
                owner.setdefault(s, exec_id)
    for s, exec_id in owner.items():
        links.execution_stages.setdefault(exec_id, set()).add(s)
    components = {ex.execution_id: _link_nodes(ex, links) for ex in execs}
    for exec_id, per_node in links.node_stages.items():
        for s in {s for ids in per_node.values() for s in ids}:
            if s in by_stage and s not in owner:
                # a job outside the listing: the metric string is the only link
                owner[s] = exec_id
                links.execution_stages.setdefault(exec_id, set()).add(s)
    for ex in execs:
        named = _match_figures(ex, links, by_stage, components[ex.execution_id])
        _pair_leftovers(ex, links, named)
    return links


def _assign(links: StageLinks, ex: ParsedExecution, nids: Iterable[int], stage_id: int) -> None:
    for nid in nids:
        links.nodes_of(ex.execution_id).setdefault(nid, set()).add(stage_id)


def _named_stages(links: StageLinks, exec_id: int) -> set[int]:
    return {s for ids in links.nodes_of(exec_id).values() for s in ids}


def _candidates(ops: list[GraphNode], metric: str, side: str, value: float) -> list[GraphNode]:
    out = []
    for n in ops:
        if n.in_cached_plan or n.total(metric) != value:
            continue
        if side in ("write", "read") and n.name != "Exchange":
            continue
        if side == "scan" and not n.name.startswith("Scan"):
            continue
        if side == "command" and not n.name.startswith("Execute"):
            continue
        out.append(n)
    return out


def _match_figures(
    ex: ParsedExecution,
    links: StageLinks,
    by_stage: Mapping[int, Mapping[str, Any]],
    comp: Mapping[int, int],
) -> set[int]:
    """Stages without a stage id in any metric, matched by figures (module doc, step 3); returns
    the stages the execution's nodes name after it."""
    named = _named_stages(links, ex.execution_id)
    unnamed = [
        s
        for s in sorted(links.execution_stages.get(ex.execution_id, ()))
        if s not in named and s in by_stage
    ]
    if not unnamed:
        return named
    members: dict[int, list[int]] = {}
    for nid, root in comp.items():
        if not ex.nodes[nid].in_cached_plan:
            members.setdefault(root, []).append(nid)
    ops = ex.operators()
    for s in unnamed:
        picked: list[int] = []
        for field_name, metric, side in _FIGURES:
            value = by_stage[s].get(field_name)
            if not isinstance(value, int | float) or value <= 0:
                continue
            cands = _candidates(ops, metric, side, value)
            if len(cands) != 1:
                continue
            node = cands[0]
            if side == "read":
                for p in node.parents:
                    picked.extend(members.get(comp.get(p, p), [p]))
            elif side == "write":
                picked.append(node.node_id)
                for c in node.children:
                    picked.extend(members.get(comp.get(c, c), [c]))
            else:
                picked.extend(members.get(comp.get(node.node_id, node.node_id), [node.node_id]))
        if picked:
            _assign(links, ex, sorted(set(picked)), s)
    return _named_stages(links, ex.execution_id)


def _pair_leftovers(ex: ParsedExecution, links: StageLinks, named: set[int]) -> None:
    """One stage of the execution that no node names (``named``: the stages its nodes name) gets
    the operators no stage claimed."""
    unnamed = [s for s in links.execution_stages.get(ex.execution_id, ()) if s not in named]
    if len(unnamed) != 1:
        return
    linked = links.node_stages.get(ex.execution_id, {})
    orphans = [
        n.node_id
        for n in ex.operators()
        if not n.in_cached_plan and n.metrics and n.node_id not in linked
    ]
    _assign(links, ex, orphans, unnamed[0])


def _link_nodes(ex: ParsedExecution, links: StageLinks) -> dict[int, int]:
    """Direct and inherited node stages (module doc, step 2); returns node -> pipeline label (the
    same for the nodes of one pipeline; only which nodes share one matters)."""
    nodes = ex.nodes
    exchanges: set[int] = set()
    direct: dict[int, set[int]] = {}  # (every node that ran; _NONE when it names no stage)
    carried: dict[int, set[int]] = {}  # read-side stages of an exchange, for its parents
    cluster_of: dict[int, int] = {}
    coded: list[tuple[int, int]] = []  # (node, its codegen id)
    for nid, node in nodes.items():
        name = node.name
        exchange = name.endswith("Exchange")
        if exchange:
            exchanges.add(nid)
        if name.startswith("WholeStageCodegen"):  # GraphNode.is_cluster
            try:
                cluster_of[int(name.split("(")[1].rstrip(")"))] = nid
            except (IndexError, ValueError):
                pass
        if node.codegen_id is not None:
            coded.append((nid, node.codegen_id))
        if node.in_cached_plan:
            continue
        ids: set[int] = _NONE  # type: ignore[assignment]  # (made when a stage is found)
        for metric, m in node.metrics.items():
            stage_id = m[STAGE_AT]
            if stage_id is None:
                continue
            if exchange and metric in _READ_SIDE:
                if nid in carried:
                    carried[nid].add(stage_id)
                else:
                    carried[nid] = {stage_id}
            elif ids:
                ids.add(stage_id)
            else:
                ids = {stage_id}
        direct[nid] = ids
    # Union-find over the pipelines' links, with path halving (written out: no call per step).
    parent_of = dict(zip(nodes, nodes, strict=True))
    pairs = [(nid, cluster_of[cg]) for nid, cg in coded if cg in cluster_of] if cluster_of else []
    for src, dst in ex.edges:
        if not (src in exchanges or nodes[src].in_cached_plan or nodes[dst].in_cached_plan):
            pairs.append((src, dst))
    for a, b in pairs:
        while (up := parent_of[a]) != a:
            parent_of[a] = a = parent_of[up]
        while (up := parent_of[b]) != b:
            parent_of[b] = b = parent_of[up]
        if a != b:
            parent_of[a] = b
    root: dict[int, int] = {}
    for nid in nodes:
        r = nid
        while (up := parent_of[r]) != r:
            parent_of[r] = r = parent_of[up]
        root[nid] = r
    comp_ids: dict[int, set[int]] = {}
    for nid, ids in direct.items():
        if ids:
            r = root[nid]
            if r in comp_ids:
                comp_ids[r] |= ids
            else:
                comp_ids[r] = set(ids)
    if carried:
        for src, dst in ex.edges:
            if src in carried:
                comp_ids.setdefault(root[dst], set()).update(carried[src])
    found: dict[int, set[int]] = {}
    for nid, own in direct.items():
        inherited = comp_ids.get(root[nid], _NONE)
        if nid in exchanges:
            if own or inherited:
                found[nid] = set(own or inherited)
        elif own:
            found[nid] = own | inherited
        elif inherited:
            found[nid] = set(inherited)
    if found:  # (the execution's map is made only when a node has stages, as before)
        links.nodes_of(ex.execution_id).update(found)
    return root
