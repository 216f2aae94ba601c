"""Heuristic parameters in range: no negative gate or threshold, and each parameter's own bounds
(a disk throughput of 0 B/s would make every spill cost a lifetime)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heuristics.params import HeuristicsConfigError
from heuristics.registry import build_registry
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.parsing import ConfigError


@pytest.mark.parametrize(
    ("config", "path", "fragment"),
    [
        ({"data_skew_groups": {"min_group_size": -1}}, "data_skew_groups.min_group_size", "≥ 0"),
        ({"disk_spill": {"disk_throughput_bytes_per_s": 0}}, "disk_spill.disk_throughput_bytes_per_s", "≥ 1"),
        ({"task_granularity": {"assumed_task_overhead_ms": -5}}, "task_granularity.assumed_task_overhead_ms", "≥ 0"),
        ({"stage_skew": {"task_time_ratio": {"low": -1}}}, "stage_skew.task_time_ratio.low", "≥ 0"),
        ({"executor_memory": {"over_provisioned_ratio": {"critical": -0.5}}}, "executor_memory.over_provisioned_ratio.critical", "≥ 0"),
        ({"stage_skew": {"data_skew_bytes_ratio": -2.0}}, "stage_skew.data_skew_bytes_ratio", "≥ 0"),
        ({"stage_failures": {"recovered_weight": 1.5}}, "stage_failures.recovered_weight", "≤ 1"),
        ({"executor_memory": {"suggested_headroom": 0.5}}, "executor_memory.suggested_headroom", "≥ 1"),
        ({"task_granularity": {"target_task_ms": 0}}, "task_granularity.target_task_ms", "≥ 1"),
    ],
)  # fmt: skip
def test_out_of_range_params_are_refused(config: dict, path: str, fragment: str) -> None:
    with pytest.raises(HeuristicsConfigError) as info:
        build_registry(config)
    assert info.value.path == path
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_bounds_themselves_are_accepted() -> None:
    registry = build_registry(
        {
            "data_skew_groups": {"min_group_size": 0},
            "stage_skew": {"task_time_ratio": {"low": 0}},
            "disk_spill": {"disk_throughput_bytes_per_s": 1},
            "stage_failures": {"recovered_weight": 1.0},
        }
    )
    assert registry.params("data_skew_groups").min_group_size == 0
    assert registry.params("disk_spill").disk_throughput_bytes_per_s == 1


def test_the_file_error_names_file_and_key(tmp_path: Path) -> None:
    f = tmp_path / "heuristics.yaml"
    f.write_text("stage_skew:\n  data_skew_bytes_ratio: -1\n")
    with pytest.raises(ConfigError) as err:
        load_heuristics(str(f))
    assert str(err.value).startswith(f"{f}: stage_skew.data_skew_bytes_ratio: ")
