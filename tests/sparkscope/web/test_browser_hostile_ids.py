"""Hostile application ids in a real headless Chromium: each id's link on the search page opens
its own page, and the what-if the page's script asks for when its section is opened is that
application's own (the browser removes dot segments and cuts at ``?`` and ``#``: a link or an
API path not encoded segment by segment would land on a decoy application, or nowhere)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask

from tests.sparkscope.web.test_hostile_ids import HOSTILE, NAME, TWICE
from tests.sparkscope.web.test_hostile_ids import hostile_app as hostile_app  # the fixture
from tests.support.browser import chromium, new_page, served

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base_url(hostile_app: Flask) -> Iterator[str]:
    with served(hostile_app) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def test_each_link_and_the_whatif_of_each_page_are_the_applications_own(
    browser: Any, base_url: str
) -> None:
    page, errors = new_page(browser)
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    search = f"{base_url}/search?name={quote(NAME)}"
    page.goto(search)
    texts = page.locator("a.app-id").all_inner_texts()
    assert set(HOSTILE) <= set(texts)
    for app_id in HOSTILE:
        page.goto(search)
        page.locator("a.app-id").nth(texts.index(app_id)).click()
        page.wait_for_load_state()
        assert page.locator("h1 .app-id").inner_text() == app_id, page.url
        with page.expect_response(lambda r: "whatif" in r.url) as answer:
            page.click("#whatif-details summary")
        response = answer.value
        assert response.status == 200, (app_id, response.url)
        assert response.json()["app_id"] == app_id, (app_id, response.url)
        page.locator("#whatif-chart[data-ready='1']").wait_for(timeout=30_000)
        # the JSON link as the browser resolves it (asked without opening it as a page)
        href = page.get_by_role("link", name="JSON").evaluate("a => a.href")
        assert page.request.get(href).json()["app_id"] == app_id, (app_id, href)
    assert missing == [] and errors == []


def test_the_choose_a_server_links_open_the_application(browser: Any, base_url: str) -> None:
    page, errors = new_page(browser)
    page.goto(f"{base_url}/apps/{quote(TWICE, safe='')}")
    choices = page.locator("ul.choose-server a")
    assert choices.count() == 2
    for i in range(2):
        page.goto(f"{base_url}/apps/{quote(TWICE, safe='')}")
        page.locator("ul.choose-server a").nth(i).click()
        page.wait_for_load_state()
        assert page.locator("h1 .app-id").inner_text() == TWICE, page.url
    assert [e for e in errors if "409" not in e] == []
