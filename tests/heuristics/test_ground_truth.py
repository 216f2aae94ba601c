"""Ground truth: the recorded real applications get the findings they were built to show.

The applications (../shared/spark-events, recorded from a real Spark 4.0.1 History Server into
demo/spark-events) ran in local mode on small data, so this test uses ground_truth.yaml: production
ratio thresholds with size/duration gates scaled down (see that file).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from heuristics.registry import builtin_heuristics
from heuristics.result import Severity
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.inputs import from_tables
from sparkscope.analysis.scoring import analyze_all
from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import Analysis
from sparkscope.models.application import Application
from tests.fetcher.recorded import RECORDING

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# application id -> heuristics that must be at MODERATE or above (from the corpus README)
EXPECTED: dict[str, set[str]] = {
    "local-1795971880926": {"stage_skew"},
    "local-1795971895128": {"stage_skew"},
    "local-1795971941689": {"disk_spill"},
    "local-1795971956289": {"disk_spill"},
    "local-1795971974630": {"executor_gc"},
    "local-1795971990438": {"executor_gc"},
    "local-1795972006331": {"task_failures"},
    "local-1795972017033": {"task_failures"},
    "local-1795972028393": {"stage_failures", "job_failures"},
    "local-1795972038475": {"stage_failures", "job_failures"},
    "local-1795972047651": {"config"},
    "local-1795972070675": {"task_granularity"},
    "local-1795972104206": {"task_granularity"},
}
HEALTHY = {
    "local-1795971819513",
    "local-1795971829222",
    "local-1795971840114",
    "local-1795971851975",
    "local-1795971865440",
    "local-1795972059233",
    "local-1795972129184",
    "local-1795972145144",
}
CONFIG_SMELLS = (
    "spark.serializer",
    "spark.dynamicAllocation.shuffleTracking.enabled",
    "spark.executor.memory",
    "spark.executor.cores",
    "spark.yarn.queue",
)


@pytest.fixture(scope="module")
def findings(
    pg_server_url: str, pg_template: str
) -> Iterator[dict[str, dict[str, tuple[int, dict]]]]:
    from tests.conftest import create_pg_database, drop_pg_database

    url = create_pg_database(pg_server_url, template=pg_template)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SPARKSCOPE_DATABASE_URL", url)
            result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--no-analyze"])
        assert result.exit_code == 0, result.output
        engine = make_engine(url)
        registry = load_heuristics(str(HERE / "ground_truth.yaml"))
        stats = analyze_all(make_sessionmaker(engine), registry)
        assert stats.analysed == 21
        out: dict[str, dict[str, tuple[int, dict]]] = {}
        with engine.connect() as c:
            for app_id, document in c.execute(
                select(Application.app_id, Analysis.results).join(
                    Analysis, Analysis.application_id == Application.id
                )
            ):
                for result in json.loads(document):
                    out.setdefault(app_id, {})[result["name"]] = (result["severity"], result)
            # the same apps under the bundled production config, without storing anything

            production = load_heuristics(str(ROOT / "config" / "heuristics.yaml"))
            with make_sessionmaker(engine)() as session:
                ids = session.scalars(select(Application.id)).all()
                for app in from_tables(session, ids).values():
                    for r in production.run(app):
                        out[app.app_id][f"production:{r.name}"] = (int(r.severity), r.to_dict())
        engine.dispose()
        yield out
    finally:
        drop_pg_database(pg_server_url, url)


def test_every_app_was_scored_by_every_heuristic(findings) -> None:
    assert len(findings) == 21
    assert all(
        len([h for h in f if ":" not in h]) == len(builtin_heuristics()) for f in findings.values()
    )


@pytest.mark.parametrize(("app_id", "expected"), sorted(EXPECTED.items()))
def test_problem_apps_get_their_finding(findings, app_id: str, expected: set[str]) -> None:
    got = {
        h for h, (sev, _) in findings[app_id].items() if sev >= Severity.MODERATE and ":" not in h
    }
    assert expected <= got, f"{app_id}: expected {expected} at MODERATE+, got {got}"


@pytest.mark.parametrize("app_id", sorted(HEALTHY))
def test_healthy_apps_get_nothing_above_low(findings, app_id: str) -> None:
    loud = {
        h: sev for h, (sev, _) in findings[app_id].items() if sev > Severity.LOW and ":" not in h
    }
    assert loud == {}


def test_legacy_job_shows_every_configuration_smell(findings) -> None:
    severity, result = findings["local-1795972047651"]["config"]
    assert severity >= Severity.MODERATE
    flagged = " ".join(str(cell) for row in result["details"]["rows"] for cell in row)
    for key in CONFIG_SMELLS:
        assert key in flagged
    # its well-configured twin raises no configuration smell above LOW
    assert findings["local-1795972059233"]["config"][0] <= Severity.LOW


def test_skew_is_attributed_to_data(findings) -> None:
    _severity, result = findings["local-1795971880926"]["stage_skew"]
    text = " ".join(str(c) for row in result["details"]["rows"] for c in row)
    assert "data skew" in text


SIZE_GATED = (
    "stage_skew",
    "data_skew_groups",
    "disk_spill",
    "executor_gc",
    "driver_gc",
    "executor_load_imbalance",
    "shuffle_fetch_wait",
)


def test_production_defaults_keep_small_apps_quiet(findings) -> None:
    """Under the bundled production gates, seconds-long local apps raise no size-gated alarm."""
    for app_id, by_name in findings.items():
        for name in SIZE_GATED:
            severity, _ = by_name[f"production:{name}"]
            assert severity <= Severity.LOW, (app_id, name)
