"""Dashboard: totals, newest app, fetch status, severities, frequent findings, waste ranking."""

from __future__ import annotations

import re

from flask.testing import FlaskClient

from sparkscope.config.loader import parse_config
from sparkscope.web.app import create_app
from tests.sparkscope.web.conftest import Fleet


def test_dashboard_figures(client: FlaskClient) -> None:
    resp = client.get("/")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert re.search(r'stat-value">8</span> applications stored', html)
    assert re.search(r'stat-value">16</span> executors', html)  # 8 apps x 2 executors
    assert re.search(r'stat-value">24</span> stages', html)
    # Newest application and last fetch per server.
    assert 'href="/apps/app-002?server=prod"' in html
    assert re.search(r"<td>staging</td>\s*<td>[^<]+</td><td class=\"fetch-partial\">partial", html)
    # Severity counts: critical app-xss today; app-odd is older than a week.
    sev = re.search(r'id="severity-counts">(.*?)</table>', html, re.S)
    assert sev is not None
    cell = r"<td><a class=\"count\" href=\"[^\"]+\">{}</a></td>"
    assert re.search(r">critical</a></td>\s*" + cell.format(1) + cell.format(1), sev.group(1))
    assert re.search(r">none</a></td>\s*" + cell.format(2) + cell.format(3), sev.group(1))
    assert 'href="/search?heuristic=stage_skew&amp;since=7d"' in html


def test_dashboard_waste_ranking_by_period(client: FlaskClient) -> None:
    html = client.get("/?days=7").get_data(as_text=True)
    apps = re.search(r'id="top-wasted-apps">(.*?)</table>', html, re.S)
    assert apps is not None
    order = re.findall(r'href="/apps/([^?"]+)', apps.group(1))
    assert order == ["app-002", "app-001"]
    users = re.search(r'id="top-wasted-users">(.*?)</table>', html, re.S)
    assert users is not None and "5.50" in users.group(1)  # alice: 4.5 + 1.0
    day = client.get("/?days=1").get_data(as_text=True)
    day_apps = re.search(r'id="top-wasted-apps">(.*?)</table>', day, re.S)
    assert day_apps is not None and "app-001" not in day_apps.group(1)
    assert client.get("/?days=0").status_code == 400
    assert client.get("/?days=x").status_code == 400


def test_prices_turn_hours_into_money(fleet: Fleet) -> None:
    config = parse_config(
        {
            "database_url": fleet.url,
            "prices": {"currency": "EUR", "core_hour": 0.1, "gb_hour": 0.01},
        },
        env={},
    )
    app = create_app({"TESTING": True, "DASHBOARD_CACHE_SECONDS": 0}, config=config)
    client = app.test_client()
    dash = client.get("/").get_data(as_text=True)
    assert "Cost at 0.10 EUR per core-hour" in dash
    assert '<td class="num cost">0.45</td>' in dash  # app-002: 4.5 wasted core-hours
    page = client.get("/apps/app-002").get_data(as_text=True)
    assert "Allocated cost" in page and "EUR" in page
    compare = client.get("/compare?left=app-001&right=app-002").get_data(as_text=True)
    assert "Wasted cost" in compare
    body = client.get("/api/apps/app-002").get_json()
    assert body["resources"]["cost"]["core_hour_price"] == 0.1
    app.extensions["sparkscope.engine"].dispose()
