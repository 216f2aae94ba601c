"""Compare page: aligned sections, deltas, config and finding differences."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner
from flask.testing import FlaskClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from sparkscope.cli.main import cli
from sparkscope.db import make_engine
from sparkscope.models.application import Application, Stage
from tests.sparkscope.web.conftest import XSS, make_app

RECORDED = Path(__file__).resolve().parents[3] / "demo" / "spark-events"


def test_compare_shows_deltas_config_and_one_sided_findings(client: FlaskClient) -> None:
    resp = client.get("/compare?left=app-001&right=app-002")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    # Duration 18 min -> 40 min: +22 min, +122.2%.
    row = re.search(r"<th>Duration</th>(.*?)</tr>", html, re.S)
    assert row is not None
    assert "18.0 min" in row.group(1) and "40.0 min" in row.group(1)
    assert "+22.0 min" in row.group(1) and "+122.2%" in row.group(1)
    # A config value that differs and a key on one side only.
    assert re.search(
        r'<tr class="differ key-setting"><th><code>spark.sql.shuffle.partitions</code>', html
    )
    assert re.search(r'<tr class="right_only"><th><code>spark.extra.only.right</code>', html)
    # Findings present on the right only: gained by the right run.
    assert re.search(
        r'<tr class="one-sided finding-gained">\s*<th><a href="/help/stage_skew">stage_skew</a></th>'
        r'\s*<td><span class="tag tag-gained">gained</span>',
        html,
    )
    assert 'id="compare-resources"' in html


def test_compare_form_without_ids(client: FlaskClient) -> None:
    resp = client.get("/compare?right=app-002")
    assert resp.status_code == 200
    assert 'name="right" value="app-002"' in resp.get_data(as_text=True)


def test_compare_errors(client: FlaskClient) -> None:
    assert client.get("/compare?left=nope&right=app-002").status_code == 404
    resp = client.get("/compare?left=app-dup&right=app-002")
    assert resp.status_code == 409
    assert "left_server=prod" in resp.get_data(as_text=True)
    ok = client.get("/compare?left=app-dup&left_server=staging&right=app-dup&right_server=prod")
    assert ok.status_code == 200


def test_compare_sections_come_settings_first(client: FlaskClient) -> None:
    html = client.get("/compare?left=app-001&right=app-002").get_data(as_text=True)
    order = [
        'id="compare-header"',
        'id="compare-verdicts"',
        'id="compare-config"',
        'id="compare-findings"',
        'id="compare-stages"',
        'id="compare-plan-changes"',
        'id="compare-metrics"',
    ]
    assert [html.index(s) for s in order] == sorted(html.index(s) for s in order)
    # No prediction stored for these runs: said, not left blank.
    verdicts = html[html.index('id="compare-verdicts"') :]
    assert verdicts[: verdicts.index("</tr>")].count("no prediction stored") == 2
    # Three stages each, the same call sites: three pairs, each linking both stage pages.
    stages = html[html.index('id="compare-stages"') : html.index('id="compare-plan-changes"')]
    assert stages.count('class="stage-pair paired"') == 3
    for app_id in ("app-001", "app-002"):
        for s in range(3):
            assert f'href="/apps/{app_id}/stages/{s}/0?server=prod"' in stages


def test_compare_picker_offers_the_runs_of_the_same_name(client: FlaskClient) -> None:
    html = client.get("/compare?left=app-002").get_data(as_text=True)
    picker = html[html.index('id="compare-picker"') : html.index("</details>")]
    # app-001 is the only other daily_sales_etl run, and app-002's previous one.
    links = re.findall(r'<a class="pick" href="([^"]+)">([^<]+)</a>', picker)
    assert [text for _href, text in links] == ["app-001"]
    assert (
        links[0][0]
        # The earlier run of the two is the baseline (left).
        == "/compare?left=app-001&amp;left_server=prod&amp;right=app-002&amp;right_server=prod"
    )
    assert "previous run" in picker
    assert 'id="compare-header"' not in html  # nothing compared until one is picked
    # Once compared, the picker stays (folded) to switch, the shown run marked.
    both = client.get("/compare?left=app-002&right=app-001").get_data(as_text=True)
    assert 'class="previous-run picked"' in both
    # The same id on another server is another run of that name.
    dup = client.get("/compare?left=app-dup&left_server=prod").get_data(as_text=True)
    assert re.findall(r'right=app-dup&amp;right_server=(\w+)"', dup) == ["staging"]


def test_compare_picker_escapes_a_hostile_name(client: FlaskClient) -> None:
    html = client.get("/compare?left=app-xss").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "No other run named" in html
    assert client.get("/compare?left=nope").status_code == 404


def test_compare_api_has_stage_pairs_and_verdicts(client: FlaskClient) -> None:
    body = client.get("/api/compare?left=app-001&right=app-002").get_json()
    assert body["verdicts"] == {"left": None, "right": None}
    assert len(body["stages"]) == 3
    first = body["stages"][0]
    assert first["matched_by"] == "name" and first["left"]["name"] == first["right"]["name"]
    for pair in body["stages"]:
        for figure, delta in pair["delta"].items():
            assert delta == pair["right"][figure] - pair["left"][figure]
    deltas = [abs(p["delta"]["duration_ms"]) for p in body["stages"]]
    assert deltas == sorted(deltas, reverse=True)
    gained = [f for f in body["findings"] if f["change"] == "gained"]
    assert "stage_skew" in {f["heuristic"] for f in gained}


def test_compare_escapes_hostile_stage_names(fresh_pg_url: str) -> None:
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(RECORDED)], env={"SPARKSCOPE_DATABASE_URL": fresh_pg_url}
    )
    assert result.exit_code == 0, result.output
    engine = make_engine(fresh_pg_url)
    with Session(engine) as session:
        left, right = session.scalars(
            select(Application)
            .where(Application.name == "flaky_ingest")
            .order_by(Application.start_time_ms)
        ).all()
        session.execute(
            update(Stage)
            .where(Stage.application_id == right.id, Stage.stage_id == 0)
            .values(name=f"{XSS} at x.py:1")
        )
        session.commit()
        ids = (left.app_id, right.app_id)
    engine.dispose()
    app = make_app(fresh_pg_url)
    html = app.test_client().get(f"/compare?left={ids[0]}&right={ids[1]}").get_data(as_text=True)
    app.extensions["sparkscope.engine"].dispose()
    assert XSS not in html
    stages = html[html.index('id="compare-stages"') : html.index('id="compare-plan-changes"')]
    assert '&lt;script&gt;alert(1)&lt;/script&gt; at x.py:1 <span class="tag">only right' in stages
