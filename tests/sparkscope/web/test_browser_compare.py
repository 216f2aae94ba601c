"""Real headless Chromium on the recorded Spark runs: pick the run to compare with from the runs of
the same name, read the stages lined up and open one; the history against input size."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sparkscope.web.conftest import served_corpora
from tests.support.browser import SHOTS, chromium, new_page

pytestmark = pytest.mark.browser

RECORDED = Path(__file__).resolve().parents[3] / "demo" / "spark-events"


@pytest.fixture(scope="module")
def base_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    with served_corpora(pg_server_url, pg_template, RECORDED) as base:
        yield base


def test_pick_a_run_then_read_the_stages_lined_up(base_url: str) -> None:
    with chromium() as browser:
        page, errors = new_page(browser)
        runs = page.request.get(f"{base_url}/api/history?name=skewed_customer_revenue").json()
        earlier, latest = runs["runs"]
        page.goto(f"{base_url}/compare?left={latest['app_id']}")
        picker = page.locator("#picker-runs tbody tr")
        assert picker.count() == 1
        assert "previous run" in picker.first.inner_text()
        page.screenshot(path=str(SHOTS / "compare-picker.png"), full_page=True)
        picker.first.locator("a.pick").click()
        # The earlier run becomes the baseline (left), the latest is read against it.
        page.wait_for_url(f"**left={earlier['app_id']}*right={latest['app_id']}*")
        # Settings come before the stages; the stage whose duration moved most leads.
        config_y = page.locator("#compare-config").bounding_box()
        stages_y = page.locator("#compare-stages").bounding_box()
        assert config_y and stages_y and config_y["y"] < stages_y["y"]
        rows = page.locator("#compare-stages tbody tr.stage-pair")
        assert rows.count() == 6 and page.locator("#compare-stages tr.paired").count() == 6
        top = rows.first.locator("a.stage-link")
        assert [top.nth(i).inner_text() for i in (0, 1)] == ["4", "4"]
        page.screenshot(path=str(SHOTS / "compare-stages.png"), full_page=True)
        assert "+32" in rows.first.inner_text()  # 4 s -> 36 s
        top.nth(1).click()  # the latest run's stage
        page.wait_for_url(f"**/apps/{latest['app_id']}/stages/4/0*")
        assert page.locator("#stage-id").inner_text() == "4"
        page.close()
        assert errors == []


def test_history_against_input_size(base_url: str) -> None:
    with chromium() as browser:
        page, errors = new_page(browser)
        page.goto(f"{base_url}/history?name=daily_sales_etl")
        page.wait_for_selector("#history-chart[data-ready='1']")
        page.select_option("#x-select", "input")
        page.wait_for_url("**x=input*")
        page.wait_for_selector("#history-chart[data-ready='1']")
        chart = page.locator("#history-chart")
        assert "Duration by input size" in (chart.locator(".gtitle").text_content() or "")
        assert "input size (MiB)" in (chart.locator(".xtitle").text_content() or "")
        assert chart.locator(".scatterlayer .trace .points path").count() == 5
        page.screenshot(path=str(SHOTS / "history-input.png"), full_page=True)
        page.goto(f"{base_url}/history?name=Daily_Sales")
        assert page.locator("#no-runs").inner_text() == "No runs named “Daily_Sales”."
        page.locator("#name-suggestions a", has_text="daily_sales_etl").click()
        page.wait_for_selector("#history-chart[data-ready='1']")
        page.screenshot(path=str(SHOTS / "history-suggested.png"), full_page=True)
        page.close()
        assert errors == []
