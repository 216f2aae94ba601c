"""Ground truth: the recorded real applications get the findings they were built to show, under
the production defaults (config/heuristics.yaml as shipped).

The applications (../shared/spark-events, recorded from a real Spark 4.0.1 History Server into
demo/spark-events) ran in local mode on small data: their problems are real, their costs are
seconds. Nothing is silent, so each labelled problem is reported (at least LOW) by the heuristic of
that name, and first among the application's findings (what its page's verdict line shows); the
caps by cost keep every healthy application at LOW or below. The recurring and scaling corpora
(demo/recurring-events, demo/scaling-events) hold healthy runs only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from heuristics.registry import builtin_heuristics
from heuristics.result import HeuristicResult, Severity, rank_key
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.scoring import analyze_all
from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import Analysis
from sparkscope.models.application import Application
from tests.fetcher.recorded import RECORDING

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPORA = (RECORDING, ROOT / "demo" / "recurring-events", ROOT / "demo" / "scaling-events")

# application id -> the heuristics that report its labelled problems (the corpus README)
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


@pytest.fixture(scope="module")
def findings(pg_server_url: str, pg_template: str) -> Iterator[dict[str, list[HeuristicResult]]]:
    """Every recorded application's stored results under the shipped config, ranked."""
    from tests.conftest import create_pg_database, drop_pg_database

    url = create_pg_database(pg_server_url, template=pg_template)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SPARKSCOPE_DATABASE_URL", url)
            for corpus in CORPORA:
                result = CliRunner().invoke(cli, ["fetch", "--url", str(corpus), "--no-analyze"])
                assert result.exit_code == 0, result.output
        engine = make_engine(url)
        registry = load_heuristics(str(ROOT / "config" / "heuristics.yaml"))
        stats = analyze_all(make_sessionmaker(engine), registry)
        assert stats.analysed == 21 + 45 + 36
        out: dict[str, list[HeuristicResult]] = {}
        with engine.connect() as c:
            for app_id, document in c.execute(
                select(Application.app_id, Analysis.results).join(
                    Analysis, Analysis.application_id == Application.id
                )
            ):
                results = [HeuristicResult.from_dict(r) for r in json.loads(document)]
                out[app_id] = sorted(results, key=rank_key)
        engine.dispose()
        yield out
    finally:
        drop_pg_database(pg_server_url, url)


def by_name(results: list[HeuristicResult]) -> dict[str, HeuristicResult]:
    return {r.name: r for r in results}


def test_every_app_was_scored_by_every_heuristic(findings) -> None:
    assert len(findings) == 102
    assert all(len(f) == len(builtin_heuristics()) for f in findings.values())


@pytest.mark.parametrize(("app_id", "expected"), sorted(EXPECTED.items()))
def test_problem_apps_report_their_problem(findings, app_id: str, expected: set[str]) -> None:
    results = by_name(findings[app_id])
    for name in expected:
        assert results[name].severity >= Severity.LOW, (app_id, name, results[name].title)
        assert results[name].advice, (app_id, name)


@pytest.mark.parametrize(("app_id", "expected"), sorted(EXPECTED.items()))
def test_the_problem_comes_first(findings, app_id: str, expected: set[str]) -> None:
    """The first finding (the verdict line of the application's page) is the problem."""
    first = findings[app_id][0]
    assert first.name in expected, (app_id, [(r.name, r.severity.name) for r in findings[app_id]])


@pytest.mark.parametrize("app_id", sorted(HEALTHY))
def test_healthy_apps_get_nothing_above_low(findings, app_id: str) -> None:
    loud = {r.name: r.title for r in findings[app_id] if r.severity > Severity.LOW}
    assert loud == {}


def test_recurring_and_scaling_runs_get_nothing_above_low(findings) -> None:
    others = {k: v for k, v in findings.items() if k not in EXPECTED and k not in HEALTHY}
    assert len(others) == 45 + 36
    loud = {
        (app_id, r.name): r.title
        for app_id, results in others.items()
        for r in results
        if r.severity > Severity.LOW
    }
    assert loud == {}


def test_seconds_long_problems_are_capped_patterns(findings) -> None:
    """The skewed run's straggler is a CRITICAL pattern, capped to LOW by its cost of 35 s."""
    skew = by_name(findings["local-1795971895128"])["stage_skew"]
    assert (skew.pattern_severity, skew.severity) == (Severity.CRITICAL, Severity.LOW)
    assert skew.cap_note().startswith("CRITICAL pattern, capped to LOW by its cost of 35 s")
    assert skew.stages[0] == (4, 0)


def test_skew_says_why_aqe_did_not_split_it(findings) -> None:
    skew = by_name(findings["local-1795971895128"])["stage_skew"]
    rows = [dict(zip(skew.details.columns, r, strict=True)) for r in skew.details.rows]  # type: ignore[union-attr]
    assert next(r for r in rows if r["stage"] == 4)["cause"] == "data skew"
    conf = dict(skew.conf)
    # the run switched skew-join handling off, and its 13.6 MiB partition is below 256 MiB
    assert conf["spark.sql.adaptive.skewJoin.enabled"] == "true"
    assert "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes" in conf
    assert "below skewedPartitionThresholdInBytes" in skew.advice
    assert "spark.sql.adaptive.enabled" not in conf  # AQE is on by default in Spark 4.0


def test_failed_application_is_not_capped(findings) -> None:
    jobs = by_name(findings["local-1795972038475"])["job_failures"]
    assert jobs.severity == Severity.SEVERE and jobs.cost_cap is None


def test_legacy_job_lists_its_cluster_settings_without_effect(findings) -> None:
    config = by_name(findings["local-1795972047651"])["config"]
    assert (config.pattern_severity, config.severity) == (Severity.CRITICAL, Severity.LOW)
    assert config.details is not None
    rows = {r[0]: r[2] for r in config.details.rows}
    for key in (
        "spark.dynamicAllocation.shuffleTracking.enabled",
        "spark.executor.memory",
        "spark.executor.cores",
        "spark.yarn.queue",
    ):
        assert "no effect here" in rows[key], key
    # a Python application: its RDD records reach the JVM as pickled bytes, so the unset
    # serializer cannot matter and is not raised
    assert "spark.serializer" not in rows
    # its well-configured twin raises no configuration smell at all
    assert by_name(findings["local-1795972059233"])["config"].severity == Severity.NONE


def test_advice_names_settings_and_values(findings) -> None:
    tiny = by_name(findings["local-1795972070675"])["task_granularity"]
    assert dict(tiny.conf)["spark.sql.adaptive.coalescePartitions.enabled"] == "true"
    single = by_name(findings["local-1795972104206"])["task_granularity"]
    assert "few long tasks" in single.title and single.stages[0] == (0, 0)
    gc = by_name(findings["local-1795971974630"])["executor_gc"]
    assert gc.conf == (("spark.driver.memory", "1g"),)  # 600m, half as large again
    spill = by_name(findings["local-1795971956289"])["disk_spill"]
    assert dict(spill.conf)["spark.sql.shuffle.partitions"] == "7"  # 4 now
