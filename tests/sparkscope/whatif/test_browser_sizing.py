"""The what-if and sizing pages in a real headless Chromium: reached from the navigation, the
chart drawn with its band and axes, a deadline's answer in words and a --conf block that copies.
Screenshots in test-artifacts/screenshots/ (sizing-*.png); no console errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sparkscope.whatif.conftest import whatif_app
from tests.sparkscope.whatif.test_api import CHURN_8X, NIGHTLY
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, SHOTS, served

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base_url(corpus_url: str) -> Iterator[str]:
    app = whatif_app(corpus_url)
    with served(app) as url:
        yield url
    app.extensions["sparkscope.engine"].dispose()


@pytest.fixture(scope="module")
def page(base_url: str) -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # The copy button writes the clipboard, which the page may then be asked to read back.
        context = browser.new_context(
            viewport={"width": 1280, "height": 900},
            permissions=["clipboard-read", "clipboard-write"],
        )
        tab = context.new_page()
        errors: list[str] = []
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        yield tab
        browser.close()
    assert errors == []


def test_what_if_page_from_the_navigation(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base_url}/")
    page.click("#nav-whatif")
    page.wait_for_url("**/whatif")
    page.click(f'#whatif-recent a[href^="/apps/{CHURN_8X}/whatif"]')
    page.wait_for_selector("#whatif-chart[data-ready='1']")
    chart = page.locator("#whatif-chart")
    assert chart.locator(".scatterlayer .js-fill").count() == 1  # the likely range, drawn
    titles = chart.locator(".xtitle").text_content(), chart.locator(".ytitle").text_content()
    assert titles == ("executors (1 core each)", "duration (s)")
    assert (
        page.locator("#whatif-observed")
        .inner_text()
        .startswith("This run: 8 executors of 1 core: spark.executor.instances=8")
    )
    assert not page.locator("#whatif-how p").first.is_visible()  # the model behind the fold
    page.click("#whatif-how summary")
    assert "simulation" in page.locator("#whatif-model").inner_text()
    page.fill("#whatif-deadline", "90s")
    page.click("#whatif-run")
    page.wait_for_url("**deadline=90s*")
    page.wait_for_selector("#whatif-chart[data-ready='1']")
    rec = page.locator("#whatif-recommendation")
    executors = rec.get_attribute("data-executors")
    assert executors and rec.inner_text().startswith(
        f"For a deadline of 90 s: {executors} executors of 1 core"
    )
    page.click("#whatif-conf-copy")
    page.wait_for_selector("#whatif-conf-copy[data-copied='1']")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert (
        copied == f"--conf spark.executor.instances={executors} \\\n--conf spark.executor.cores=1"
    )
    page.screenshot(path=str(SHOTS / "sizing-whatif.png"), full_page=True)


def test_sizing_page_for_a_deadline(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base_url}/")
    page.click("#nav-sizing")
    page.wait_for_url("**/advise")
    page.fill("#advise-name", NIGHTLY)
    page.fill("#advise-deadline", "45s")
    page.click("#advise-run")
    page.wait_for_selector("#advise-chart[data-ready='1']")
    rec = page.locator("#advise-recommendation")
    assert rec.inner_text().startswith("For 45 s: ")
    assert "spark.executor.instances=" in rec.inner_text()
    assert (page.locator("#advise-chart .xtitle").text_content() or "").startswith("executors")
    assert page.locator("#advise-chart .scatterlayer .js-fill").count() <= 1
    page.screenshot(path=str(SHOTS / "sizing-advise.png"), full_page=True)
