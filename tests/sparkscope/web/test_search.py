"""Search page: filters, quick ranges, paging, sorting, badges and bad input."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session

from sparkscope.db import make_engine
from sparkscope.queries.search import SearchFilters, search_apps
from tests.sparkscope.web.conftest import XSS, Fleet


def ids(html: str) -> list[str]:
    """Application ids of the result panels, in page order."""
    return re.findall(r'class="app-id" href="[^"]*">([^<]+?)(?: / \d+)?</a>', html)


def test_no_filter_lists_everything_newest_first(client: FlaskClient) -> None:
    html = client.get("/search").get_data(as_text=True)
    found = ids(html)
    assert found[:3] == ["app-002", "app-xss", "app-dup"]
    assert found[-1] == "app-odd"
    assert "8 applications" in html


def test_name_is_a_case_insensitive_substring_with_special_characters(client: FlaskClient) -> None:
    assert ids(client.get("/search?name=DAILY_SALES").get_data(as_text=True)) == [
        "app-002",
        "app-001",
    ]
    # % and _ must match literally, not as LIKE wildcards.
    assert ids(client.get("/search?name=v2.1/part_%25x [eu]").get_data(as_text=True)) == ["app-odd"]
    assert ids(client.get("/search?name=%25").get_data(as_text=True)) == ["app-odd"]
    assert ids(client.get("/search?name=part__x").get_data(as_text=True)) == []


def test_user_queue_and_id_filters(client: FlaskClient) -> None:
    assert ids(client.get("/search?user=carol").get_data(as_text=True)) == ["app-att", "app-att"]
    assert set(ids(client.get("/search?queue=adhoc").get_data(as_text=True))) == {"app-att"}
    assert ids(client.get("/search?app_id=app-001").get_data(as_text=True)) == ["app-001"]


def test_severity_and_heuristic_filters(client: FlaskClient) -> None:
    html = client.get("/search?severity=severe").get_data(as_text=True)
    assert set(ids(html)) == {"app-002", "app-xss", "app-att"}
    assert set(ids(client.get("/search?severity=critical").get_data(as_text=True))) == {"app-xss"}
    assert ids(client.get("/search?heuristic=stage_skew").get_data(as_text=True)) == ["app-002"]
    # disk_spill is stored for app-002 but at NONE: it did not fire.
    assert ids(client.get("/search?heuristic=disk_spill").get_data(as_text=True)) == []
    assert (
        ids(client.get("/search?heuristic=executor_gc&severity=moderate").get_data(as_text=True))
        == []
    )


def test_time_ranges_and_quick_buttons(client: FlaskClient) -> None:
    week = ids(client.get("/search?since=7d").get_data(as_text=True))
    assert "app-odd" not in week and "app-001" in week
    assert ids(client.get("/search?since=1h").get_data(as_text=True)) == []
    day = ids(client.get("/search?since=1d").get_data(as_text=True))
    assert "app-002" in day and "app-001" not in day
    assert ids(client.get("/search?start_to=2000-01-01").get_data(as_text=True)) == []
    assert len(ids(client.get("/search?end_from=2000-01-01T00:00").get_data(as_text=True))) == 8
    html = client.get("/search?user=carol").get_data(as_text=True)
    # The quick buttons keep the other filters.
    assert 'href="/search?user=carol&amp;since=1h"' in html


def test_sorting(client: FlaskClient) -> None:
    oldest = ids(client.get("/search?sort=start&order=asc").get_data(as_text=True))
    assert oldest[0] == "app-odd"
    longest = ids(client.get("/search?sort=duration").get_data(as_text=True))
    assert longest[0] == "app-002"
    worst = ids(client.get("/search?sort=severity").get_data(as_text=True))
    assert worst[0] == "app-xss"
    # Tied severities come newest first (app-002 started 2 h ago, app-att's first attempt 9 h ago),
    # and in the reverse order when ascending.
    assert worst[1:3] == ["app-002", "app-att"]

    def api_ids(query: str) -> list[str]:
        return [a["app_id"] for a in client.get(f"/api/apps?{query}").get_json()["apps"]]

    assert api_ids("severity=severe&sort=severity") == ["app-xss", "app-002", "app-att"]
    assert api_ids("severity=severe&sort=severity&order=asc") == ["app-att", "app-002", "app-xss"]


def test_badges_have_severity_colour_and_title_and_row_border(client: FlaskClient) -> None:
    html = client.get("/search?app_id=app-002").get_data(as_text=True)
    assert 'class="badge sev-severe" title="Stage 2: max task 9.1x the median">stage_skew<' in html
    assert 'class="badge sev-low" title="GC took 8.5% of executor task time">executor_gc<' in html
    assert 'badge sev-none" title="No spill"' not in html
    # The top finding's title is written out, not only on hover.
    assert 'class="finding-title" title="Stage 2: max task 9.1x the median">Stage 2: max' in html
    assert 'class="sev sev-border-severe"' in html
    ok = client.get("/search?app_id=app-001").get_data(as_text=True)
    assert 'class="sev sev-border-none"' in ok
    moderate = client.get("/search?user=carol&sort=start").get_data(as_text=True)
    assert 'class="sev sev-border-moderate"' in moderate
    # Severe and critical borders differ, as their badges do.
    critical = client.get("/search?app_id=app-xss").get_data(as_text=True)
    assert 'class="sev sev-border-critical"' in critical


def test_paging(fleet: Fleet) -> None:
    engine = make_engine(fleet.url)
    with Session(engine) as session:
        first = search_apps(session, SearchFilters(page=1), per_page=3)
        third = search_apps(session, SearchFilters(page=3), per_page=3)
    engine.dispose()
    assert first.total == 8 and first.pages == 3
    assert len(first.rows) == 3 and len(third.rows) == 2
    assert first.rows[0].app_id == "app-002" and third.rows[-1].app_id == "app-odd"


def test_paging_links(client: FlaskClient, app) -> None:  # type: ignore[no-untyped-def]
    app.config["PAGE_SIZE"] = 3
    try:
        html = client.get("/search?user=carol&page=1").get_data(as_text=True)
        assert 'rel="next"' not in html  # 2 results: one page
        html = client.get("/search?page=2").get_data(as_text=True)
        assert 'href="/search?page=1"' in html and 'href="/search?page=3"' in html
        assert "page 2 of 3" in html
    finally:
        app.config["PAGE_SIZE"] = 50


def test_search_escapes_names_and_users(client: FlaskClient) -> None:
    html = client.get("/search?app_id=app-xss").get_data(as_text=True)
    assert XSS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("start_from=yesterday", "start_from"),
        ("end_to=2024-13-45", "end_to"),
        ("page=-1", "page"),
        ("page=0", "page"),
        ("page=abc", "page"),
        ("page=202", "page"),  # beyond the 10,000 matches search counts, at 50 a page
        ("page=100000", "page"),
        ("sort=name", "sort"),
        ("order=sideways", "order"),
        ("severity=terrible", "severity"),
        ("heuristic=no_such", "heuristic"),
        ("since=2y", "since"),
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(
    client: FlaskClient, query: str, param: str
) -> None:
    resp = client.get(f"/search?{query}")
    assert resp.status_code == 400
    assert f"&#39;{param}&#39;" in resp.get_data(as_text=True)
    api = client.get(f"/api/apps?{query}")
    assert api.status_code == 400
    assert f"'{param}'" in api.get_json()["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/search?name=a%00b",
        "/api/apps?user=%00",
        "/history?name=%00",
        "/compare?left=%00&right=app-001",
        "/search?name=" + "x" * 1001,
        "/apps/a%00b",
        "/api/apps/a%00b",
        "/apps/" + "y" * 300,
    ],
)
def test_hostile_input_is_never_a_500(client: FlaskClient, path: str) -> None:
    assert client.get(path).status_code in (400, 404)
