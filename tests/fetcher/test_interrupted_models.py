"""An interrupted fetch keeps every model: `sparkscope fetch --url demo/scaling-events` killed
with SIGKILL once its loads are done and its derived work is under way, then run again, ends with
the what-if models, the server's prior and every derived table of an uninterrupted fetch, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import create_pg_database, drop_pg_database
from tests.fetcher.conftest import ROOT, assert_derived, fetch, start_fetch
from tests.support.derived import derived_state
from tests.support.processes import count_apps, kill, wait_for


def _fetch_until(
    url: str, db_url: str, config: Path, line: str
) -> tuple[subprocess.Popen[str], threading.Event]:
    """A fetch process and an event set once its output shows ``line``."""
    proc = start_fetch(url, db_url, config)
    seen = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for text_line in proc.stdout:
            if line in text_line:
                seen.set()

    threading.Thread(target=read, daemon=True).start()
    return proc, seen


SCALING = ROOT / "demo" / "scaling-events"  # 36 runs of 3 recurring applications


@pytest.fixture(params=["sqlite", "postgresql"])
def scaling_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two new databases of one kind: (the one killed and re-run, the uninterrupted one)."""
    if request.param == "sqlite":  # the embedded default: `fetch` creates and migrates it
        yield f"sqlite:///{tmp_path / 'killed.db'}", f"sqlite:///{tmp_path / 'clean.db'}"
        return
    server, template = (
        request.getfixturevalue("pg_server_url"),
        request.getfixturevalue("pg_template"),
    )
    urls = [create_pg_database(server, template=template) for _ in range(2)]
    yield urls[0], urls[1]
    for url in urls:
        drop_pg_database(server, url)


def test_killed_at_36_of_36_then_rerun_keeps_every_model(
    scaling_db: tuple[str, str], config_file: Path
) -> None:
    """The issue's case: `fetch --url demo/scaling-events` killed once its progress reaches
    36/36 (its loads are done, its derived work under way), then run again: the re-run skips
    every stored application and still ends with the 3 what-if models and the server's prior of
    an uninterrupted fetch, every derived table equal."""
    killed, clean = scaling_db
    proc, seen = _fetch_until(str(SCALING), killed, config_file, "progress: 36/36")
    try:
        wait_for(seen.is_set, proc)
    finally:
        kill(proc)
    assert count_apps(killed) == 36
    out = fetch(str(SCALING), killed, config_file)
    assert "loaded 0, skipped 36" in out
    fetch(str(SCALING), clean, config_file)
    want = derived_state(clean)
    assert len(want["whatif_model"]) == 3 and len(want["whatif_cluster"]) == 1
    assert len(want["run_prediction"]) == 36
    assert_derived(killed, want)
