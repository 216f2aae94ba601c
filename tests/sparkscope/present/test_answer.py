"""The answer first, in pure functions: findings ranked, the verdict line, the suggested --conf
block (quoted for a shell, conflicts kept visible) and what changed in plain words."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from heuristics.result import HeuristicResult, Impact, Severity
from sparkscope.present.answer import (
    change_lines,
    change_text,
    conf_block,
    finding_conf,
    finding_stages,
    rank_findings,
    suggested_conf,
    verdict_of,
)


def result(
    name: str,
    severity: Severity,
    core_hours: float | None = None,
    wall: float | None = None,
    advice: str = "",
) -> HeuristicResult:
    impact = None if core_hours is None and wall is None else Impact(wall, core_hours, "f")
    return HeuristicResult(name, severity, 1.0, f"{name} title", {}, None, advice, impact)


@dataclass(frozen=True)
class WithConf:
    """A result as the heuristics that name settings return it (``conf``, ``stages``)."""

    name: str
    severity: Severity
    conf: Any = ()
    stages: Any = ()
    pattern_severity: Severity | None = None
    title: str = "t"
    advice: str = ""
    impact: Impact | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def test_worst_first_then_costliest_and_costliest_first() -> None:
    gc = result("executor_gc", Severity.LOW, core_hours=2.5)
    skew = result("stage_skew", Severity.SEVERE, core_hours=1.25)
    spill = result("disk_spill", Severity.SEVERE, core_hours=3.0)
    fail = result("job_failures", Severity.SEVERE)  # no cost figure
    ranked = [f.name for f in rank_findings([gc, skew, spill, fail])]
    assert ranked == ["disk_spill", "stage_skew", "job_failures", "executor_gc"]
    by_cost = [f.name for f in rank_findings([gc, skew, spill, fail], "impact")]
    assert by_cost == ["disk_spill", "executor_gc", "stage_skew", "job_failures"]


def test_verdict_names_the_worst_finding_its_cost_and_fix() -> None:
    findings = [
        result("executor_gc", Severity.LOW, core_hours=2.5),
        result("stage_skew", Severity.SEVERE, 1.25, 300.0, "Salt the hot keys."),
        result("disk_spill", Severity.NONE),
    ]
    v = verdict_of(findings, {"stage_skew": "Stage skew"})
    assert v is not None
    assert (v.heuristic, v.heading, v.severity) == ("stage_skew", "Stage skew", 3)
    assert v.cost == "5.0 min of wall time, 1.25 core-hours"
    assert v.fix == "Salt the hot keys." and v.others == 1
    assert verdict_of([result("disk_spill", Severity.NONE)]) is None


def test_conf_pairs_in_any_stored_shape_and_garbage_left_out() -> None:
    f = WithConf(
        "x",
        Severity.MODERATE,
        conf=[["spark.a", 64], ("spark.b", "1g"), {"key": "spark.c", "value": "true"}, ["", 1]],
        stages=[[3, 0], (4, 1), ["x", 0], [5]],
    )
    assert finding_conf(f) == [("spark.a", "64"), ("spark.b", "1g"), ("spark.c", "true")]
    assert finding_stages(f) == [(3, 0), (4, 1)]
    plain = result("x", Severity.LOW)  # results without the fields
    assert finding_conf(plain) == [] and finding_stages(plain) == []


def test_suggested_conf_keeps_the_worst_findings_value_and_shows_the_other() -> None:
    spill = WithConf(
        "disk_spill",
        Severity.SEVERE,
        conf=[("spark.sql.shuffle.partitions", "800"), ("spark.executor.memory", "8g")],
    )
    tiny = WithConf("task_granularity", Severity.LOW, conf=[("spark.sql.shuffle.partitions", "50")])
    same = WithConf("executor_memory", Severity.MODERATE, conf=[("spark.executor.memory", "8g")])
    quiet = WithConf("config", Severity.NONE, conf=[("spark.serializer", "kryo")])
    lines = suggested_conf([tiny, quiet, same, spill])  # type: ignore[list-item]
    assert [(c.key, c.value) for c in lines] == [
        ("spark.sql.shuffle.partitions", "800"),
        ("spark.executor.memory", "8g"),
    ]
    assert lines[0].overruled == (("task_granularity", "50"),)
    assert lines[1].heuristics == ("disk_spill", "executor_memory")
    assert conf_block(lines) == (
        "--conf spark.sql.shuffle.partitions=800 \\\n--conf spark.executor.memory=8g"
    )


def test_conf_block_is_one_shell_word_per_setting_whatever_the_value() -> None:
    hostile = "-Dx='; rm -rf / #' $(touch pwned) `id`"
    f = WithConf("x", Severity.SEVERE, conf=[("spark.executor.extraJavaOptions", hostile)])
    block = conf_block(suggested_conf([f]))  # type: ignore[list-item]
    words = shlex.split(block.replace("\\\n", " "))
    assert words == ["--conf", f"spark.executor.extraJavaOptions={hostile}"]


def test_changes_in_plain_words_settings_first() -> None:
    items = [
        {"kind": "finding", "heuristic": "disk_spill", "change": "new"},
        {"kind": "finding", "heuristic": "stage_skew", "change": "gone"},
        {"kind": "input", "before": 100 * 2**20, "after": 250 * 2**20, "ratio": 2.5},
        {
            "kind": "stage",
            "label": "stage 3 (join)",
            "ratio": 0.5,
            "before_ms": 10_000,
            "after_ms": 10_000,
            "before_bytes": 2**30,
            "after_bytes": 2**31,
        },
        {"kind": "setting", "key": "spark.sql.adaptive.enabled", "before": None, "after": "false"},
        {"kind": "size", "what": "executors", "before": 4.0, "after": 8.0},
        {
            "kind": "failures",
            "failed_tasks": 3,
            "failed_stages": 1,
            "before_tasks": 0,
            "before_stages": 0,
        },
    ]
    lines = change_lines(items, {"disk_spill": "Disk spill"})
    assert [k for k, _ in lines] == [
        "setting",
        "size",
        "input",
        "stage",
        "failures",
        "finding",
        "finding",
    ]
    texts = [t for _, t in lines]
    assert texts[0] == "spark.sql.adaptive.enabled: (unset) → false"
    assert texts[1] == "executors: 4 → 8"
    assert texts[2] == "input 250.0 MiB, 2.5× the median of the earlier runs (100.0 MiB)"
    assert texts[3].startswith("stage 3 (join): 2.0× faster per byte read (10 s for 2.0 GiB")
    assert texts[4].startswith("more failures: 3 failed tasks, 1 failed stages")
    assert texts[5:] == ["new finding: Disk spill", "no longer: stage_skew"]
    assert change_lines(None) == [] and change_lines([42, "x"]) == []  # type: ignore[list-item]
    assert change_text({"kind": "stage", "label": "s", "ratio": 3.0}).startswith("s: 3.0× slower")
