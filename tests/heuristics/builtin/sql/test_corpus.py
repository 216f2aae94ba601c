"""The SQL checks on the recorded real applications, at the production defaults: every labelled
problem of the SQL corpus found by the check of its name, its healthy application without any SQL
finding, and no application of the other corpora above LOW from a SQL check.

These applications ran seconds, so the cost caps make every finding LOW; the pattern severities
(what the checks rate before the cap, what a production-sized run would show) are held to the
same rules."""

from __future__ import annotations

import pytest

from heuristics.registry import build_registry
from heuristics.result import HeuristicResult, Severity
from tests.heuristics.builtin.sql.recordings import CORPORA, corpus

# ../shared/sql-events/README.md: application id -> the problem it was built to show
LABELLED = {
    "local-1796108177762": "sql_smj_should_broadcast",  # orders_customer_join
    "local-1796108197906": "sql_large_broadcast",  # catalog_broadcast_enrich
    "local-1796108221507": "sql_cross_join",  # store_product_matrix
    "local-1796108261199": "sql_small_files_read",  # clickstream_landing_rollup
    "local-1796108289067": "sql_small_files_written",  # device_metrics_export
    "local-1796108357006": "sql_no_partition_pruning",  # web_events_daily_report
    "local-1796108388437": "sql_python_udf",  # email_normalizer
    "local-1796108411015": "sql_row_explosion",  # promo_orders_attribution
    "local-1796108437682": "sql_repeated_scan",  # sales_kpi_dashboard
}
HEALTHY = "local-1796108457054"  # revenue_mart_builder


def sql_results(corpus_name: str, app_id: str) -> dict[str, HeuristicResult]:
    registry = build_registry({})
    app = corpus(corpus_name)[app_id]
    return {e.name: registry.run_one(e, app) for e in registry.enabled if e.name.startswith("sql_")}


def test_the_nine_checks_exist() -> None:
    names = {e.name for e in build_registry({}).entries if e.name.startswith("sql_")}
    assert names == set(LABELLED.values())


@pytest.mark.parametrize(("app_id", "check"), sorted(LABELLED.items()))
def test_each_labelled_problem_is_found_by_its_check(app_id: str, check: str) -> None:
    results = sql_results("sql-events", app_id)
    assert results[check].severity >= Severity.LOW, results[check].title
    assert results[check].impact is not None
    for name, r in results.items():
        assert not r.title.startswith("internal error"), r.title
        if name != check:
            assert (r.pattern_severity or 0) <= Severity.LOW, (name, r.title)


def test_the_healthy_application_has_no_sql_finding() -> None:
    results = sql_results("sql-events", HEALTHY)
    assert corpus("sql-events")[HEALTHY].sql_executions  # it ran queries
    assert {n: r.pattern_severity for n, r in results.items() if r.pattern_severity} == {}


@pytest.mark.parametrize("corpus_name", [c for c in CORPORA if c != "sql-events"])
def test_no_other_recorded_application_is_above_low(corpus_name: str) -> None:
    above = {
        (app_id, name): r.title
        for app_id in corpus(corpus_name)
        for name, r in sql_results(corpus_name, app_id).items()
        if r.severity > Severity.LOW or (r.pattern_severity or 0) > Severity.LOW
    }
    assert above == {}


def test_the_evidence_of_each_problem_is_what_the_corpus_shows() -> None:
    pruning = sql_results("sql-events", "local-1796108357006")["sql_no_partition_pruning"]
    assert pruning.value == 45 and "event_ts" in pruning.title and "event_date" in pruning.advice
    assert "filter on event_date" not in pruning.title  # the pruned second query is not flagged
    udf = sql_results("sql-events", "local-1796108388437")["sql_python_udf"]
    assert (udf.pattern_severity, udf.severity) == (
        Severity.CRITICAL,
        Severity.LOW,
    )  # 9 s of Python
    assert "normalize_email" in udf.title
    explosion = sql_results("sql-events", "local-1796108411015")["sql_row_explosion"]
    assert "10,000,000 output rows from 100,000 + 10,000" in explosion.title
    smj = sql_results("sql-events", "local-1796108177762")["sql_smj_should_broadcast"]
    assert smj.details is not None and "BROADCAST(customers)" in smj.details.rows[0][6]
