"""The timeline page's words and figure (sparkscope.present.timeline_view) on a hand-built run:
2 executors x 4 cores for 100 s, 8 slots busy for 50 s, then one task for 50 s, with a 10 s gap
before the first stage."""

from __future__ import annotations

from sparkscope.accounting.timeline import (
    TAIL_SHARE,
    TAIL_SLOTS,
    ExecutorLife,
    StageSpan,
    slot_timeline,
)
from sparkscope.present.timeline_view import lanes, summary_sentences, timeline_figure
from sparkscope.queries.timeline import JobRow, StageRow, stage_start_ms

T0 = 1_700_000_000_000
S = 1000
XSS = "<script>alert(1)</script>"


def _stage(sid: int, start_s: int, end_s: int, run_s: int, **kw: object) -> StageRow:
    row = {
        "stage_id": sid,
        "attempt_id": 0,
        "name": f"stage at job.py:{sid}",
        "status": "COMPLETE",
        "num_tasks": 8,
        "num_failed_tasks": 0,
        "submission_time_ms": T0 + start_s * S - 200,
        "first_task_launched_time_ms": T0 + start_s * S,
        "completion_time_ms": T0 + end_s * S,
        "executor_run_time_ms": run_s * S,
    }
    row.update(kw)
    return StageRow(**row)  # type: ignore[arg-type]


STAGES = [
    _stage(0, 10, 55, 8 * 45),
    _stage(1, 55, 100, 45, name=XSS, status="FAILED"),
    _stage(2, 0, 0, 0, submission_time_ms=None, first_task_launched_time_ms=None, status="SKIPPED"),
]
JOBS = [JobRow(0, XSS, None, "FAILED", T0 + 9 * S, T0 + 100 * S, 9)]
EXECUTORS = [ExecutorLife(str(i), False, 4, T0, None) for i in (1, 2)]


def _timeline():  # type: ignore[no-untyped-def]
    spans = [
        StageSpan(s.stage_id, 0, stage_start_ms(s), s.completion_time_ms, s.executor_run_time_ms)
        for s in STAGES
    ]
    return slot_timeline(T0, T0 + 100 * S, EXECUTORS, spans, local=False)


def test_the_sentences_state_idle_capacity_tail_and_gap() -> None:
    said = dict(summary_sentences(_timeline(), TAIL_SLOTS, TAIL_SHARE))
    # busy 8 x 45 + 1 x 45 = 405 of 800 slot-seconds
    assert said["idle"].startswith("Idle capacity: 49.4% of the allocated task-slot time")
    assert "(0.11 of 0.222 core-hours)" in said["idle"]
    assert said["tail"].startswith("Serial tail: the last 45 s (45.0% of the run, from +55 s)")
    assert (
        said["gap"]
        == "Longest gap with no stage running: 10 s (10.0% of the run), from +0 ms to +10 s."
    )


def test_a_tail_under_one_percent_of_the_run_is_called_negligible() -> None:
    # 8 slots busy for 99.5 s, then one task for the last 0.5 s of a 100 s run
    spans = [
        StageSpan(0, 0, T0, T0 + 99_500, 8 * 99_500),
        StageSpan(1, 0, T0 + 99_500, T0 + 100 * S, 500),
    ]
    t = slot_timeline(T0, T0 + 100 * S, EXECUTORS, spans, local=False)
    said = dict(summary_sentences(t, TAIL_SLOTS, TAIL_SHARE))
    assert said["tail"].startswith("Serial tail: negligible (the last 500 ms, under 1% of the run")


def test_lanes_pack_overlapping_spans_apart_and_reuse_free_ones() -> None:
    assert lanes([(0, 10), (5, 15), (10, 20), (16, 30), (12, 14)]) == [0, 1, 0, 1, 2]
    assert lanes([]) == []


def test_the_figure_draws_every_started_stage_and_marks_the_failed() -> None:
    fig = timeline_figure(_timeline(), JOBS, STAGES, stage_start_ms, lambda s, a: f"/s/{s}/{a}")
    by_name = {t["name"]: t for t in fig["data"]}
    assert by_name["stage"]["customdata"] == [
        ["/s/0/0", "stage 0", "stage at job.py:0", "COMPLETE", 8, 10.0]
    ]
    failed = by_name["failed stage"]
    assert failed["base"] == [55.0] and failed["x"] == [45.0]
    assert failed["customdata"][0][2] == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert by_name["failed job"]["customdata"][0][0] == ""  # a job opens nothing
    assert "job" not in by_name  # its only job failed
    alloc, busy = by_name["allocated slots"], by_name["busy slots"]
    assert alloc["x"] == busy["x"] == [0.0, 10.0, 55.0, 100.0]
    assert alloc["y"] == [8.0] * 4  # the last value repeated to draw the step to the end
    assert busy["y"] == [0.0, 8.0, 1.0, 1.0]
    assert fig["binned"] is False
