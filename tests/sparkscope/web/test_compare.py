"""Compare page: aligned sections, deltas, config and finding differences."""

from __future__ import annotations

import re

from flask.testing import FlaskClient


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
