"""A first look at the demo (`make run`): each sample application of demo/spark-events names the
problem it was built to show in the verdict line under its title, and the healthy ones stay
quiet (nothing above LOW). What each was built to show: the README of the spark-events corpus
(demo/spark-events). Problems of a few seconds are named too: their severity is capped by their
cost, not silenced.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient

from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.cli.main import cli
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.web.conftest import make_app

RECORDED = Path(__file__).resolve().parents[3] / "demo" / "spark-events"
TITLES = {
    e.name: e.title for e in load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).entries
}
SKEW = {"stage_skew", "data_skew_groups"}
FAILURES = {"job_failures", "stage_failures", "task_failures"}

#: application id -> (name, the heuristics that name its problem).
PROBLEMS = {
    "local-1795971880926": ("skewed_customer_revenue", SKEW),
    "local-1795971895128": ("skewed_customer_revenue", SKEW),
    "local-1795971941689": ("event_sort_report", {"disk_spill"}),
    "local-1795971956289": ("event_sort_report", {"disk_spill"}),
    "local-1795971974630": ("user_session_builder", {"executor_gc", "driver_gc"}),
    "local-1795971990438": ("user_session_builder", {"executor_gc", "driver_gc"}),
    "local-1795972006331": ("flaky_ingest", {"task_failures"}),
    "local-1795972017033": ("flaky_ingest", {"task_failures"}),
    "local-1795972028393": ("billing_reconcile", FAILURES),
    "local-1795972038475": ("crashing_importer", FAILURES),
    "local-1795972047651": ("legacy_inventory_job", {"config"}),
    "local-1795972070675": ("tiny_partition_counter", {"task_granularity"}),
    "local-1795972104206": ("single_partition_scorer", {"task_granularity"}),
}
HEALTHY = {
    "local-1795971819513": "daily_sales_etl",
    "local-1795971829222": "daily_sales_etl",
    "local-1795971840114": "daily_sales_etl",
    "local-1795971851975": "daily_sales_etl",
    "local-1795971865440": "daily_sales_etl",
    "local-1795972059233": "inventory_snapshot",
    "local-1795972129184": "customer_analytics_sql",
    "local-1795972145144": "customer_analytics_sql",
}


@pytest.fixture(scope="module")
def client(pg_server_url: str, pg_template: str) -> Iterator[FlaskClient]:
    url = create_pg_database(pg_server_url, template=pg_template)
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(RECORDED)], env={"SPARKSCOPE_DATABASE_URL": url}
    )
    assert result.exit_code == 0, result.output
    app = make_app(url)
    yield app.test_client()
    app.extensions["sparkscope.engine"].dispose()
    drop_pg_database(pg_server_url, url)


def verdict(client: FlaskClient, app_id: str) -> tuple[str, str, str, str]:
    """(application name, heuristic, severity, text) of the page's verdict line."""
    html = client.get(f"/apps/{app_id}").get_data(as_text=True)
    name = re.search(r'<span class="app-name">([^<]*)</span>', html)
    line = re.search(
        r'id="verdict" data-heuristic="([^"]*)" data-severity="([^"]*)">(.*?)</p>', html, re.S
    )
    assert name is not None and line is not None, app_id
    text = " ".join(re.sub(r"<[^>]+>", "", line.group(3)).split())
    return name.group(1), line.group(1), line.group(2), text


@pytest.mark.parametrize(
    "app_id",
    list(PROBLEMS),
)
def test_each_sample_names_its_problem_in_the_verdict_line(
    client: FlaskClient, app_id: str
) -> None:
    name, expected = PROBLEMS[app_id]
    shown, heuristic, severity, text = verdict(client, app_id)
    assert shown == name
    assert heuristic in expected, (app_id, heuristic, text)
    assert severity != "none"
    assert text.startswith(f"{severity} {TITLES[heuristic]}:"), text  # said in words


@pytest.mark.parametrize("app_id", list(HEALTHY))
def test_healthy_samples_stay_quiet(client: FlaskClient, app_id: str) -> None:
    shown, _heuristic, severity, _text = verdict(client, app_id)
    assert shown == HEALTHY[app_id]
    assert severity in ("none", "low"), app_id
