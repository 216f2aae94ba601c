"""Reading the /sql answer: metric strings, plan text, graph <-> text matching, the recorded real
answers, old servers' partial answers, very large and deep plans, and damaged bodies."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from fetcher.parse.sql.metrics import canonical_metric_name, parse_metric, parse_quantity
from fetcher.parse.sql.plantext import parse_plan
from fetcher.parse.sql.rows import PLAN_TEXT_KEEP_CHARS, parse_bodies, sql_rows

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024**2


def recorded_sql_bodies(corpus: str) -> list[list[bytes]]:
    """Per recorded application of a demo corpus, its /sql page bodies in offset order."""
    index = json.loads((ROOT / "demo" / corpus / "index.json").read_text())["requests"]
    by_app: dict[str, list[tuple[int, bytes]]] = {}
    for key, rel in index.items():
        path, _, query = key.partition("?")
        if path.endswith("/sql"):
            offset = int(dict(p.split("=", 1) for p in query.split("&"))["offset"])
            body = (ROOT / "demo" / corpus / rel).read_bytes()
            by_app.setdefault(path.split("/")[1], []).append((offset, body))
    return [[b for _, b in sorted(pages)] for _, pages in sorted(by_app.items())]


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("1,700", 1700, "count"),
        ("0", 0, "count"),
        ("45.8 MiB", 45.8 * MIB, "bytes"),
        ("1562.5 KiB", 1562.5 * 1024, "bytes"),
        ("8.0 EiB", 8.0 * 1024**6, "bytes"),
        ("2.0 GB", 2.0 * 1024**3, "bytes"),  # Spark 2.x labels, still 1024-based
        ("280.0 B", 280, "bytes"),
        ("12 ms", 12, "ms"),
        ("1.2 s", 1200, "ms"),
        ("3.5 m", 210_000, "ms"),  # "m" is minutes in Spark's durations
        ("1.50 h", 5_400_000, "ms"),
        ("45,8 MiB", 45.8 * MIB, "bytes"),  # a decimal comma from another locale
        ("2.00E+6", 2e6, "count"),
    ],
)
def test_quantities(text: str, value: float, unit: str) -> None:
    got, got_unit = parse_quantity(text)
    assert got_unit == unit and got == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "n/a", "12 parsecs", "--", None])
def test_bad_quantities(text: str | None) -> None:
    assert parse_quantity(text)[0] is None


def test_per_task_figures_with_the_stage_and_task_of_the_maximum() -> None:
    m = parse_metric(
        "scan time",
        "total (min, med, max (stageId: taskId))\n12 ms (0 ms, 6 ms, 6 ms (stage 1.0: task 11))",
    )
    assert (m.unit, m.total, m.min, m.med, m.max) == ("ms", 12, 0, 6, 6)
    assert (m.max_stage_id, m.max_stage_attempt, m.max_task_id) == (1, 0, 11)
    retry = parse_metric(
        "data size",
        "total (min, med, max (stageId: taskId))\n3.1 MiB (1.0 MiB, 1.5 MiB, 1.6 MiB (stage 12.2: task 7))",
    )
    assert (retry.max_stage_id, retry.max_stage_attempt) == (12, 2)
    driver = parse_metric(
        "partition data size",
        "total (min, med, max (stageId: taskId))\n872.3 KiB (431.5 KiB, 440.7 KiB, 440.7 KiB (driver))",
    )
    assert driver.max_stage_id is None and driver.total == pytest.approx(872.3 * 1024)


def test_average_metrics_have_no_total() -> None:
    m = parse_metric(
        "avg hash probes per key",
        "(min, med, max (stageId: taskId)):\n(1.2, 1.3, 1.3 (stage 8.0: task 19))",
    )
    assert (
        m.unit == "average"
        and m.total is None
        and m.med == pytest.approx(1.3)
        and m.max_stage_id == 8
    )


def test_spark_3_0_names_and_values() -> None:
    m = parse_metric("data size total (min, med, max)", "\n45.8 MiB (22.9 MiB, 22.9 MiB, 22.9 MiB)")
    assert m.name == "data size" and m.total == pytest.approx(45.8 * MIB) and m.max_stage_id is None
    assert canonical_metric_name("number of files")[0] == "number of files read"
    m = parse_metric("time to collect (ms)", "1,234")
    assert (m.name, m.unit, m.total) == ("time to collect", "ms", 1234)


@pytest.mark.parametrize(
    "value", ["", "garbage (((", "total (min, med, max (stageId: taskId))\n", None, 12, "1 2 3"]
)
def test_unreadable_metric_values_keep_their_text(value: object) -> None:
    m = parse_metric("x", value)
    assert m.name == "x" and m.unit in ("unknown", "count")
    if m.unit == "unknown":
        assert m.total is None and m.raw == ("" if value is None else str(value))[:200]


AQE_PLAN = """== Physical Plan ==
AdaptiveSparkPlan (12)
+- == Final Plan ==
   ResultQueryStage (8), Statistics(sizeInBytes=8.0 EiB)
   +- * BroadcastHashJoin Inner BuildRight (7)
      :- * ColumnarToRow (2)
      :  +- Scan parquet  (1)
      +- BroadcastQueryStage (6), Statistics(sizeInBytes=1024.8 KiB, rowCount=1.00E+4)
         +- BroadcastExchange (5)
            +- * ColumnarToRow (4)
               +- Scan parquet spark_catalog.default.dim (3)
+- == Initial Plan ==
   SortMergeJoin Inner (11)
   :- Sort (9)
   :  +- Scan parquet  (1)
   +- Sort (10)
      +- Scan parquet spark_catalog.default.dim (3)


(1) Scan parquet
Output [2]: [k#1L, v#2]
Batched: true
Location: InMemoryFileIndex [file:/data/fact]
PushedFilters: [IsNotNull(k)]
ReadSchema: struct<k:bigint,v:double>

(3) Scan parquet spark_catalog.default.dim
Output [2]: [k#3L, day#4]
Batched: true
Location: InMemoryFileIndex(2 paths)[file:/wh/dim/day=1, file:/wh/dim/day=2]
PartitionFilters: [isnotnull(day#4), (day#4 = 1)]
ReadSchema: struct<k:bigint>

(7) BroadcastHashJoin [codegen id : 2]
Left keys [1]: [k#1L]
Right keys [1]: [k#3L]
Join type: Inner
Join condition: None

===== Subqueries =====

Subquery:1 Hosting operator id = 1 Hosting Expression = Subquery scalar-subquery#9, [id=#10]
* HashAggregate (15)
+- Exchange (14)
   +- * Range (13)

(13) Range [codegen id : 1]
Output [1]: [id#11L]
"""


def test_plan_sections_blocks_and_subqueries() -> None:
    plan = parse_plan(AQE_PLAN)
    assert plan.adaptive
    executed = [op.name for op in plan.executed_ops()]
    assert (
        "SortMergeJoin Inner" not in executed and "BroadcastHashJoin Inner BuildRight" in executed
    )
    assert [op.name for op in plan.initial_ops() if "Join" in op.name] == ["SortMergeJoin Inner"]
    assert (
        executed.index("HashAggregate") == executed.index("Scan parquet") + 1
    )  # subquery after its host
    stage = next(op for op in plan.executed_ops() if op.name == "BroadcastQueryStage")
    assert stage.stats_size_bytes == pytest.approx(1024.8 * 1024) and stage.stats_rows == 1e4
    assert plan.details[3].fields["Location"].startswith("InMemoryFileIndex(2 paths)")
    assert plan.details[3].fields["PartitionFilters"] == "[isnotnull(day#4), (day#4 = 1)]"
    assert "PartitionFilters" not in plan.details[1].fields  # Spark leaves empty lists out
    assert plan.details[7].codegen_id == 2 and plan.details[7].fields["Join type"] == "Inner"
    assert plan.subqueries[0].hosting_op_id == 1 and plan.details[13].name == "Range"


def _execution(
    nodes: list[dict[str, Any]], edges: list[dict[str, int]], plan: str = AQE_PLAN, **extra: Any
) -> dict[str, Any]:
    body = {
        "id": 0,
        "status": "COMPLETED",
        "description": "q",
        "planDescription": plan,
        "submissionTime": "2026-12-01T06:56:28.102GMT",
        "duration": 100,
        "runningJobIds": [],
        "successJobIds": [0],
        "failedJobIds": [],
        "nodes": nodes,
        "edges": edges,
    }
    body.update(extra)
    return body


def test_graph_nodes_get_their_plan_text_operator() -> None:
    names = [
        "AdaptiveSparkPlan",
        "WholeStageCodegen (2)",
        "BroadcastHashJoin",
        "ColumnarToRow",
        "Scan parquet",
        "HashAggregate",
        "Exchange",
        "Range",
        "BroadcastExchange",
        "WholeStageCodegen (1)",
        "ColumnarToRow",
        "Scan parquet spark_catalog.default.dim",
    ]
    nodes = [
        {"nodeId": i, "nodeName": n, "metrics": [{"name": "number of output rows", "value": "1"}]}
        for i, n in enumerate(names)
    ]
    nodes[2]["wholeStageCodegenId"] = 2
    edges = [
        {"fromId": 2, "toId": 0},
        {"fromId": 3, "toId": 2},
        {"fromId": 4, "toId": 3},
        {"fromId": 8, "toId": 2},
        {"fromId": 10, "toId": 8},
        {"fromId": 11, "toId": 10},
        {"fromId": 5, "toId": 4},
    ]
    ex = parse_bodies([json.dumps([_execution(nodes, edges)])]).executions[0]
    assert (ex.nodes[4].op_id, ex.nodes[11].op_id, ex.nodes[2].op_id) == (1, 3, 7)
    assert ex.nodes[11].detail is not None and "PartitionFilters" in ex.nodes[11].detail.fields
    assert ex.nodes[2].children == [3, 8] and ex.nodes[8].parents == [2]


@pytest.mark.parametrize("corpus", ["sql-events", "spark-events", "recurring-events"])
def test_every_recorded_answer_is_read_whole(corpus: str) -> None:
    apps = recorded_sql_bodies(corpus)
    assert apps
    for bodies in apps:
        parsed = parse_bodies(bodies)
        raw = [e for body in bodies for e in json.loads(body)]
        assert parsed.notes == [] and len(parsed.executions) == len({e["id"] for e in raw})
        for ex in parsed.executions:
            assert ex.plan is not None and ex.notes == [], ex.notes
            unmatched = [
                n.name
                for n in ex.operators()
                if n.op_id is None and n.key not in ("Subquery", "SubqueryBroadcast")
            ]
            assert unmatched == []
            units = {m[0] for n in ex.nodes.values() for m in n.metrics.values()}  # (unit, ...)
            assert "unknown" not in units and units <= {"bytes", "ms", "count", "average"}


def test_an_answer_without_sql_is_empty_not_an_error() -> None:
    rows = sql_rows(parse_bodies([b"[]"]), [], [])
    assert rows.status["status"] == "none" and rows.executions == rows.nodes == []


def test_old_servers_and_damaged_elements_give_a_partial_result_with_notes() -> None:
    old = [
        {"id": 3, "status": "COMPLETED", "description": "old server"},  # no graph, no plan, no jobs
        {"id": "x"},
        "nonsense",
        {
            "id": 4,
            "nodes": [{"nodeName": "Scan parquet"}, {"nodeId": 1, "metrics": "?"}],
            "edges": [{"fromId": 1}],
            "planDescription": 7,
        },
    ]
    parsed = parse_bodies(
        [json.dumps(old).encode(), b"{not json", json.dumps({"message": "error"}).encode()]
    )
    assert [e.execution_id for e in parsed.executions] == [3, 4]
    assert any("not JSON" in n for n in parsed.notes) and any(
        "not a list" in n for n in parsed.notes
    )
    first, second = parsed.executions
    assert first.nodes == {} and first.plan is None and any("plan graph" in n for n in first.notes)
    assert second.nodes[1].name == "?" and any("without a nodeId" in n for n in second.notes)
    rows = sql_rows(parsed, [], [])
    assert rows.status["status"] == "partial" and rows.status["executions"] == 2
    assert rows.executions[0]["plan_text"] is None and rows.executions[0]["notes"]


def _wide_plan(branches: int) -> tuple[str, list[dict[str, Any]], list[dict[str, int]]]:
    """A Union of ``branches`` Project > Filter > ColumnarToRow > Scan chains: 4 x branches + 1 nodes."""
    lines = ["== Physical Plan ==", "Union (1)"]
    details = ["(1) Union"]
    nodes: list[dict[str, Any]] = [{"nodeId": 0, "nodeName": "Union", "metrics": []}]
    edges = []
    op = 2
    for b in range(branches):
        pre = ":- " if b < branches - 1 else "+- "
        cont = ":  " if b < branches - 1 else "   "
        parent = 0
        for depth, name in enumerate(["Project", "Filter", "ColumnarToRow", "Scan parquet"]):
            star = "* " if name != "Scan parquet" else ""
            indent = pre if depth == 0 else cont + "   " * (depth - 1) + "+- "
            lines.append(indent + f"{star}{name} ({op})")
            cg = f" [codegen id : {b + 1}]" if star else ""
            extra = (
                f"\nLocation: InMemoryFileIndex [file:/t/{b}]\nReadSchema: struct<a:int>"
                if name == "Scan parquet"
                else ""
            )
            details.append(f"({op}) {name}{cg}\nOutput [1]: [a#{op}]{extra}")
            nid = len(nodes)
            nodes.append(
                {
                    "nodeId": nid,
                    "nodeName": name,
                    "metrics": [{"name": "number of output rows", "value": "10"}],
                    **({"wholeStageCodegenId": b + 1} if star else {}),
                }
            )
            edges.append({"fromId": nid, "toId": parent})
            parent = nid
            op += 1
    return "\n".join(lines) + "\n\n\n" + "\n\n".join(details), nodes, edges


def test_ten_thousand_nodes_are_read_and_the_kept_text_is_bounded() -> None:
    text, nodes, edges = _wide_plan(2_500)
    started = time.perf_counter()
    parsed = parse_bodies([json.dumps([_execution(nodes, edges, plan=text)]).encode()])
    elapsed = time.perf_counter() - started
    ex = parsed.executions[0]
    assert len(ex.nodes) == 10_001 and ex.notes == []
    assert all(n.op_id is not None for n in ex.nodes.values())
    assert (
        ex.nodes[10_000].detail is not None
        and ex.nodes[10_000].detail.fields["Location"] == "InMemoryFileIndex [file:/t/2499]"
    )
    row = sql_rows(parsed, [], []).executions[0]
    assert len(row["plan_text"]) == PLAN_TEXT_KEEP_CHARS < row["plan_chars"] == len(text)
    assert elapsed < 60  # a sanity bound, not a benchmark: about a second on a quiet machine


def test_a_deep_chain_needs_no_recursion() -> None:
    n = 2_000
    lines = ["== Physical Plan =="] + [
        ("   " * (n - i - 1) + "+- " if i < n else "") + f"Project ({i})" for i in range(n, 0, -1)
    ]
    nodes = [{"nodeId": k, "nodeName": "Project", "metrics": []} for k in range(n)]
    edges = [{"fromId": k + 1, "toId": k} for k in range(n - 1)]
    ex = parse_bodies(
        [json.dumps([_execution(nodes, edges, plan="\n".join(lines))]).encode()]
    ).executions[0]
    assert ex.nodes[0].op_id == n and ex.nodes[n - 1].op_id == 1


def test_damaged_bodies_never_raise() -> None:
    rnd = random.Random(7)
    bodies = [b for app in recorded_sql_bodies("sql-events")[:4] for b in app]
    for _ in range(150):
        body = rnd.choice(bodies)
        kind = rnd.randrange(4)
        if kind == 0:
            body = body[: rnd.randrange(len(body))]
        elif kind == 1:
            damaged = bytearray(body)
            for _ in range(rnd.randrange(1, 30)):
                damaged[rnd.randrange(len(damaged))] = rnd.randrange(256)
            body = bytes(damaged)
        elif kind == 2:  # fields dropped or of another type
            data = json.loads(body)
            for e in data:
                for key in rnd.sample(sorted(e), rnd.randrange(1, 4)):
                    e[key] = rnd.choice([None, "x", 5, [], {}])
                for node in e["nodes"] if isinstance(e.get("nodes"), list) else []:
                    if isinstance(node, dict) and rnd.random() < 0.3:
                        node["metrics"] = [
                            {
                                "name": "data size",
                                "value": rnd.choice(["", "1,2,3 MiB", "(((", "9" * 400]),
                            }
                        ]
            body = json.dumps(data).encode()
        else:  # plan texts cut in the middle of a line
            data = json.loads(body)
            for e in data:
                text = e.get("planDescription") or ""
                e["planDescription"] = text[: rnd.randrange(len(text) + 1)]
            body = json.dumps(data).encode()
        rows = sql_rows(parse_bodies([body]), [], [])
        assert rows.status["status"] in ("ok", "partial", "none")
