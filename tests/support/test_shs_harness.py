"""Smoke test: the real History Server lists the committed fixture event logs."""

import json
import socket
import urllib.request
from pathlib import Path

import pytest

from .shs import ShsStartError, have_java_and_pyspark, running_shs

EVENTLOG_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "eventlogs"
FIXTURE_APP_IDS = {
    "local-1795971819513",  # daily_sales_etl, healthy
    "local-1795971880926",  # skewed_customer_revenue
    "local-1795972006331",  # flaky_ingest, task failures
    "local-1795972028393",  # billing_reconcile, stage and job failure
    "local-1795972038475",  # crashing_importer, driver exits with an error
}

pytestmark = [
    pytest.mark.shs,
    pytest.mark.skipif(not have_java_and_pyspark(), reason="needs Java 17+ and pyspark"),
]


def test_shs_lists_exactly_the_fixture_apps_as_completed() -> None:
    with running_shs(EVENTLOG_DIR, expect_apps=len(FIXTURE_APP_IDS)) as base_url:
        assert base_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{base_url}/api/v1/applications", timeout=10) as resp:
            apps = json.load(resp)
    # leaving the block must have stopped the server
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{base_url}/api/v1/version", timeout=5)

    assert {app["id"] for app in apps} == FIXTURE_APP_IDS
    assert len(apps) == len(FIXTURE_APP_IDS)
    for app in apps:
        assert [attempt["completed"] for attempt in app["attempts"]] == [True], app["id"]


def test_busy_port_fails_with_the_shs_log_tail() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ShsStartError, match=r"(?s)exited with code .*log tail.*BindException"):
            with running_shs(EVENTLOG_DIR, port=port, timeout_s=60):
                pass


def test_missing_log_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="event-log directory"):
        with running_shs(tmp_path / "absent"):
            pass
