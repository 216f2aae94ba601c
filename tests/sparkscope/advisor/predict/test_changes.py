"""What changed in a run against its earlier runs: both directions, thresholds, nothing invented."""

from __future__ import annotations

from sparkscope.advisor.predict.changes import finding_changes, what_changed
from sparkscope.advisor.predict.features import RunFeatures

MIB = 1 << 20


def run(
    input_mib: float = 100,
    settings: dict[str, str] | None = None,
    stages: list[list[object]] | None = None,
    executors: float = 4,
    failed_tasks: int = 0,
) -> RunFeatures:
    return RunFeatures(
        values={"input_bytes": input_mib * MIB, "executors": executors, "cores": 2.0},
        settings=settings or {"spark.sql.shuffle.partitions": "200"},
        stage_work=stages if stages is not None else [["stage 1 (scan)", 100 * MIB, 10_000]],
        failed_tasks=failed_tasks,
    )


def kinds(items: list[dict[str, object]]) -> list[object]:
    return [i["kind"] for i in items]


def test_nothing_changed_and_no_history_say_nothing() -> None:
    assert what_changed(run(), [run()] * 3) == []
    assert what_changed(run(), []) == []


def test_settings_against_the_latest_run_unset_as_none() -> None:
    earlier = [run(settings={"spark.sql.adaptive.enabled": "false"}), run()]
    items = what_changed(run(settings={"spark.sql.adaptive.enabled": "false"}), earlier)
    assert items == [  # in the order of the key settings
        {
            "kind": "setting",
            "key": "spark.sql.shuffle.partitions",
            "before": "200",
            "after": None,
        },
        {"kind": "setting", "key": "spark.sql.adaptive.enabled", "before": None, "after": "false"},
    ]


def test_input_moves_either_way_against_the_median_of_the_recent_runs() -> None:
    earlier = [run(input_mib=m) for m in (90, 100, 110, 1000, 100)]  # one outlier: median 100
    grown = what_changed(run(input_mib=130), earlier)
    assert grown == [{"kind": "input", "before": 100 * MIB, "after": 130 * MIB, "ratio": 1.3}]
    shrunk = what_changed(run(input_mib=70), earlier)
    assert [round(i["ratio"], 2) for i in shrunk] == [0.7]
    assert what_changed(run(input_mib=120), earlier) == []  # within 1.25x: not a change


def test_stage_time_per_byte_both_ways_only_for_stages_that_matter() -> None:
    before = run(stages=[["stage 1 (scan)", 100 * MIB, 10_000], ["stage 2 (tiny)", 2 * MIB, 50]])
    slower = run(stages=[["stage 1 (scan)", 100 * MIB, 20_000], ["stage 2 (tiny)", 2 * MIB, 500]])
    items = what_changed(slower, [before])
    # Stage 2 took 10x per byte but carries 2% of the run's stage time: not reported.
    assert items == [
        {
            "kind": "stage",
            "label": "stage 1 (scan)",
            "ratio": 2.0,
            "before_ms": 10_000,
            "after_ms": 20_000,
            "before_bytes": 100 * MIB,
            "after_bytes": 100 * MIB,
        }
    ]
    faster = what_changed(run(stages=[["stage 1 (scan)", 200 * MIB, 10_000]]), [before])
    assert [(i["kind"], i["ratio"]) for i in faster] == [("stage", 0.5)]  # twice the bytes
    new_stage = what_changed(run(stages=[["stage 9 (new)", 100 * MIB, 10_000]]), [before])
    assert new_stage == []  # no earlier stage of that label to compare with


def test_size_and_failures() -> None:
    items = what_changed(run(executors=8, failed_tasks=3), [run(failed_tasks=1), run()])
    assert kinds(items) == ["size", "failures"]
    assert items[0] == {"kind": "size", "what": "executors", "before": 4, "after": 8}
    assert items[1]["before_tasks"] == 1 and items[1]["failed_tasks"] == 3


def test_findings_new_and_gone_only_with_an_earlier_run() -> None:
    assert finding_changes({"disk_spill", "config"}, {"config", "stage_skew"}) == [
        {"kind": "finding", "heuristic": "disk_spill", "change": "new"},
        {"kind": "finding", "heuristic": "stage_skew", "change": "gone"},
    ]
    assert finding_changes({"disk_spill"}, None) == []
