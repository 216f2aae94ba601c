"""Real headless Chromium over the answer-first pages (issue 19): the verdict in the first screen
of the application page, what changed, the search table sorted by a click with its filters in
force, and the dashboard's costliest applications and counts. Screenshots in
test-artifacts/screenshots/ (answer-*.png); no console errors (a CSP violation is one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sparkscope.web.conftest import make_app
from tests.sparkscope.web.test_answer_first import url  # noqa: F401  (the module's database)
from tests.support.browser import SHOTS, chromium, new_page, served

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base_url(url: str) -> Iterator[str]:  # noqa: F811
    app = make_app(url)
    with served(app) as base:
        yield base
    app.extensions["sparkscope.engine"].dispose()


@pytest.fixture(scope="module")
def page(base_url: str) -> Iterator[object]:
    with chromium() as browser:
        tab, errors = new_page(browser)
        yield tab
    assert errors == []


def test_application_page_answers_in_the_first_screen(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base_url}/apps/app-bad")
    verdict = page.locator("#verdict")
    box = verdict.bounding_box()
    assert box is not None and box["y"] + box["height"] < 900  # no scrolling to the answer
    text = verdict.inner_text()
    assert text.startswith("severe Stage skew: Stage 2: max task 9.1x the median <script>")
    assert "costs 5.0 min of wall time, 1.25 core-hours" in text
    first = page.locator("#findings article.finding").first
    assert first.get_attribute("id") == "finding-stage_skew"
    findings_y = page.locator("#findings").bounding_box()["y"]
    assert findings_y < page.locator("#metrics").bounding_box()["y"]
    assert page.locator("#changes-list li").count() == 3
    page.screenshot(path=str(SHOTS / "answer-application.png"), full_page=True)
    # The verdict's heading jumps to its finding.
    page.click("#verdict a")
    assert page.url.endswith("#finding-stage_skew")


def test_search_table_sorts_on_a_click_and_lists_its_filters(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base_url}/search?since=1d")
    assert page.locator("#active-filters .chip").count() == 1
    page.click("#sort-impact")
    page.wait_for_url("**sort=impact*")
    rows = page.locator("#results-table tbody tr")
    assert rows.first.locator("a.app-id").inner_text() == "app-bad"  # app-old: 2 days old
    assert "max task 9.1x" in rows.first.locator(".finding-title").inner_text()
    page.click("#sort-impact")  # again: the other way round
    page.wait_for_url("**order=asc*")
    assert rows.first.locator("a.app-id").inner_text() == "app-new"
    # Exactly one severity through the form.
    page.select_option("#severity-select", "none")
    page.select_option("#severity-mode", "exactly")
    page.click("#search-submit")
    page.wait_for_url("**severity_mode=exactly*")
    assert page.locator("#results-table tbody tr").count() == 1  # app-quiet (app-before: 30 h)
    page.screenshot(path=str(SHOTS / "answer-search.png"), full_page=True)
    # Removing a filter keeps the others.
    page.locator('#active-filters .chip[data-filter="severity"] a').click()
    page.wait_for_load_state()
    assert "severity" not in page.url and "since=1d" in page.url
    page.goto(f"{base_url}/search?verdict=regression")
    chip = page.locator('#active-filters .chip[data-filter="verdict"]')
    assert "regression" in chip.inner_text()
    assert page.locator("#verdict-select").input_value() == "regression"


def test_dashboard_worst_applications_and_counts(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base_url}/")
    worst = page.locator("#worst-apps tbody tr")
    assert worst.count() == 2
    assert worst.first.locator("a.app-id").inner_text() == "app-bad"
    page.screenshot(path=str(SHOTS / "answer-dashboard.png"), full_page=True)
    link = page.locator("#severity-counts a.count").nth(8)  # "none", last day
    count = link.inner_text()
    link.click()
    page.wait_for_url("**severity_mode=exactly*")
    assert page.locator("#result-count").inner_text().startswith(f"{count} application")
