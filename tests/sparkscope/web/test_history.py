"""History page and its chart data."""

from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import pytest
from flask.testing import FlaskClient

from sparkscope.present.charts import RunPoint, history_figure


def figure_of(html: str) -> dict:  # type: ignore[type-arg]
    match = re.search(
        r'<script type="application/json" id="history-figure">(.*?)</script>', html, re.S
    )
    assert match is not None
    return json.loads(match.group(1))


def test_history_chart_has_every_run_with_links_and_severity_colours(client: FlaskClient) -> None:
    html = client.get("/history?name=daily_sales_etl").get_data(as_text=True)
    fig = figure_of(html)
    points = [t for t in fig["data"] if t.get("mode") == "markers"]
    by_name = {t["name"]: t for t in points}
    assert set(by_name) == {"none", "severe"}
    assert by_name["severe"]["customdata"][0][0] == "/apps/app-002?server=prod"
    assert by_name["severe"]["customdata"][0][3] == "40.0 min"
    assert by_name["severe"]["marker"]["color"] == "#ef6c00"
    assert by_name["none"]["y"] == [18.0]  # minutes
    assert 'src="/static/js/plotly.min.js"' in html and 'src="/static/js/charts.js"' in html
    assert '<option value="daily_sales_etl">' in html  # datalist suggestions


def test_history_metric_selector(client: FlaskClient) -> None:
    html = client.get("/history?name=daily_sales_etl&metric=spill").get_data(as_text=True)
    fig = figure_of(html)
    severe = next(t for t in fig["data"] if t.get("name") == "severe")
    assert severe["y"] == [5.0]  # GiB
    assert severe["customdata"][0][5] == "5.0 GiB"
    wasted = figure_of(
        client.get("/history?name=daily_sales_etl&metric=wasted_core_hours").get_data(as_text=True)
    )
    assert next(t for t in wasted["data"] if t.get("name") == "severe")["y"] == [4.5]
    assert client.get("/history?name=daily_sales_etl&metric=bogus").status_code == 400


def test_history_escapes_json_in_script_block(client: FlaskClient) -> None:
    html = client.get("/history?name=%3Cscript%3Ealert(1)%3C/script%3E").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    fig = figure_of(html)
    assert fig["data"][1]["customdata"][0][1] == "app-xss"


def test_history_without_name_and_unknown_name(client: FlaskClient) -> None:
    assert client.get("/history").status_code == 200
    html = client.get("/history?name=never ran").get_data(as_text=True)
    assert "No runs named" in html and "history-figure" not in html


def test_history_figure_is_plain_data() -> None:
    fig = history_figure(
        [
            RunPoint(
                "/apps/a", "a", 0, "1970-01-01T00:00:00Z", "1m 00s", "critical", 120_000, "2m"
            ),
            RunPoint(
                "/apps/b", "b", 60_000, "1970-01-01T00:01:00Z", "1m 00s", "unknown", None, "–"
            ),
        ],
        "Duration",
        "ms",
    )
    traces = {t.get("name"): t for t in fig["data"]}
    assert traces["critical"]["y"] == [2.0] and traces["critical"]["x"] == [
        "1970-01-01 00:00:00.000"
    ]
    assert traces["unknown"]["y"] == [None]
    assert fig["layout"]["yaxis"]["title"]["text"] == "Duration (minutes)"
    json.dumps(fig)  # JSON-able as it is


def test_history_figure_is_valid_plotly() -> None:
    fig = history_figure(
        [RunPoint("/apps/a", "a", 0, "1970-01-01T00:00:00Z", "1m", "low", 5.0, "5 B")],
        "Input bytes",
        "bytes",
    )
    # Plotly's own validation of every property raises ValueError on an invalid figure.
    checked = go.Figure(fig)
    points = checked.data[-1]
    assert points.name == "low"  # one trace per severity, for the colours
    assert points.y[0] * 1024 == pytest.approx(5.0)  # a few bytes are drawn in KiB
    assert points.customdata[0][0] == "/apps/a"  # the URL a click opens


def test_history_figure_dates_match_strftime_and_keep_runs_of_the_same_start() -> None:
    import datetime as dt

    starts = [0, 1_700_000_123_456, 1_700_000_123_456, 4_102_444_799_999]
    fig = history_figure(
        [RunPoint(f"/apps/{i}", str(i), ms, "", "", "low", 1.0, "") for i, ms in enumerate(starts)],
        "Duration",
        "ms",
    )
    expected = [
        dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        for ms in starts
    ]
    line = fig["data"][0]
    assert line["x"] == expected and len(line["y"]) == len(starts)
    assert expected[1] == "2023-11-14 22:15:23.456"


def test_history_against_input_and_executors(client: FlaskClient) -> None:
    fig = figure_of(client.get("/history?name=daily_sales_etl&x=input").get_data(as_text=True))
    assert fig["layout"]["title"]["text"] == "Duration by input size"
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("input size (")
    assert "type" not in fig["layout"]["xaxis"]  # a number axis, not dates
    markers = [t for t in fig["data"] if t.get("mode") == "markers"]
    assert all("<br>input size: %{x:,.3~f} " in t["hovertemplate"] for t in markers)
    api = client.get("/api/history?name=daily_sales_etl").get_json()["runs"]
    scale = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}[
        fig["layout"]["xaxis"]["title"]["text"].split("(")[1].rstrip(")")
    ]
    xs = sorted(x for t in fig["data"] for x in t["x"])
    assert xs == sorted(r["input_bytes"] / scale for r in api)
    ex = figure_of(client.get("/history?name=daily_sales_etl&x=executors").get_data(as_text=True))
    assert ex["layout"]["title"]["text"] == "Duration by executors"
    assert sorted(x for t in ex["data"] for x in t["x"]) == sorted(r["executors"] for r in api)
    by_time = figure_of(client.get("/history?name=daily_sales_etl").get_data(as_text=True))
    assert by_time["layout"]["xaxis"]["type"] == "date"
    assert by_time["layout"]["title"]["text"] == "Duration by start time"
    resp = client.get("/history?name=daily_sales_etl&x=size")
    assert resp.status_code == 400
    assert "invalid parameter &#39;x&#39;" in resp.get_data(as_text=True)


def test_history_suggests_names_for_an_unknown_one(client: FlaskClient) -> None:
    html = client.get("/history?name=DAILY_sales").get_data(as_text=True)
    assert "No runs named “DAILY_sales”" in html
    links = re.findall(r'<a class="suggestion" href="([^"]+)">([^<]+)</a>', html)
    assert [t for _h, t in links] == ["daily_sales_etl"]
    assert links[0][0] == "/history?name=daily_sales_etl&amp;metric=duration&amp;x=start"
    misspelt = client.get("/history?name=retreid+job").get_data(as_text=True)
    assert re.findall(r'<a class="suggestion"[^>]*>([^<]+)</a>', misspelt) == ["retried job"]
    hostile = client.get("/history?name=%3Cscript%3E").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in hostile
    assert ">&lt;script&gt;alert(1)&lt;/script&gt;</a>" in hostile
