"""The answer first (issue 19): the application page's verdict line, ranked findings, suggested
configuration and what changed; search's table, sorts, exact severities and the filters in force;
the dashboard's costliest applications and counts that equal what their links list. Names, users,
config values and change items are hostile: everything is escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.accounting import day_summary as summary
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine, now_ms
from sparkscope.models.application import Application
from sparkscope.models.predictions import RunPrediction
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import make_app

XSS = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
HOUR_MS = 3_600_000


def _prediction(app: Application, verdict: str, changes: dict[str, object]) -> RunPrediction:
    return RunPrediction(
        application_id=app.id,
        server_id=app.server_id,
        key=app.name,
        start_time_ms=app.start_time_ms,
        duration_ms=app.duration_ms,
        succeeded=True,
        fetched_at_ms=app.fetched_at_ms,
        features={},
        vector=[],
        candidates={},
        forecasts={},
        expected_ms=(app.duration_ms or 0) * 0.8,
        low_ms=(app.duration_ms or 0) * 0.7,
        high_ms=(app.duration_ms or 0) * 0.9,
        level=0.8,
        model="size_scaled",
        n_train=6,
        verdict=verdict,
        excess_pct=25.0,
        causes=[],
        changes=changes,
        computed_at_ms=now_ms(),
    )


@pytest.fixture(scope="module")
def url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    db_url = create_pg_database(pg_server_url, template=pg_template)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    engine = make_engine(db_url)
    now = now_ms()
    with Session(engine) as session:
        srv = b.server(session, "prod")
        other = b.server(session, "staging", "https://shs-staging.example")
        before = b.application(
            session, srv, "app-before", name="nightly", start_ms=now - 30 * HOUR_MS
        )
        b.mark_analyzed(session, before, fingerprint, Severity.NONE)
        bad = b.application(
            session,
            srv,
            "app-bad",
            name="nightly",
            user=XSS,
            start_ms=now - 2 * HOUR_MS,
            props={"spark.custom": XSS},
            wasted_core_hours=1.5,
        )
        b.finding(
            session,
            bad,
            "stage_skew",
            Severity.SEVERE,
            f"Stage 2: max task 9.1x the median {XSS}",
            impact_core_hours=1.25,
            impact_wall_seconds=300.0,
            advice=f"Salt the hot keys {XSS}.",
            conf=[["spark.sql.adaptive.skewJoin.skewedPartitionFactor", "2"], ["spark.x", XSS]],
            stages=[[2, 0], [5, 1]],
        )
        b.finding(
            session,
            bad,
            "executor_gc",
            Severity.LOW,
            "GC took 8.5% of executor task time",
            impact_core_hours=2.5,
            impact_wall_seconds=60.0,
        )
        b.finding(session, bad, "disk_spill", Severity.NONE, "No spill")
        b.mark_analyzed(session, bad, fingerprint)
        session.add(
            _prediction(
                bad,
                "regression",
                {
                    "against": {"application_id": before.id, "runs": 1},
                    "items": [
                        {"kind": "setting", "key": "spark.custom", "before": None, "after": XSS},
                        {"kind": "input", "before": 2**30, "after": 3 * 2**30, "ratio": 3.0},
                        {"kind": "finding", "heuristic": "stage_skew", "change": "new"},
                    ],
                },
            )
        )
        cheap = b.application(
            session,
            srv,
            "app-cheap",
            name="hourly",
            start_ms=now - 3 * HOUR_MS,
            wasted_core_hours=9.0,
        )
        b.finding(
            session,
            cheap,
            "task_failures",
            Severity.CRITICAL,
            "1 of 9 tasks failed",
            impact_core_hours=0.1,
        )
        b.mark_analyzed(session, cheap, fingerprint)
        session.add(_prediction(cheap, "normal", {"against": None, "items": []}))
        quiet = b.application(
            session, other, "app-quiet", name="hourly", start_ms=now - 4 * HOUR_MS
        )
        b.mark_analyzed(session, quiet, fingerprint, Severity.NONE)
        # Fetched without analysis: no severity yet.
        b.application(session, other, "app-new", name="hourly", start_ms=now - 5 * HOUR_MS)
        evil = b.application(session, other, "app-evil", name=XSS, start_ms=now - 60 * HOUR_MS)
        b.mark_analyzed(session, evil, fingerprint, Severity.NONE)
        old = b.application(session, srv, "app-old", name="weekly", start_ms=now - 50 * HOUR_MS)
        b.finding(session, old, "disk_spill", Severity.MODERATE, "Spilled", impact_core_hours=50.0)
        b.mark_analyzed(session, old, fingerprint)
        summary.rebuild(session)
        session.commit()
    engine.dispose()
    yield db_url
    drop_pg_database(pg_server_url, db_url)


@pytest.fixture(scope="module")
def client(url: str) -> Iterator[FlaskClient]:
    app = make_app(url)
    yield app.test_client()
    app.extensions["sparkscope.engine"].dispose()


def page(client: FlaskClient, path: str) -> str:
    resp = client.get(path)
    assert resp.status_code == 200, path
    return resp.get_data(as_text=True)


def test_verdict_line_names_the_worst_finding_its_cost_and_fix(client: FlaskClient) -> None:
    html = page(client, "/apps/app-bad")
    verdict = re.search(r'<p class="verdict [^"]*" id="verdict"(.*?)</p>', html, re.S)
    assert verdict is not None
    line = verdict.group(1)
    assert 'data-heuristic="stage_skew" data-severity="severe"' in line
    assert "<b>Stage skew</b>" in line and "Stage 2: max task 9.1x the median" in line
    assert "costs 5.0 min of wall time, 1.25 core-hours" in line
    assert "1 more finding below" in line
    assert XSS not in html and ESCAPED in line
    # The verdict sits in the header, the findings come before metrics, resources and config.
    order = [
        html.index('id="verdict"'),
        html.index('id="findings"'),
        html.index('id="metrics"'),
        html.index('id="resources"'),
        html.index('id="config"'),
        html.index('id="stages"'),
    ]
    assert order == sorted(order)
    quiet = page(client, "/apps/app-quiet")
    assert 'id="verdict" data-heuristic="" data-severity="none">No problem found' in quiet


def test_what_changed_is_shown_whatever_the_verdict(client: FlaskClient) -> None:
    html = page(client, "/apps/app-bad")
    section = html[html.index('id="what-changed"') : html.index('id="metrics"')]
    assert 'href="/apps/app-before?server=prod"' in section  # the run it is compared with
    assert "verdict: <b>regression</b>" in section
    items = re.findall(r'<li class="kind-(\w+)">(.*?)</li>', section, re.S)
    assert [k for k, _ in items] == ["setting", "input", "finding"]
    assert items[0][1] == f"spark.custom: (unset) → {ESCAPED}"
    assert items[1][1].startswith("input 3.0 GiB, 3.0× the median")
    assert items[2][1] == "new finding: Stage skew"
    normal = page(client, "/apps/app-cheap")
    assert 'id="what-changed"' in normal and "no earlier successful run" in normal
    assert 'id="what-changed"' not in page(client, "/apps/app-quiet")  # no prediction at all


def test_the_api_carries_the_verdict_and_the_changes(client: FlaskClient) -> None:
    body = client.get("/api/apps/app-bad").get_json()
    assert body["prediction"]["changes"]["items"][0]["after"] == XSS  # JSON, not HTML
    assert body["verdict"]["heuristic"] == "stage_skew" and body["verdict"]["severity"] == "severe"
    assert body["verdict"]["cost"] == "5.0 min of wall time, 1.25 core-hours"
    assert client.get("/api/apps/app-quiet").get_json()["verdict"] is None
    listed = {a["app_id"]: a for a in client.get("/api/apps").get_json()["apps"]}
    assert (
        listed["app-bad"]["impact_core_hours"] == 2.5
        and listed["app-new"]["impact_core_hours"] is None
    )


def test_no_conf_block_without_settings(client: FlaskClient) -> None:
    assert 'id="suggested-conf"' not in page(client, "/apps/app-quiet")


def test_suggested_configuration_is_a_copyable_conf_block(client: FlaskClient) -> None:
    html = page(client, "/apps/app-bad")
    block = re.search(r'<pre class="conf" id="conf-text">(.*?)</pre>', html, re.S)
    assert block is not None
    assert block.group(1).startswith(
        "--conf spark.sql.adaptive.skewJoin.skewedPartitionFactor=2 \\\n--conf "
    )
    assert XSS not in html and "spark.x=&lt;script&gt;" in block.group(1)
    assert (
        html.index('id="findings"') < html.index('id="suggested-conf"') < html.index('id="metrics"')
    )
    assert (
        'id="verdict-fix">Fix: set <code>spark.sql.adaptive.skewJoin.skewedPartitionFactor=2</code>'
        in html
    )


def test_findings_link_the_stages_they_were_seen_in(client: FlaskClient) -> None:
    html = page(client, "/apps/app-bad")
    assert 'href="/apps/app-bad/stages/2/0?server=prod"' in html
    assert 'href="/apps/app-bad/stages/5/1?server=prod">stage 5 (attempt 1)</a>' in html


def test_stage_and_whatif_links_encode_odd_ids(url: str) -> None:
    from sparkscope.web.request import app_link, stage_link, whatif_link

    app = make_app(url)
    with app.test_request_context("/"):
        assert stage_link("a/b c", "prod", "", 3, 1) == "/apps/a%2Fb%20c/stages/3/1?server=prod"
        assert (
            stage_link("..", None, "2", 3, 0)
            == "/apps/?app_id=..&attempt=2&stage=3&stage_attempt=0"
        )
        assert whatif_link("x/../y", "prod", "1") == "/apps/x%2F..%2Fy/whatif?server=prod&attempt=1"
        assert whatif_link(".", None) == "/whatif?app_id=."
        # An id that ends like another application's page opens as itself.
        assert app_link("x/whatif", "prod") == "/apps/?app_id=x%2Fwhatif&server=prod"
        assert app_link("x/stages/1/0", None) == "/apps/?app_id=x%2Fstages%2F1%2F0"
    app.extensions["sparkscope.engine"].dispose()


def test_whatif_and_sizing_pages_say_why_not_and_escape(client: FlaskClient) -> None:
    # These runs have no task-time distributions: the pages say so instead of guessing.
    html = page(client, "/apps/app-evil/whatif")
    assert 'id="whatif-problem">No what-if for this run: ' in html
    assert XSS not in html and ESCAPED in html  # the application's name
    sized = client.get("/advise?name=" + XSS.replace("<", "%3C") + "&deadline=1h")
    assert sized.status_code == 422
    body = sized.get_data(as_text=True)
    assert XSS not in body and 'id="advise-problem">no run of' in body and ESCAPED in body


def ids(html: str) -> list[str]:
    return re.findall(r'class="app-id" href="[^"]*">([^<]+?)(?: / \d+)?</a>', html)


def test_search_sorts_by_impact_and_waste_costliest_first(client: FlaskClient) -> None:
    # Impact: the costliest finding's core-hours (app-old 50, app-bad 2.5, app-cheap 0.1), then
    # 0 for the quiet ones, the unanalysed one last.
    assert ids(page(client, "/search?sort=impact")) == [
        "app-old", "app-bad", "app-cheap", "app-quiet", "app-before", "app-evil", "app-new",
    ]  # fmt: skip
    assert ids(page(client, "/search?sort=impact&order=asc"))[0] == "app-new"
    assert ids(page(client, "/search?sort=waste"))[:2] == ["app-cheap", "app-bad"]
    html = page(client, "/search?sort=impact")
    assert re.search(r'aria-sort="descending"[^>]*><a class="sort active" id="sort-impact"', html)
    # The column's link turns the order round.
    assert 'id="sort-impact" href="/search?sort=impact&amp;order=asc"' in html
    api = client.get("/api/apps?sort=waste").get_json()
    assert [a["app_id"] for a in api["apps"]][:2] == ["app-cheap", "app-bad"]


def test_exact_severity_and_unknown(client: FlaskClient) -> None:
    assert ids(page(client, "/search?severity=none&severity_mode=exactly")) == [
        "app-quiet",
        "app-before",
        "app-evil",
    ]
    assert ids(page(client, "/search?severity=none")) != ids(
        page(client, "/search?severity=none&severity_mode=exactly")
    )
    assert ids(page(client, "/search?severity=unknown&severity_mode=exactly")) == ["app-new"]
    assert client.get("/search?severity=unknown").status_code == 400
    assert client.get("/search?severity_mode=sometimes").status_code == 400


def test_every_filter_in_force_is_shown_with_a_way_to_remove_it(client: FlaskClient) -> None:
    html = page(client, "/search?verdict=regression&user=" + XSS.replace("<", "%3C"))
    chips = re.findall(r'<span class="chip" data-filter="([^"]+)">(.*?)</span>', html, re.S)
    labels = [label for label, _ in chips]
    assert labels == ["user", "verdict"]
    assert "regression (slower than expected)" in chips[1][1]
    assert XSS not in html and ESCAPED in chips[0][1]
    assert '<option value="regression" selected>' in html
    removed = re.search(r'data-filter="verdict">.*?<a href="([^"]+)"', html, re.S)
    assert removed is not None and "verdict" not in removed.group(1)
    # Even when nothing matches, the filter says why.
    empty = page(client, "/search?verdict=improvement")
    assert 'data-filter="verdict"' in empty and "No application matches." in empty
    assert "No filter: every application." in page(client, "/search")
    servers = page(client, "/search?server=staging")
    assert '<option value="staging" selected>staging</option>' in servers
    assert set(ids(servers)) == {"app-quiet", "app-new", "app-evil"}


def test_dashboard_lists_the_days_costliest_applications_with_their_fix(
    client: FlaskClient,
) -> None:
    html = page(client, "/")
    table = re.search(r'id="worst-apps">(.*?)</table>', html, re.S)
    assert table is not None
    # app-old is the costliest overall but older than a day.
    assert ids(table.group(1)) == ["app-bad", "app-cheap"]
    first, second = table.group(1).split("<tbody>")[1].split("</tr>")[:2]
    # The fix: the settings the top finding names (read from the stored results), else its advice.
    assert "Stage 2: max task 9.1x" in first
    assert "<code>spark.sql.adaptive.skewJoin.skewedPartitionFactor=2</code>" in first
    assert "1 of 9 tasks failed" in second
    assert XSS not in html


def test_dashboard_counts_equal_what_their_links_list(client: FlaskClient) -> None:
    html = page(client, "/")
    table = re.search(r'id="severity-counts">(.*?)</table>', html, re.S)
    assert table is not None
    links = re.findall(r'<a class="count" href="([^"]+)">([\d,]+)</a>', table.group(1))
    assert len(links) == 12  # 6 severities (unknown included) x 2 periods
    for href, count in links:
        listed = page(client, href.replace("&amp;", "&"))
        shown = re.search(r'id="result-count">([\d,]+)', listed)
        assert shown is not None and shown.group(1) == count, href
    # So do the most frequent findings of the week.
    frequent = re.findall(
        r'<tr><td><a href="(/search\?heuristic=[^"]+)">[^<]+</a>.*?</td><td>([\d,]+)</td></tr>',
        html,
    )
    assert len(frequent) == 4
    for href, count in frequent:
        listed = page(client, href.replace("&amp;", "&"))
        shown = re.search(r'id="result-count">([\d,]+)', listed)
        assert shown is not None and shown.group(1) == count, href


def test_dashboard_regressions_link_their_period_and_say_what_changed(client: FlaskClient) -> None:
    html = page(client, "/")
    section = html[html.index('id="regressions"') :]
    assert 'href="/search?verdict=regression&amp;since=1d"' in section
    day = section[section.index('id="regressions-day-table"') :]
    assert "app-bad" in day.split("</table>")[0]
    assert f"spark.custom: (unset) → {ESCAPED}" in day  # no named cause: what changed instead
