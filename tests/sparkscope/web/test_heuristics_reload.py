"""Editing heuristics.yaml changes the application page at the next load; a bad edit shows a banner."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy.orm import Session

from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import make_app


@pytest.fixture
def heuristics_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "heuristics.yaml"
    path.write_text((BUNDLED_CONFIG_DIR / "heuristics.yaml").read_text())
    yield path


def _gc_severity(html: str) -> str:
    match = re.search(r'id="finding-executor_gc">\s*<header>\s*<span class="badge sev-(\w+)"', html)
    assert match is not None
    return match.group(1)


def test_yaml_edit_rescores_and_bad_edit_shows_banner(
    fresh_pg_url: str, heuristics_file: Path
) -> None:
    engine = make_engine(fresh_pg_url)
    with Session(engine) as session:
        srv = b.server(session)
        # 2 executors x 40 min of task time with 5% GC: below the 8% low bound.
        b.application(session, srv, "app-gc", duration_ms=60 * 60_000)
        session.commit()
    engine.dispose()
    app = make_app(fresh_pg_url, HEURISTICS_PATH=str(heuristics_file))
    client = app.test_client()

    first = client.get("/apps/app-gc").get_data(as_text=True)
    assert _gc_severity(first) == "none"
    assert 'id="config-error"' not in first

    config = yaml.safe_load(heuristics_file.read_text()) or {}  # the shipped file: overrides only
    config.setdefault("executor_gc", {})["gc_ratio"] = {
        "low": 0.01,
        "moderate": 0.02,
        "severe": 0.03,
        "critical": 0.04,
    }
    heuristics_file.write_text(yaml.safe_dump(config))
    # 4 min of GC spread over 8 slots costs 30 s: a CRITICAL pattern capped to LOW
    second = client.get("/apps/app-gc").get_data(as_text=True)
    assert _gc_severity(second) == "low"
    # caps are thresholds of the same file: with none, the pattern's severity stands
    config["executor_gc"]["cost_caps"] = {
        "wall_seconds": {"moderate": 0, "severe": 0, "critical": 0}
    }
    heuristics_file.write_text(yaml.safe_dump(config))
    second = client.get("/apps/app-gc").get_data(as_text=True)
    assert _gc_severity(second) == "critical"
    assert client.get("/api/apps/app-gc").get_json()["worst_severity"] == "critical"

    config["executor_gc"]["gc_ratio"] = {
        "low": 0.5,
        "moderate": 0.02,
        "severe": 0.03,
        "critical": 0.04,
    }
    heuristics_file.write_text(yaml.safe_dump(config) + "\n# broken on purpose\n")
    third = client.get("/apps/app-gc")
    assert third.status_code == 200
    html = third.get_data(as_text=True)
    assert 'id="config-error"' in html and "executor_gc.gc_ratio.moderate" in html
    # The last valid config stays in force.
    assert _gc_severity(html) == "critical"
    app.extensions["sparkscope.engine"].dispose()


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        ({"stage_skew": {"data_skew_bytes_ratio": -1}}, "stage_skew.data_skew_bytes_ratio"),
        ({"executor_gc": {"cost_caps": {"wall_seconds": {"moderate": -1}}}}, "executor_gc.cost_caps.wall_seconds.moderate"),
        ({"disk_spill": {"disk_throughput_bytes_per_s": 0}}, "disk_spill.disk_throughput_bytes_per_s"),
        ({"executor_gc": {"gc_ratio": {"low": -0.01}}}, "executor_gc.gc_ratio.low"),
    ],
)  # fmt: skip
def test_an_out_of_range_edit_keeps_the_last_valid_config_and_shows_the_banner(
    fresh_pg_url: str, heuristics_file: Path, edit: dict[str, dict[str, object]], key: str
) -> None:
    engine = make_engine(fresh_pg_url)
    with Session(engine) as session:
        srv = b.server(session)
        b.application(session, srv, "app-gc", duration_ms=60 * 60_000)
        session.commit()
    engine.dispose()
    app = make_app(fresh_pg_url, HEURISTICS_PATH=str(heuristics_file))
    client = app.test_client()
    # thresholds under the app's 5% GC and no cost caps: CRITICAL
    strict = {"executor_gc": {"gc_ratio": {"low": 0.01, "moderate": 0.02, "severe": 0.03, "critical": 0.04}, "cost_caps": {"wall_seconds": {"moderate": 0, "severe": 0, "critical": 0}}}}  # fmt: skip
    heuristics_file.write_text(yaml.safe_dump(strict))
    assert _gc_severity(client.get("/apps/app-gc").get_data(as_text=True)) == "critical"

    merged = {k: {**strict.get(k, {}), **v} for k, v in edit.items()}
    heuristics_file.write_text(yaml.safe_dump({**strict, **merged}) + "\n# out of range\n")
    html = client.get("/apps/app-gc").get_data(as_text=True)
    assert 'id="config-error"' in html and key in html
    assert _gc_severity(html) == "critical"  # the last valid config stays in force
    assert key in (client.get("/api/apps/app-gc").get_json()["heuristics_config_error"] or "")
    app.extensions["sparkscope.engine"].dispose()
