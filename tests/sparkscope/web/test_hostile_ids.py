"""Application ids are other people's strings: every link and API path is built with each
segment percent-encoded, so that every stored id -- slashes, dot segments, ``?``, ``#``, ``%``,
spaces, unicode, an id ending in ``/whatif`` -- reaches its own application, never another's
(decoy applications ``b``, ``x`` and ``whatif`` stand where a mis-built link would land). Through
the test client here, in a real browser in test_browser_hostile_ids."""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterator
from urllib.parse import quote, unquote, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine, now_ms
from sparkscope.models.application import Application, StageTaskDistribution
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import make_app

HOSTILE = (
    "a/../b",
    "..",
    ".",
    "x/whatif",
    "x/whatif/whatif",
    "x/timeline",
    "a?b",
    "a#b",
    "50%",
    "%2F",
    "%2e%2E",
    "a b",
    "ünï/cødé 名前",
    "a//b",
    "/lead",
    "trail/",
    "q?x=1&y=2#z",
    "semi;colon=1",
)
DECOYS = ("b", "x", "whatif", "a")
#: An id stored on both servers: its page asks to choose one (409).
TWICE = "dup/../b"
NAME = "hostile ids"
GRID = [round(i * 0.05, 2) for i in range(21)]


def _simulatable(session: Session, app: Application) -> None:
    """Give each stage a task distribution, so that the what-if can be computed (and its answer
    says which application it is about)."""
    for s in range(app.num_stages or 0):
        q = [400 + 20 * i for i in range(21)]
        session.add(
            StageTaskDistribution(
                application_id=app.id,
                stage_id=s,
                attempt_id=0,
                quantiles=GRID,
                metrics={"executor_run_time_ms": q, "duration_ms": [v + 5 for v in q]},
            )
        )


@pytest.fixture(scope="module")
def hostile_app(pg_server_url: str, pg_template: str) -> Iterator[Flask]:
    url = create_pg_database(pg_server_url, template=pg_template)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    engine = make_engine(url)
    now = now_ms()
    with Session(engine) as session:
        prod = b.server(session, "prod", "http://shs.example:18080")
        other = b.server(session, "other", "http://other.example:18080")
        for i, app_id in enumerate(HOSTILE + DECOYS):
            app = b.application(session, prod, app_id, name=NAME, start_ms=now - i * 60_000)
            b.mark_analyzed(session, app, fingerprint, Severity.NONE)
            _simulatable(session, app)
        for srv in (prod, other):
            app = b.application(session, srv, TWICE, name="twice")
            b.mark_analyzed(session, app, fingerprint, Severity.NONE)
        session.commit()
    engine.dispose()
    flask_app = make_app(url, WHATIF_CACHE_SECONDS=0)
    yield flask_app
    flask_app.extensions["sparkscope.engine"].dispose()
    drop_pg_database(pg_server_url, url)


@pytest.fixture
def client(hostile_app: Flask) -> FlaskClient:
    return hostile_app.test_client()


def page_links(client: FlaskClient, name: str = NAME) -> dict[str, str]:
    """App id -> the link of its page, as the search page shows them."""
    page = client.get(f"/search?name={quote(name)}").get_data(as_text=True)
    found = re.findall(r'class="app-id" href="([^"]+)">([^<]*)</a>', page)
    return {html_lib.unescape(text): html_lib.unescape(href) for href, text in found}


def attribute(page: str, name: str) -> str:
    match = re.search(rf'{name}="([^"]*)"', page)
    assert match, name
    return html_lib.unescape(match.group(1))


def browser_path(href: str) -> str:
    """What a browser asks for: dot segments of the path removed (URL standard), the rest kept
    as written (an encoded slash stays encoded)."""
    parts = urlsplit(href)
    out: list[str] = []
    for seg in parts.path.split("/")[1:]:
        if seg.lower() in ("..", "%2e%2e", ".%2e", "%2e."):
            if out:
                out.pop()
        elif seg.lower() not in (".", "%2e"):
            out.append(seg)
    return "/" + "/".join(out) + (f"?{parts.query}" if parts.query else "")


def test_every_page_link_opens_its_own_application(client: FlaskClient) -> None:
    links = page_links(client)
    assert set(HOSTILE + DECOYS) <= set(links)
    for app_id in HOSTILE:
        href = links[app_id]
        assert browser_path(href) == href, href  # nothing a browser would rewrite
        page = client.get(href)
        assert page.status_code == 200, (app_id, href)
        shown = re.search(r'<h1><span class="app-id">([^<]*)</span>', page.get_data(as_text=True))
        assert shown and html_lib.unescape(shown.group(1)) == app_id, app_id


def test_every_api_path_on_the_page_is_the_applications_own(client: FlaskClient) -> None:
    links = page_links(client)
    for app_id in HOSTILE:
        page = client.get(links[app_id]).get_data(as_text=True)
        json_href = html_lib.unescape(re.findall(r'href="([^"]*)">JSON</a>', page)[0])
        whatif_href = attribute(page, "data-whatif-url")
        for href in (json_href, whatif_href):
            assert browser_path(href) == href, (app_id, href)
        body = client.get(json_href).get_json()
        assert body["app_id"] == app_id, (app_id, json_href)
        assert body["shs_url"] == f"http://shs.example:18080/history/{quote(app_id, safe='')}/"
        answer = client.get(whatif_href + "&executors=1,2")
        assert answer.status_code == 200, (app_id, whatif_href, answer.get_json())
        assert answer.get_json()["app_id"] == app_id, (app_id, whatif_href)


def test_the_search_api_links_and_the_query_forms_reach_any_id(client: FlaskClient) -> None:
    api = client.get(f"/api/apps?name={quote(NAME)}").get_json()
    urls = {a["app_id"]: a["url"] for a in api["apps"]}
    for app_id in HOSTILE:
        page = client.get(urls[app_id])
        assert page.status_code == 200, app_id
        assert (
            client.get("/api/apps/", query_string={"app_id": app_id}).get_json()["app_id"] == app_id
        )
        answer = client.get("/api/whatif", query_string={"app_id": app_id, "executors": "1"})
        assert answer.get_json()["app_id"] == app_id


def test_an_id_ending_in_whatif_is_reachable_through_the_detail_api(client: FlaskClient) -> None:
    # encoded: the application "x/whatif"; a real slash: the what-if of "x"
    assert client.get("/api/apps/x%2Fwhatif").get_json()["app_id"] == "x/whatif"
    assert client.get("/api/apps/x/whatif?executors=1").get_json()["app_id"] == "x"
    assert client.get("/api/apps/x%2Fwhatif/whatif?executors=1").get_json()["app_id"] == (
        "x/whatif"
    )
    assert client.get("/api/apps/x%2Fwhatif%2Fwhatif").get_json()["app_id"] == "x/whatif/whatif"


def test_the_choose_a_server_page_links_to_the_application_on_each(client: FlaskClient) -> None:
    href = page_links(client, "twice")[TWICE]
    bare = href.split("?")[0]  # without the server: on two servers
    resp = client.get(bare)
    assert resp.status_code == 409
    choices = [
        html_lib.unescape(h)
        for h in re.findall(r'<li><a href="([^"]+)">', resp.get_data(as_text=True))
    ]
    assert len(choices) == 2
    for choice in choices:
        assert browser_path(choice) == choice and unquote(choice.split("?")[0]) == "/apps/" + TWICE
        assert client.get(choice).status_code == 200


def test_every_timeline_link_opens_its_own_applications_timeline(client: FlaskClient) -> None:
    links = page_links(client)
    for app_id in HOSTILE:
        page = client.get(links[app_id]).get_data(as_text=True)
        href = attribute(page, 'id="timeline-link" href')
        assert browser_path(href) == href, (app_id, href)
        timeline = client.get(href)
        assert timeline.status_code == 200, (app_id, href)
        text = timeline.get_data(as_text=True)
        shown = re.search(r'id="timeline-header">.*?class="app-id"[^>]*>([^<]*)</a>', text, re.S)
        assert shown and html_lib.unescape(shown.group(1)) == app_id, (app_id, href)
        # Its stage bars open the stages of the same application, and link back here.
        figure = json.loads(re.findall(r'id="timeline-figure">(.*?)</script>', text, re.S)[0])
        stage_url = next(t for t in figure["data"] if t["name"] == "stage")["customdata"][0][0]
        assert browser_path(stage_url) == stage_url
        stage = client.get(stage_url).get_data(as_text=True)
        assert attribute(stage, 'id="timeline-link" href') == href, app_id
