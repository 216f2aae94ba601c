"""The What if chart and the deadline sizing in a real headless Chromium (no console errors:
a CSP violation would be one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from sparkscope.models.application import Application
from tests.sparkscope.whatif.conftest import whatif_app
from tests.sparkscope.whatif.test_api import CHURN_8X, NIGHTLY
from tests.support.browser import SHOTS, chromium, new_page, served

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base_url(corpus_url: str) -> Iterator[str]:
    with served(whatif_app(corpus_url)) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as b:
        yield b


def test_what_if_chart_and_deadline(browser, base_url: str, corpus_url: str) -> None:  # type: ignore[no-untyped-def]
    engine = create_engine(corpus_url)
    with Session(engine) as session:
        stored = session.execute(
            select(Application.duration_ms, Application.num_executors).where(
                Application.app_id == CHURN_8X
            )
        ).one()
    engine.dispose()
    page, errors = new_page(browser)

    page.goto(f"{base_url}/apps/{CHURN_8X}")
    # Nothing is asked for until the section is opened.
    assert page.locator("#whatif-status").text_content() == "Predicting…"
    page.click("#whatif-details summary")
    chart = page.locator("#whatif-chart[data-ready='1']")
    chart.wait_for(timeout=30_000)
    # Band (2 traces), prediction, cost, observed run.
    assert chart.get_attribute("data-traces") == "5"
    assert page.locator("#whatif-chart .scatterlayer .trace").count() == 5
    assert "69.2 s" in page.locator("#whatif-status").inner_text()
    # The status reports the stored run itself: its executors and its duration.
    observed = page.locator("#whatif-status").inner_text()
    assert observed.startswith(f"Observed: {stored.num_executors} executors of 1 core")
    assert f"{stored.duration_ms / 1000:.1f} s. Floor: " in observed

    # A deadline marks the recommendation (and adds its marker to the chart).
    page.fill("#whatif-deadline", "90s")
    page.wait_for_selector("#whatif-chart[data-traces='6']")
    rec = page.locator("#whatif-recommendation")
    assert rec.inner_text().startswith("Recommended for 90.0 s")
    assert rec.get_attribute("data-recommended") in {"2", "3", "4"}
    page.fill("#whatif-deadline", "5s")
    page.wait_for_function(
        "document.getElementById('whatif-recommendation').textContent.includes('Nothing meets')"
    )
    page.fill("#whatif-deadline", "soon")
    assert "not a duration" in rec.inner_text()
    page.screenshot(path=str(SHOTS / "whatif-application.png"), full_page=True)

    # Other sizes through the form.
    page.fill("#whatif-executors", "1,2")
    page.click("#whatif-run")
    page.wait_for_function(
        "document.querySelectorAll('#whatif-chart .scatterlayer .trace').length === 5"
    )

    # The history page sizes for a deadline.
    page.goto(f"{base_url}/history?name={NIGHTLY}")
    page.fill("#sizing-deadline", "45s")
    page.click("#sizing-run")
    page.locator("#sizing-chart[data-ready='1']").wait_for(timeout=30_000)
    status = page.locator("#sizing-status")
    assert status.inner_text().startswith("Recommended for 45.0 s")
    # 45 s needs more than the one slot of the fastest 1-slot run (55.9 s): more executors, or
    # more cores per executor (considered on the simulation with the server's prior).
    executors = int(status.get_attribute("data-recommended") or "0")
    cores = int(status.get_attribute("data-recommended-cores") or "0")
    assert executors >= 1 and cores >= 1 and executors * cores >= 2
    assert "Cores per executor in the history: " in status.inner_text()
    page.screenshot(path=str(SHOTS / "whatif-history.png"), full_page=True)
    assert errors == []
