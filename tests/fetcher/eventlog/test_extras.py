"""Event-log-only extras, checked against what the SHS says about the same tasks and stages."""

import json
from pathlib import Path

import pytest

from fetcher.eventlog.app import read_application
from fetcher.eventlog.extras import TASK_COLUMNS
from fetcher.eventlog.formats import shs_date
from tests.fetcher.eventlog.conftest import DEMO, SAMPLE, SHARED, need


def _recorded(corpus: str) -> tuple[Path, dict[str, str]]:
    root = need(DEMO / corpus)
    return root, json.loads((root / "index.json").read_text())["requests"]


@pytest.mark.parametrize("corpus", ["spark-events", "scaling-events"])
def test_every_task_is_there_and_matches_the_shs_task_lists(corpus: str):
    root, index = _recorded(corpus)
    logs = SAMPLE if corpus == "spark-events" else need(SHARED / corpus)
    checked = 0
    for d in sorted(logs.glob("eventlog_v2_*"))[:8]:
        app = read_application(d)
        tasks = {(t["stage_id"], t["stage_attempt_id"], t["task_id"]): t for t in app.tasks}
        assert len(tasks) == len(app.tasks)
        stages = json.loads(
            (
                root
                / next(
                    v
                    for k, v in index.items()
                    if k.startswith(f"applications/{app.app_id}/stages?")
                )
            ).read_bytes()
        )
        for s in stages:
            n = sum(1 for k in tasks if k[:2] == (s["stageId"], s["attemptId"]))
            assert n == s["numCompleteTasks"] + s["numFailedTasks"] + s["numKilledTasks"]
        for key, rel in index.items():
            if not (key.startswith(f"applications/{app.app_id}/stages/") and "taskList" in key):
                continue
            sid, attempt_id = (int(x) for x in key.split("/")[3:5])
            for t in json.loads((root / rel).read_bytes()):
                ours = tasks[(sid, attempt_id, t["taskId"])]
                assert ours["executor_id"] == t["executorId"]
                assert ours["status"] == t["status"]
                assert ours["duration_ms"] == t.get("duration", 0)
                assert ours["executor_run_time_ms"] == t["taskMetrics"]["executorRunTime"]
                assert ours["input_bytes"] == t["taskMetrics"]["inputMetrics"]["bytesRead"]
                checked += 1
    assert checked > 30


def test_task_columns_are_complete():
    app = read_application(SAMPLE / "eventlog_v2_local-1795971819513")
    assert set(app.tasks[0]) == set(TASK_COLUMNS)


def test_stage_dag_closes_over_every_job():
    """A job's stageIds are its final stage and all of its ancestors: the DAG must give them."""
    for d in sorted(need(SHARED / "recurring-events").glob("eventlog_v2_*"))[:6]:
        app = read_application(d)
        parents = app.stage_parents
        for job in app.status.jobs.values():
            todo, seen = [max(job["stageIds"])], set()
            while todo:
                s = todo.pop()
                if s not in seen:
                    seen.add(s)
                    todo.extend(parents.get(s, []))
            assert seen == set(job["stageIds"]), job["jobId"]


def test_executor_timeline_matches_allexecutors():
    root, index = _recorded("scaling-events")
    for d in sorted(need(SHARED / "scaling-events").glob("eventlog_v2_*"))[:5]:
        app = read_application(d)
        recorded = json.loads(
            (root / index[f"applications/{app.app_id}/allexecutors"]).read_bytes()
        )
        timeline = {e["executorId"]: e for e in app.executor_timeline}
        assert set(timeline) == {e["id"] for e in recorded}
        for e in recorded:
            assert shs_date(timeline[e["id"]]["addTime"]) == e["addTime"]
            if e["id"] != "driver":
                assert timeline[e["id"]]["totalCores"] == e["totalCores"]
