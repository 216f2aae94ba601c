"""The facts and plan graphs the SQL checks share: worked out once per application and execution,
and the same as reading them afresh."""

from __future__ import annotations

import copy
import dataclasses

from heuristics.builtin.sql import findings, no_partition_pruning, repeated_scan, small_files_read
from heuristics.builtin.sql.plan import ByIdentity, Graph, graph, scan_of
from tests.heuristics.builtin.sql.plans import execution, judge, node, sql_app


def _scan_execution() -> object:
    scan = node(
        1,
        "Scan parquet db.sales",
        metrics={"number of files read": 4000, "size of files read": 4e9},
        detail={
            "Location": "InMemoryFileIndex [hdfs://nn/warehouse/sales]",
            "PartitionFilters": "[]",
            "ReadSchema": "struct<id:bigint,amount:double>",
            "Output": "[id#1L, amount#2, day#3]",
        },
    )
    return execution(1, [node(0, "Project", children=[1]), scan])


def test_a_value_is_built_once_per_object_and_again_for_an_equal_copy() -> None:
    built: list[object] = []

    def build(key: list[int]) -> int:
        built.append(key)
        return sum(key)

    memo = ByIdentity(build, keep=2)
    first = [1, 2]
    assert memo(first) == 3 and memo(first) == 3
    assert built == [first]
    twin = copy.deepcopy(first)
    assert memo(twin) == 3
    assert len(built) == 2 and built[1] is twin  # equal is not the same: built again
    memo([5])  # the memo is full: it starts again, and the object kept so far is built anew
    memo(first)
    assert len(built) == 4


def test_the_shared_graph_reads_each_scan_as_scan_of_does() -> None:
    ex = _scan_execution()
    g = graph(ex)  # type: ignore[arg-type]
    assert g is graph(ex)  # type: ignore[arg-type]
    assert isinstance(g, Graph)
    scan_node = g.nodes[1]
    assert g.scan(scan_node) == scan_of(scan_node)
    assert g.scan(scan_node) is g.scan(scan_node)
    stranger = scan_node._replace(name="Scan orc db.other")  # same id, not this graph's node
    assert g.scan(stranger) == scan_of(stranger)
    assert g.scan(stranger).table == "db.other"  # type: ignore[union-attr]


def test_checks_judge_a_changed_application_on_its_own_facts() -> None:
    ex = _scan_execution()
    app = sql_app([ex])  # type: ignore[list-item]
    fx = findings.facts(app)
    assert findings.facts(app) is fx
    bigger = dataclasses.replace(
        app, spark_properties={**app.spark_properties, "spark.driver.memory": "1g"}
    )
    assert findings.facts(bigger) is not fx
    assert findings.facts(bigger).heap_bytes != fx.heap_bytes
    for check in (small_files_read, repeated_scan, no_partition_pruning):
        assert judge(check, app) == judge(check, copy.deepcopy(app))
