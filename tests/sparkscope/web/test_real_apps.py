"""Every page and API route works on the recorded real Spark 4.0.1 applications (demo/)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from sparkscope.cli.main import cli
from tests.sparkscope.web.conftest import make_app

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "demo" / "spark-events"


def test_every_page_on_recorded_apps(fresh_pg_url: str) -> None:
    if "fetch" not in cli.list_commands(None) or not (RECORDED / "index.json").is_file():  # type: ignore[arg-type]
        pytest.skip("needs `sparkscope fetch` and the recorded demo/spark-events")
    result = CliRunner().invoke(
        cli, ["fetch", "--url", str(RECORDED)], env={"SPARKSCOPE_DATABASE_URL": fresh_pg_url}
    )
    assert result.exit_code == 0, result.output
    client = make_app(fresh_pg_url).test_client()
    listing = client.get("/api/apps").get_json()
    apps = listing["apps"]
    assert listing["total"] == len(apps) == 21
    names = {a["name"] for a in apps}
    paths = ["/", "/search", "/help", "/search?severity=low", "/search?heuristic=stage_skew"]
    for a in apps:
        paths += [a["url"], f"/api/apps/{a['app_id']}"]
    for name in names:
        paths += [f"/history?name={quote(name)}", f"/api/history?name={quote(name)}"]
    for left, right in zip(apps, apps[1:], strict=False):
        paths.append(f"/compare?left={left['app_id']}&right={right['app_id']}")
    failed = [(p, client.get(p).status_code) for p in paths]
    assert [f for f in failed if f[1] != 200] == []
    skewed = client.get("/api/apps/local-1795971880926").get_json()
    assert skewed["name"] == "skewed_customer_revenue"
    assert skewed["resources"]["used_core_hours"] <= skewed["resources"]["allocated_core_hours"]
    # Every enabled heuristic reported on it (local-mode apps are too short for most gates).
    assert "stage_skew" in {f["heuristic"] for f in skewed["findings"]}
    assert all(
        f["severity"] in ("none", "low", "moderate", "severe", "critical")
        for f in skewed["findings"]
    )
    # The crashing importer's page shows the Python error that killed it, the whole trace on demand.
    crash = next(a for a in apps if a["name"] == "crashing_importer")
    page = client.get(crash["url"]).get_data(as_text=True)
    tasks = page[page.index('id="finding-task_failures"') :]
    tasks = tasks[: tasks.index("</article>")]
    cause = tasks.index("ValueError: invalid literal for int() with base 10: &#39;corrupt&#39;")
    assert cause < tasks.index('<details class="full-message">')
    assert "Failed tasks" in tasks and "failed_tasks" not in tasks
    findings = {
        f["heuristic"]: f for f in client.get(f"/api/apps/{crash['app_id']}").get_json()["findings"]
    }
    # Local mode: no "0 executor(s)" beside "Executors counted 1"; NONE titles read as no problem.
    assert "only the driver ran tasks" in findings["executor_load_imbalance"]["title"]
    assert findings["task_granularity"]["severity"] == "none"
    assert "suggest" not in findings["task_granularity"]["title"]
