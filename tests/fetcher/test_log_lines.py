"""Application ids and names come from the History Server: control characters in them (CR, LF,
ESC) are escaped in log lines and in the run's summary, so a served value cannot forge a line."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from sparkscope.printable import printable
from tests.fetcher.fake_shs import running, spread_listing

FORGED = "2026-12-01 09:00:00,000 INFO sparkscope.fetch: loaded everything, all is well"


def test_control_characters_in_served_ids_and_names_cannot_forge_a_log_line(
    tmp_path: Path, fresh_pg_url: str
) -> None:
    entries = [json.loads(json.dumps(e)) for e in spread_listing()[-2:]]
    evil = copy.deepcopy(entries[0])
    evil["id"] = f"app-evil\r\n{FORGED}"  # not recorded: its requests fail, and are logged
    evil["name"] = f"nightly\x1b[2J\x1b[H\n{FORGED}"
    entries[1]["name"] = f"report\r\n{FORGED}"
    with running(entries + [evil]) as shs:
        config = tmp_path / "sparkscope.yaml"
        config.write_text(
            f"database_url: {fresh_pg_url}\nservers: [{{name: prod, url: '{shs.url}'}}]\n"
            "fetcher: {threads: 1, retries: 0, max_app_failures: 1}\n"
        )
        proc = subprocess.run(
            [sys.executable, "-m", "sparkscope", "-v", "--config", str(config), "fetch"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 1, proc.stderr  # the evil app failed, the others loaded
    output = proc.stdout + proc.stderr
    lines = output.splitlines()
    assert not [line for line in lines if line.startswith(FORGED)]
    assert "\x1b" not in output and "\r" not in output
    assert "app-evil\\r\\n2026-12-01" in output  # escaped, still readable
    assert "report\\r\\n" in output  # a loaded app's name, in the "loaded" line


def test_printable_escapes_controls_and_keeps_the_rest() -> None:
    assert (
        printable("a\r\nb\tc\x1b[0m\x00\x7f\u2028é 应用")
        == "a\\r\\nb\\tc\\x1b[0m\\x00\\x7f\\u2028é 应用"
    )
    assert printable("plain text: 42") == "plain text: 42"
