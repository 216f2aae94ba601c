"""Real headless Chromium on the timeline of a recorded application with several executors: the
application page's link opens it, its chart draws from local assets under the CSP (no console
error) with the slot curves and one bar per job and stage attempt, and a click on a stage bar
opens that stage's page. Screenshot in test-artifacts/screenshots/timeline-page.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sparkscope.web.conftest import served_corpora
from tests.support.browser import SHOTS, chromium, new_page

pytestmark = pytest.mark.browser

SCALING = Path(__file__).resolve().parents[3] / "demo" / "scaling-events"


@pytest.fixture(scope="module")
def base_url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    with served_corpora(pg_server_url, pg_template, SCALING) as base:
        yield base


def test_the_timeline_draws_slots_jobs_and_stages_and_a_stage_bar_opens_its_page(
    base_url: str,
) -> None:
    with chromium() as browser:
        page, errors = new_page(browser)
        apps = page.request.get(f"{base_url}/api/apps").json()["apps"]
        # The run with the most executors: several lanes of slots to draw.
        widest = max(apps, key=lambda a: (a.get("num_executors") or 0, a["app_id"]))
        page.goto(f"{base_url}{widest['url']}")
        page.click("#timeline-link")
        page.wait_for_load_state()
        assert page.url.split("?")[0].endswith(f"/apps/{widest['app_id']}/timeline")
        page.locator("#timeline-chart[data-ready='1']").wait_for(timeout=30_000)
        assert page.locator("#timeline-idle").inner_text().startswith("Idle capacity: ")
        assert page.locator("#timeline-tail").inner_text().startswith("Serial tail: ")
        assert page.locator("#timeline-gap").inner_text().startswith("Longest gap")
        figure = page.evaluate(
            "() => JSON.parse(document.getElementById('timeline-figure').textContent)"
        )
        bars = sum(len(t["base"]) for t in figure["data"] if t["type"] == "bar")
        assert bars >= 2
        # Both slot curves and every bar are in the drawn SVG.
        assert page.locator("#timeline-chart .scatterlayer .trace").count() == 2
        assert page.locator("#timeline-chart .barlayer .point").count() == bars
        page.screenshot(path=str(SHOTS / "timeline-page.png"), full_page=True)
        stage_traces = [t for t in figure["data"] if t["type"] == "bar" and "stage" in t["name"]]
        target = stage_traces[0]["customdata"][0][0]
        # Plotly draws the traces in order: the stage bars come after the jobs' bars.
        job_bars = sum(
            len(t["base"]) for t in figure["data"] if t["type"] == "bar" and "job" in t["name"]
        )
        # Plotly's drag layer takes the pointer: click where the bar is drawn, as a person does.
        box = page.locator("#timeline-chart .barlayer .point").nth(job_bars).bounding_box()
        assert box is not None and box["width"] > 0
        page.mouse.click(box["x"] + min(3, box["width"] / 2), box["y"] + box["height"] / 2)
        page.wait_for_url(f"**{target.split('?')[0]}*", timeout=30_000)
        assert page.locator("#stage-id").inner_text() == target.split("/stages/")[1].split("/")[0]
        assert errors == []
