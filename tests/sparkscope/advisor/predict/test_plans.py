"""Plan shapes and their changes between runs."""

from __future__ import annotations

from heuristics.appdata import SqlExecutionSummary
from sparkscope.advisor.predict.plans import changes, reference, shapes
from tests.heuristics.builtin.sql.plans import execution, node, scan


def run(
    join: str = "BroadcastHashJoin",
    partitions: float = 1,
    pf: str | None = "[(day#1 = 1)]",
    files_written: float = 4,
    extra_op: str | None = None,
    desc: str = "enrich orders",
) -> SqlExecutionSummary:
    extra = {"PartitionFilters": pf} if pf else {}
    nodes = [
        node(
            0,
            "Execute InsertIntoHadoopFsRelationCommand",
            (1,),
            {"number of written files": files_written},
        ),
        node(1, join, (2, 3), detail={"Join type": "Inner"}),
        scan(2, location="file:/data/run-20240601/orders", partitions=partitions, extra=extra),
        scan(3, location="file:/data/customers"),
    ]
    if extra_op:
        nodes.append(node(4, extra_op, (0,)))
    return execution(0, nodes, desc)


def texts(old: SqlExecutionSummary, new: SqlExecutionSummary) -> list[str]:
    return [c.text for c in changes(shapes([old]), shapes([new]))]


def test_a_join_strategy_change_is_named_first() -> None:
    got = texts(run(), run("SortMergeJoin", extra_op="Window"))
    assert got[0] == "BroadcastHashJoin → SortMergeJoin in query 0 'enrich orders'"
    assert got[1] == "Window appeared in query 0 'enrich orders'"


def test_the_same_plan_on_other_days_and_sizes_is_no_change() -> None:
    other_day = run()._replace(
        nodes=tuple(
            n._replace(
                detail={
                    **n.detail,
                    "Location": n.detail["Location"].replace("20240601", "20240602"),
                }
            )
            if "Location" in n.detail
            else n
            for n in run().nodes
        )
    )
    assert texts(run(), other_day) == []
    assert texts(run(files_written=4), run(files_written=9)) == []  # twice as many, but 5 files


def test_lost_pruning_and_more_files_written_are_changes() -> None:
    got = texts(run(partitions=1), run(partitions=45, pf=None, files_written=1200))
    assert any("partitions 1 → 45" in t and "partition filter gone" in t for t in got)
    assert "files written 4 → 1,200 in query 0 'enrich orders'" in got


def test_queries_match_by_description_then_by_shape() -> None:
    renamed = run("SortMergeJoin", desc="enrich orders (v2)")
    assert texts(run(), renamed) == [
        "BroadcastHashJoin → SortMergeJoin in query 0 'enrich orders (v2)'"
    ]
    assert [
        c.kind
        for c in changes(
            shapes([run()]), shapes([run(), run(desc="new report")._replace(execution_id=1)])
        )
    ] == ["only_new"]


def test_the_reference_is_the_plan_most_earlier_runs_had() -> None:
    bhj, smj = shapes([run()]), shapes([run("SortMergeJoin")])
    assert reference([bhj, bhj, smj]) is not None
    assert [c.text for c in changes(reference([bhj, smj, bhj, smj, bhj]) or [], smj)] == [
        "BroadcastHashJoin → SortMergeJoin in query 0 'enrich orders'"
    ]
    assert changes(reference([bhj, smj, smj]) or [], smj) == []  # most runs already sort-merge
    assert reference([[], []]) is None
