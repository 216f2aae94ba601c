"""Real headless Chromium over the issue-12 fixes a person sees: distinct severity colours, the
root-cause line of a failure with the whole message one click away, and odd application ids that
open from their links. Screenshots in test-artifacts/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from heuristics.result import Severity
from sparkscope.present.display import severity_style
from tests.sparkscope.web.conftest import make_app
from tests.sparkscope.web.test_what_users_see import ODD_IDS, url  # noqa: F401  (the module's database)
from tests.support.browser import SHOTS, chromium, new_page, served

pytestmark = pytest.mark.browser


def _rgb(hex_color: str) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


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


def test_severity_colours_and_root_cause(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"{base_url}/apps/app-fail")
    border = "el => getComputedStyle(el).borderLeftColor"
    severe = page.locator("#finding-job_failures").evaluate(border)
    critical = page.locator("#finding-task_failures").evaluate(border)
    assert severe == _rgb(severity_style(Severity.SEVERE).color)
    assert critical == _rgb(severity_style(Severity.CRITICAL).color)
    assert severe != critical
    badge = page.locator("#finding-task_failures header .badge").evaluate(
        "el => getComputedStyle(el).backgroundColor"
    )
    assert badge == critical  # badge and border of one severity agree

    finding = page.locator("#finding-task_failures")
    assert finding.locator(".root-cause").inner_text().startswith("ValueError: invalid literal")
    trace = finding.locator("details.full-message pre")
    assert not trace.is_visible()
    finding.locator("details.full-message summary").click()
    assert trace.is_visible() and "PythonRunner.scala:581" in trace.inner_text()
    assert page.locator("#executor-gc-note").is_visible()
    page.screenshot(path=str(SHOTS / "6-failure-root-cause.png"), full_page=True)

    page.goto(f"{base_url}/search?app_id=app-fail")
    row = page.locator("#results tbody tr td.sev").first
    assert row.evaluate(border) == critical


def test_odd_ids_open_in_a_real_browser(page, base_url: str) -> None:  # type: ignore[no-untyped-def]
    search = f"{base_url}/search?name=odd+ids"
    page.goto(search)
    count = page.locator("#results a.app-id").count()
    assert count == len(ODD_IDS)
    opened = []
    for i in range(count):
        page.goto(search)
        with page.expect_navigation() as nav:
            page.locator("#results a.app-id").nth(i).click()
        assert nav.value is not None and nav.value.status == 200, page.url
        opened.append(page.locator("h1 .app-id").inner_text())
    # Every id opened its own page (CR/LF shows as white space in the heading).
    assert sorted(" ".join(t.split()) for t in opened) == sorted(
        " ".join(i.split()) for i in ODD_IDS
    )
    page.screenshot(path=str(SHOTS / "7-odd-id.png"), full_page=True)
