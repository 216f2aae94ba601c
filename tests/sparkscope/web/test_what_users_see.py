"""What a new user saw go wrong (issue 12), each checked on the pages and the API: readable finding
details, root-cause lines of failures, no contradictions on the application page, a compare page
without per-run noise, a history axis in the runs' unit, strict numbers, the config-error banner
everywhere, links that open odd application ids, and 405 answers with an Allow header."""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from heuristics.result import Severity
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine, now_ms
from sparkscope.models.application import Executor, Stage
from tests.conftest import create_pg_database, drop_pg_database
from tests.sparkscope.present.test_display import PY_ERROR
from tests.sparkscope.web import builders as b
from tests.sparkscope.web.conftest import make_app

ODD_IDS = ("app/with/slashes", "x/../y", "..", "cr\r\nlf", "a b%20c?d#e")
HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def url(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A database with failing, odd-id and short recurring applications."""
    db_url = create_pg_database(pg_server_url, template=pg_template)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    engine = make_engine(db_url)
    now = now_ms()
    with Session(engine) as session:
        srv = b.server(session)
        fail = b.application(session, srv, "app-fail", name="crashing_importer", jvm_gc_time_ms=167)
        b.finding(
            session,
            fail,
            "job_failures",
            Severity.SEVERE,
            "1 of 5 jobs failed (20%)",
            details={
                "columns": ["job", "name", "tasks", "failed_tasks", "failed_stages", "duration_ms"],
                "rows": [[4, "collect at fail_app_crash.py:35", 6, 1, 1, 1587]],
            },
        )
        b.finding(
            session,
            fail,
            "stage_failures",
            Severity.MODERATE,
            "1 failed stage attempts (0 recovered by a retry)",
            details={
                "columns": [
                    "stage",
                    "attempt",
                    "name",
                    "recovered",
                    "failed_tasks",
                    "failure_reason",
                ],
                "rows": [[6, 0, "collect", False, 1, "Job aborted: " + PY_ERROR]],
            },
        )
        b.finding(
            session,
            fail,
            "task_failures",
            Severity.CRITICAL,
            "1 of 20 task attempts failed",
            details={
                "columns": [
                    "cause",
                    "failed_tasks",
                    "example_stage",
                    "example_task",
                    "example_error",
                ],
                "rows": [["other", 1, 6, 19, PY_ERROR]],
            },
        )
        b.mark_analyzed(session, fail, fingerprint)
        # The History Server reported neither GC nor peak memory per executor for this one.
        session.execute(
            update(Executor)
            .where(Executor.application_id == fail.id)
            .values(total_gc_time_ms=0, peak_jvm_heap_bytes=0)
        )
        for i, app_id in enumerate(ODD_IDS):
            odd = b.application(session, srv, app_id, name="odd ids", start_ms=now - i * HOUR_MS)
            b.mark_analyzed(session, odd, fingerprint, Severity.NONE)
        # Executor ids are the History Server's strings: '²' is a digit to str.isdigit, not to int.
        odd_exec = b.application(session, srv, "app-odd-executors", name="odd executors")
        for executor_id in ("²", "10"):
            session.add(
                Executor(application_id=odd_exec.id, executor_id=executor_id, is_driver=False)
            )
        # Its first stage's first task is stamped before the stage's submission (clock skew).
        session.execute(
            update(Stage)
            .where(Stage.application_id == odd_exec.id, Stage.stage_id == 0)
            .values(first_task_launched_time_ms=Stage.submission_time_ms - 5000)
        )
        b.mark_analyzed(session, odd_exec, fingerprint, Severity.NONE)
        for i, (seconds, input_gib) in enumerate(((8, 1), (13, 4))):
            run = b.application(
                session,
                srv,
                f"app-short-{i}",
                name="short job",
                start_ms=now - (10 - i) * HOUR_MS,
                duration_ms=seconds * 1000,
                input_bytes=input_gib * 1024**3,
                props={
                    "spark.app.id": f"app-short-{i}",
                    "spark.app.startTime": str(now + i),
                    "spark.app.submitTime": str(now + i),
                    "spark.driver.port": str(40000 + i),
                },
            )
            b.mark_analyzed(session, run, fingerprint, Severity.NONE)
        session.commit()
    engine.dispose()
    yield db_url
    drop_pg_database(pg_server_url, db_url)


@pytest.fixture(scope="module")
def client(url: str) -> Iterator[FlaskClient]:
    app = make_app(url)
    yield app.test_client()
    app.extensions["sparkscope.engine"].dispose()


def _finding(html: str, name: str) -> str:
    match = re.search(
        rf'<article class="finding [^"]*" id="finding-{name}">(.*?)</article>', html, re.S
    )
    assert match is not None, name
    return match.group(1)


def test_details_tables_show_labels_units_and_words(client: FlaskClient) -> None:
    page = client.get("/apps/app-fail").get_data(as_text=True)
    jobs = _finding(page, "job_failures")
    assert "<th>Failed tasks</th>" in jobs and "<th>Duration</th>" in jobs
    assert '<td class="num">1.6 s</td>' in jobs
    assert "failed_tasks" not in jobs and "1,587" not in jobs
    stages = _finding(page, "stage_failures")
    assert "<td>no</td>" in stages and "False" not in stages
    tasks = _finding(page, "task_failures")
    assert "<th>Example error</th>" in tasks
    # The API carries the same display form next to the raw details.
    api = client.get("/api/apps/app-fail").get_json()
    shown = {f["heuristic"]: f["details_display"] for f in api["findings"]}
    assert shown["job_failures"]["rows"] == [
        ["4", "collect at fail_app_crash.py:35", "6", "1", "1", "1.6 s"]
    ]
    raw = {f["heuristic"]: f["details"] for f in api["findings"]}
    assert raw["job_failures"]["rows"][0][-1] == 1587


def test_failure_messages_show_the_root_cause_first(client: FlaskClient) -> None:
    page = client.get("/apps/app-fail").get_data(as_text=True)
    for name in ("task_failures", "stage_failures"):
        block = _finding(page, name)
        cause = block.index("ValueError: invalid literal for int() with base 10: &#39;corrupt&#39;")
        whole = block.index('<details class="full-message">')
        assert cause < whole
        assert "PythonRunner.scala:581" in block[whole:]  # the whole message, on demand


def test_application_page_has_no_contradictions(client: FlaskClient) -> None:
    page = client.get("/apps/app-fail").get_data(as_text=True)
    executors = page[page.index('id="executor-table"') :]
    assert executors.count(">not reported</td>") == 3  # the driver and two executors
    assert executors.count('History Server">unknown</td>') == 3  # peak heap, not "0 B"
    assert "spent 167 ms in GC" in page


def test_executor_ids_that_are_not_ascii_numbers_still_list(client: FlaskClient) -> None:
    resp = client.get("/apps/app-odd-executors")
    assert resp.status_code == 200
    table = resp.get_data(as_text=True).split('id="executor-table"')[1].split("</table>")[0]
    ids = re.findall(r"<tr[^>]*>\s*<td>([^<]*)</td>", table)
    assert ids == ["driver", "1", "2", "10", "²"]  # driver, numbers in order, then the rest


def test_stage_waits_follow_the_resource_accounting_rule(client: FlaskClient) -> None:
    page = client.get("/apps/app-odd-executors?stages=all").get_data(as_text=True)
    table = page.split('id="stage-table"')[1].split("<tbody>")[1].split("</tbody>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    assert len(rows) == 3
    # Cells with a sort value: stage, attempt, tasks, failed, duration, wait, ...
    waits = [re.findall(r'<td data-v="([^"]*)">', row)[5] for row in rows]
    assert waits[0] == "0"  # clipped at zero as the total is, not -5 s
    assert all(int(w) >= 0 for w in waits)
    api = client.get("/api/apps/app-odd-executors").get_json()["resources"]["wait"]
    assert sum(int(w) for w in waits) == round(api["stage_scheduling_delay_s"] * 1000)


def test_compare_hides_per_run_settings_and_colours_only_regressions(client: FlaskClient) -> None:
    page = client.get("/compare?left=app-short-0&right=app-short-1").get_data(as_text=True)
    table = page[
        page.index('id="compare-config"') : page.index(
            "</table>", page.index('id="compare-config"')
        )
    ]
    for key in ("spark.app.id", "spark.app.startTime", "spark.app.submitTime", "spark.driver.port"):
        assert key not in table
    assert 'id="compare-per-run"' in page  # still there, folded away
    rows = dict(re.findall(r'<tr class="[^"]*?(worse|better)?">\s*<th>([^<]+)</th>', page))
    input_row = re.search(r'<tr class="([^"]*)">\s*<th>Input</th>', page)
    duration_row = re.search(r'<tr class="([^"]*)">\s*<th>Duration</th>', page)
    assert input_row is not None and duration_row is not None, rows
    assert "worse" not in input_row.group(1)  # 4x the input is not a regression
    assert "worse" in duration_row.group(1)  # 8 s -> 13 s is
    api = client.get("/api/compare?left=app-short-0&right=app-short-1").get_json()
    assert "spark.app.id" not in {c["key"] for c in api["config"]}
    assert "spark.driver.port" in api["config_per_run"]


def test_history_of_short_runs_is_in_seconds_without_a_repeated_column(client: FlaskClient) -> None:
    page = client.get("/history?name=short+job").get_data(as_text=True)
    match = re.search(
        r'<script type="application/json" id="history-figure">(.*?)</script>', page, re.S
    )
    assert match is not None
    figure = json.loads(match.group(1))
    assert figure["layout"]["yaxis"]["title"]["text"] == "Duration (seconds)"
    assert figure["data"][0]["y"] == [8.0, 13.0]
    head = page[page.index('id="history-table"') : page.index("</thead>")]
    assert head.count("Duration") + head.count("duration") == 1
    spill = client.get("/history?name=short+job&metric=input").get_data(as_text=True)
    head = spill[spill.index('id="history-table"') : spill.index("</thead>")]
    assert "duration" in head and ">Input</th>" in head  # labelled as on the application page
    assert _y_axis(spill) == "Input (GiB)"
    waste = client.get("/history?name=short+job&metric=wasted_core_hours").get_data(as_text=True)
    assert _y_axis(waste) == "Wasted core-hours"  # not "Wasted core-hours (core-hours)"


def _y_axis(page: str) -> str:
    match = re.search(
        r'<script type="application/json" id="history-figure">(.*?)</script>', page, re.S
    )
    assert match is not None
    title: str = json.loads(match.group(1))["layout"]["yaxis"]["title"]["text"]
    return title


@pytest.mark.parametrize(
    "path",
    [
        "/api/apps?severity=%C2%B2",
        "/search?severity=%E2%91%A0",
        "/search?severity=%D9%A3",
        "/search?page=%D9%A3",
        "/api/apps?page=%C2%B2",
        "/?days=%E2%91%A0",
        "/search?page=%2B3",
    ],
)
def test_numbers_are_ascii_digits_only(client: FlaskClient, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code == 400
    assert "invalid parameter" in resp.get_data(as_text=True)


def test_ascii_numbers_still_work(client: FlaskClient) -> None:
    search = client.get("/search?severity=3&page=1")
    assert search.status_code == 200
    # The number was read, not dropped: severity 3 (severe) is the selected minimum.
    assert '<option value="severe" selected>' in search.get_data(as_text=True)
    dash = client.get("/?days=30")
    assert dash.status_code == 200
    assert '<option value="30" selected>' in dash.get_data(as_text=True)


def test_odd_application_ids_open_from_their_links(client: FlaskClient) -> None:
    page = client.get("/search?name=odd+ids").get_data(as_text=True)
    hrefs = [html_lib.unescape(h) for h in re.findall(r'class="app-id" href="([^"]+)"', page)]
    assert len(hrefs) == len(ODD_IDS)
    for href in hrefs:
        # What a browser keeps: no raw slash inside the id, no dot segment, no line break.
        path = href.split("?")[0]
        assert "\r" not in href and "\n" not in href and "/../" not in path
        assert path.count("/") == 2, href
        resp = client.get(href)
        assert resp.status_code == 200, href
    api = client.get("/api/apps?name=odd+ids").get_json()
    opened = {client.get(a["url"]).status_code for a in api["apps"]}
    assert opened == {200}
    assert (
        client.get("/api/apps/" + "app%2Fwith%2Fslashes").get_json()["app_id"] == "app/with/slashes"
    )


def test_405_answers_name_the_allowed_methods(client: FlaskClient) -> None:
    for path in ("/search", "/api/apps", "/apps/app-fail"):
        resp = client.post(path)
        assert resp.status_code == 405
        assert "GET" in resp.headers.get("Allow", ""), path


def test_config_error_is_shown_on_every_page_and_in_the_api(url: str, tmp_path: Path) -> None:
    broken = tmp_path / "heuristics.yaml"
    broken.write_text("stage_skew:\n  task_time_ratio: {low: 9, moderate: 2}\n")
    app = make_app(url, HEURISTICS_PATH=str(broken))
    client = app.test_client()
    for path in (
        "/",
        "/history",
        "/history?name=short+job",
        "/search",
        "/help",
        "/apps/app-fail",
        "/compare?left=app-short-0&right=app-short-1",
        "/compare",
        "/help/stage_skew",
        "/help/no_such_heuristic",  # error pages too: the banner comes with every template
    ):
        page = client.get(path).get_data(as_text=True)
        assert 'id="config-error"' in page and "stage_skew.task_time_ratio" in page, path
    # Every API answer whose findings depend on the heuristics in force says they are not the file's.
    for path in (
        "/api/apps",
        "/api/apps/app-fail",
        "/api/compare?left=app-short-0&right=app-short-1",
    ):
        body = client.get(path).get_json()
        assert "stage_skew.task_time_ratio" in (body["heuristics_config_error"] or ""), path
    app.extensions["sparkscope.engine"].dispose()


def test_help_page_writes_times_and_sizes_as_the_pages_do(client: FlaskClient) -> None:
    page = client.get("/help/task_granularity").get_data(as_text=True)
    assert '60,000 <span class="muted">(1.0 min)</span>' in page  # target_task_ms


def test_help_index_has_one_line_descriptions(client: FlaskClient) -> None:
    page = client.get("/help").get_data(as_text=True)
    table = page[page.index('id="heuristics"') :]
    assert ">Disk spill</a>" in table
    assert "How much a stage spilled compared with the data it processed." in table
    assert ">disk_spill<" not in table  # the name is not repeated beside its title
