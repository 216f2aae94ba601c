"""Application page: everything shown, links, findings, config, tables, lookup errors, escaping."""

from __future__ import annotations

import re

from flask.testing import FlaskClient

from tests.sparkscope.web.conftest import XSS


def test_application_page_shows_metrics_findings_and_links(client: FlaskClient) -> None:
    resp = client.get("/apps/app-002")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert "daily_sales_etl" in html and "alice" in html
    assert "40.0 min" in html  # duration, written as the titles write it
    assert "5.0 GiB" in html  # memory spilled
    assert 'href="http://shs.example:18080/history/app-002/"' in html
    assert 'href="/history?name=daily_sales_etl&amp;server=prod"' in html
    # Findings worst first, with impact, details and advice; help links on each.
    skew = html.index('id="finding-stage_skew"')
    gc = html.index('id="finding-executor_gc"')
    assert skew < gc
    assert "Salt the hot keys." in html and "9.1x the median" in html
    assert "1.25 core-hours" in html and "5.0 min wall" in html
    assert 'href="/help/stage_skew"' in html
    # Key config with the value that was set and one that was not.
    assert re.search(r"spark.sql.shuffle.partitions</code></th><td>400<", html)
    assert re.search(
        r"spark.dynamicAllocation.maxExecutors</code></th><td><span class=\"muted\">not set", html
    )
    # Full configuration collapsible; stage and executor tables sortable.
    assert '<details class="config-section" id="config-spark">' in html
    assert 'id="stage-table"' in html and 'class="data sortable" id="executor-table"' in html
    assert "save at etl.py:102" in html and "worker-2:41000" in html


def test_compare_with_previous_run_link(client: FlaskClient) -> None:
    html = client.get("/apps/app-002").get_data(as_text=True)
    assert (
        'href="/compare?left=app-001&amp;left_server=prod&amp;right=app-002&amp;right_server=prod"'
        in html
    )
    first = client.get("/apps/app-001").get_data(as_text=True)
    assert "no previous run of this name" in first


def test_findings_sorted_by_impact(client: FlaskClient) -> None:
    html = client.get("/apps/app-002?findings_sort=impact").get_data(as_text=True)
    # executor_gc costs 2.5 core-hours, stage_skew 1.25.
    assert html.index('id="finding-executor_gc"') < html.index('id="finding-stage_skew"')
    assert client.get("/apps/app-002?findings_sort=cost").status_code == 400


def test_resources_section(client: FlaskClient) -> None:
    html = client.get("/apps/app-002").get_data(as_text=True)
    assert 'id="resource-table"' in html
    assert "Allocated core-hours" in html and "Wasted core-hours" in html
    assert "Σ over" in html  # formulas are shown next to the numbers


def test_escaping_and_redaction(client: FlaskClient) -> None:
    html = client.get("/apps/app-xss").get_data(as_text=True)
    assert XSS not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3  # name, user, config value
    assert "hunter2" not in html
    assert "(redacted)" in html


def test_unknown_app_is_404(client: FlaskClient) -> None:
    resp = client.get("/apps/no-such-app")
    assert resp.status_code == 404
    assert "no-such-app" in resp.get_data(as_text=True)
    assert client.get("/apps/app-002?server=staging").status_code == 404
    assert client.get("/apps/app-002?attempt=7").status_code == 404


def test_id_on_two_servers_needs_the_server(client: FlaskClient) -> None:
    resp = client.get("/apps/app-dup")
    assert resp.status_code == 409
    html = resp.get_data(as_text=True)
    assert (
        'href="/apps/app-dup?server=prod"' in html and 'href="/apps/app-dup?server=staging"' in html
    )
    assert client.get("/apps/app-dup?server=staging").status_code == 200


def test_latest_attempt_by_default_and_attempt_links(client: FlaskClient) -> None:
    html = client.get("/apps/app-att").get_data(as_text=True)
    assert "app-att / 2" in html
    assert 'class="badge sev-moderate"' in html
    one = client.get("/apps/app-att?attempt=1").get_data(as_text=True)
    assert "app-att / 1" in one
    assert 'href="http://shs.example:18080/history/app-att/1/"' in one


def test_shs_link_strips_the_rest_prefix(client: FlaskClient) -> None:
    html = client.get("/apps/app-odd").get_data(as_text=True)
    assert 'href="https://shs-staging.example/history/app-odd/"' in html


def test_security_headers_on_pages(client: FlaskClient) -> None:
    resp = client.get("/apps/app-002")
    assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
    assert "<script>" not in resp.get_data(as_text=True)  # no inline script at all
