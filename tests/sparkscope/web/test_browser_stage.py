"""Real headless Chromium on the stage page of a recorded application: the finding's "seen in"
link opens it, its task-distribution charts draw from local assets under the CSP (no console
error), its tables sort on a click and its link leads back. Screenshot in
test-artifacts/screenshots/stage-page.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sparkscope.web.conftest import served_corpora
from tests.support.browser import SHOTS, chromium, new_page

pytestmark = pytest.mark.browser

RECORDED = Path(__file__).resolve().parents[3] / "demo" / "spark-events"
SKEWED = "local-1795971880926"


@pytest.fixture(scope="module")
def base_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    with served_corpora(pg_server_url, pg_template, RECORDED) as base:
        yield base


def test_the_findings_stage_link_opens_a_drawn_stage_page(base_url: str) -> None:
    with chromium() as browser:
        page, errors = new_page(browser)
        page.goto(f"{base_url}/apps/{SKEWED}")
        link = page.locator("#finding-stage_skew .stage-links a").first  # the skewed stage
        stage_text = link.inner_text()
        link.click()
        page.wait_for_load_state()
        assert "/stages/" in page.url
        assert f"stage {page.locator('#stage-id').inner_text()}" == stage_text.split(" (")[0]
        assert page.locator("#stage-findings #finding-stage_skew").count() == 1
        page.locator("#dist-chart-ms[data-ready='1']").wait_for(timeout=30_000)
        assert page.locator("#dist-chart-ms .scatterlayer .trace").count() >= 3
        assert page.locator("#distribution-table tbody tr").count() >= 5
        # The kept tasks sort by a click (slowest first as served; fastest first after one).
        rows = page.locator("#task-table tbody tr")
        served_first = rows.first.locator("td").first.inner_text()
        page.locator("#task-table th", has_text="duration").click()
        page.locator("#task-table th", has_text="duration").click()
        assert rows.count() >= 2
        durations = [
            int(v)
            for v in page.locator("#task-table tbody tr td:nth-child(8)").evaluate_all(
                "cells => cells.map(c => c.getAttribute('data-v'))"
            )
        ]
        assert durations in (sorted(durations), sorted(durations, reverse=True))
        page.screenshot(path=str(SHOTS / "stage-page.png"), full_page=True)
        page.click("#app-link")
        page.wait_for_load_state()
        assert page.locator("h1 .app-id").inner_text() == SKEWED
        assert served_first and errors == []
