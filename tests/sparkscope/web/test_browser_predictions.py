"""Real headless Chromium: the history page draws the expected band, the interval, the marked
regressions and the next-run forecast after the last run (recorded recurring corpus)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparkscope.cli.main import cli
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.web.conftest import make_app
from tests.support.browser import SHOTS, chromium, new_page, served

pytestmark = pytest.mark.browser

RECORDED = Path(__file__).resolve().parents[3] / "demo" / "recurring-events"


@pytest.fixture(scope="module")
def recurring_url(
    pg_server_url: str, pg_template: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    url = create_pg_database(pg_server_url, pg_template)
    # A 5% margin: the AQE-off run (9% above its interval's top) is then a regression.
    config = tmp_path_factory.mktemp("config") / "sparkscope.yaml"
    config.write_text("predictions:\n  margin: 0.05\n")
    env = {"SPARKSCOPE_DATABASE_URL": url, "SPARKSCOPE_CONFIG": str(config)}
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDED)], env=env)
    assert result.exit_code == 0, result.output
    yield url
    drop_pg_database(pg_server_url, url)


def test_history_band_forecast_and_regressions(recurring_url: str) -> None:
    with served(make_app(recurring_url)) as base, chromium() as browser:
        page, errors = new_page(browser, height=1100)
        page.goto(f"{base}/history?name=order_enrichment")
        page.wait_for_selector("#band-chart[data-ready='1']")
        traces = page.evaluate(
            """() => document.getElementById('band-chart').data.map(t => ({
                name: t.name || '', fill: t.fill || '', n: t.x.length, x: t.x, y: t.y}))"""
        )
        by_name = {t["name"]: t for t in traces}
        # The band: the interval's bottom filled up to its top, one value per predicted run.
        assert by_name["interval"]["fill"] == "tonexty"
        assert by_name["interval"]["n"] == by_name["expected"]["n"] == 14
        tops = [t for t in traces if t["name"] == ""][0]["y"]
        pairs = list(zip(by_name["interval"]["y"], tops, strict=True))
        # The key's first prediction, from one run with no other key predicted before it, has
        # no interval: a gap in the band there (both ends null), every later run has both ends.
        assert pairs[0] == (None, None)
        assert all(lo is not None and hi is not None and lo <= hi for lo, hi in pairs[1:])
        assert by_name["took"]["n"] == 15
        assert by_name["regression"]["n"] >= 1
        forecast = by_name["next run (forecast)"]
        assert forecast["n"] == 1 and forecast["x"][0] > max(by_name["took"]["x"])
        # The band is drawn: Plotly rendered a filled path for it.
        assert page.locator("#band-chart .scatterlayer .js-fill").count() >= 1
        assert "Next run: expected" in page.locator("#prediction-band").inner_text()
        page.screenshot(path=str(SHOTS / "history-prediction-band.png"), full_page=True)
        assert errors == []
