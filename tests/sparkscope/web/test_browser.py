"""Real headless Chromium against the app under a real WSGI server: search, open an application,
compare it with its previous run, open its history and click a point. No console errors allowed
(a CSP violation is one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask

from tests.support.browser import SHOTS, chromium, new_page, served

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base_url(app: Flask) -> Iterator[str]:
    with served(app) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as b:
        yield b


def test_search_open_compare_history_click(browser, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page, errors = new_page(browser)

    # Search with filters through the form.
    page.goto(f"{base_url}/search")
    page.fill("input[name=name]", "daily")
    page.select_option("select[name=severity]", "low")
    page.click("#search-submit")
    page.wait_for_url("**/search?*")
    assert "name=daily" in page.url and "severity=low" in page.url
    # Empty fields are left out of the URL; the filters in force are listed.
    assert "&user=" not in page.url and "&queue=" not in page.url, page.url
    assert page.locator("#active-filters .chip").count() == 2
    rows = page.locator("#results tbody tr")
    assert rows.count() == 1
    assert "sev-border-severe" in (rows.first.locator("td.sev").get_attribute("class") or "")
    badge = page.locator("#results .badge[title]").first
    assert "max task 9.1x" in (badge.get_attribute("title") or "")
    # The top finding's title is on the page, not only on hover.
    assert "max task 9.1x" in rows.first.locator(".finding-title").inner_text()
    page.screenshot(path=str(SHOTS / "1-search.png"), full_page=True)

    # Open the application.
    page.click("#results a.app-id")
    page.wait_for_url("**/apps/app-002*")
    assert page.locator("#finding-stage_skew").is_visible()
    # Sort the stage table by run time (descending on the second click).
    header = page.locator("#stage-table thead th", has_text="run time")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    page.screenshot(path=str(SHOTS / "2-application.png"), full_page=True)

    # Compare with the previous run.
    page.click("#compare-previous")
    page.wait_for_url("**/compare?*")
    assert page.locator("#compare-config").is_visible()
    assert page.locator("#compare-stages tr.stage-pair").count() == 3
    assert page.locator("#compare-findings tr.one-sided").count() >= 1
    assert not page.locator("#compare-metrics").is_visible()  # folded below the stages
    page.click("#compare-metrics-section summary")
    assert page.locator("#compare-metrics").is_visible()
    page.screenshot(path=str(SHOTS / "3-compare.png"), full_page=True)

    # History of the name; click a point and land on that run.
    page.goto(f"{base_url}/apps/app-002?server=prod")
    page.click("#history-link")
    page.wait_for_selector("#history-chart[data-ready='1']")
    point = page.locator("#history-chart .scatterlayer .trace .points path").first
    box = point.bounding_box()
    assert box is not None
    page.screenshot(path=str(SHOTS / "4-history.png"), full_page=True)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url("**/apps/app-00*")
    assert "/apps/app-00" in page.url
    page.screenshot(path=str(SHOTS / "5-clicked-run.png"), full_page=True)

    # The metric selector reloads with another metric.
    page.goto(f"{base_url}/history?name=daily_sales_etl")
    page.select_option("#metric-select", "spill")
    page.wait_for_url("**metric=spill*")
    page.wait_for_selector("#history-chart[data-ready='1']")

    page.goto(f"{base_url}/")
    page.screenshot(path=str(SHOTS / "0-dashboard.png"), full_page=True)
    page.close()
    assert errors == []
