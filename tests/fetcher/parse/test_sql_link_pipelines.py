"""The pipelines link._link_nodes groups nodes into: those a plain graph search finds."""

from __future__ import annotations

import random

from fetcher.parse.sql.graph import GraphNode, ParsedExecution
from fetcher.parse.sql.link import StageLinks, _link_nodes

_NAMES = ("Exchange", "WholeStageCodegen (1)", "WholeStageCodegen (2)", "Project", "Scan parquet")


def _execution(nodes: dict[int, GraphNode], edges: list[tuple[int, int]]) -> ParsedExecution:
    return ParsedExecution(1, "OK", "", None, None, [], [], [], nodes, edges, None, None)


def _expected_groups(ex: ParsedExecution) -> list[list[int]]:
    """Connected components over the links _link_nodes follows, by a breadth-first search."""
    links: dict[int, set[int]] = {nid: set() for nid in ex.nodes}
    clusters = {
        int(n.name.split("(")[1].rstrip(")")): nid
        for nid, n in ex.nodes.items()
        if n.name.startswith("WholeStageCodegen")
    }
    pairs = [
        (nid, clusters[n.codegen_id]) for nid, n in ex.nodes.items() if n.codegen_id in clusters
    ]
    for src, dst in ex.edges:
        if not (
            ex.nodes[src].name.endswith("Exchange")
            or ex.nodes[src].in_cached_plan
            or ex.nodes[dst].in_cached_plan
        ):
            pairs.append((src, dst))
    for a, b in pairs:
        links[a].add(b)
        links[b].add(a)
    seen: set[int] = set()
    groups = []
    for start in ex.nodes:
        if start in seen:
            continue
        group, todo = [], [start]
        seen.add(start)
        while todo:
            nid = todo.pop()
            group.append(nid)
            for other in links[nid] - seen:
                seen.add(other)
                todo.append(other)
        groups.append(sorted(group))
    return sorted(groups)


def _groups(labels: dict[int, int]) -> list[list[int]]:
    by_label: dict[int, list[int]] = {}
    for nid, label in labels.items():
        by_label.setdefault(label, []).append(nid)
    return sorted(sorted(g) for g in by_label.values())


def test_pipelines_are_the_connected_components_of_random_graphs() -> None:
    for seed in range(300):
        rnd = random.Random(seed)
        n = rnd.randint(1, 30)
        nodes = {
            i: GraphNode(
                i,
                rnd.choice(_NAMES),
                rnd.choice((None, None, 1, 2, 3)),
                {},
                in_cached_plan=rnd.random() < 0.1,
            )
            for i in range(n)
        }
        edges = [(rnd.randrange(n), rnd.randrange(n)) for _ in range(rnd.randint(0, 2 * n))]
        ex = _execution(nodes, edges)
        assert _groups(_link_nodes(ex, StageLinks())) == _expected_groups(ex), seed


def test_a_long_chain_is_one_pipeline() -> None:
    # edges in the order that makes the deepest trees without path halving
    n = 20_000
    nodes = {i: GraphNode(i, "Project", None, {}) for i in range(n)}
    labels = _link_nodes(_execution(nodes, [(i, i + 1) for i in range(n - 1)]), StageLinks())
    assert len(set(labels.values())) == 1
