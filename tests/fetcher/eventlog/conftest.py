"""Event logs for the reader's tests: real Spark 4.0.1 logs of every layout and codec
(tests/fixtures/eventlog-layouts), the spark-events sample with its recorded SHS answers
(tests/fixtures/eventlogs, demo/spark-events), and cases derived from a real log here: an
11-file rolling split, an in-progress file cut inside its last line, two attempts of one app."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LAYOUTS = ROOT / "tests" / "fixtures" / "eventlog-layouts"
SAMPLE = ROOT / "tests" / "fixtures" / "eventlogs"
RECORDED = ROOT / "demo" / "spark-events"
PLAIN = "local-1796114417500"


def derive(plain: Path, out: Path) -> None:
    """Write the derived cases of one uncompressed log into ``out``."""
    import zstandard

    lines = plain.read_bytes().splitlines(keepends=True)
    app_id = plain.name
    rid = app_id.replace("local-", "local-9")
    rolled = out / f"eventlog_v2_{rid}"
    rolled.mkdir()
    text = [ln.replace(app_id.encode(), rid.encode()) for ln in lines]
    n = 11
    size = (len(text) + n - 1) // n
    cctx = zstandard.ZstdCompressor()
    for i in range(n):
        part = b"".join(text[i * size : (i + 1) * size])
        (rolled / f"events_{i + 1}_{rid}.zstd").write_bytes(cctx.compress(part))
    (rolled / f"appstatus_{rid}").write_bytes(b"")
    tid = app_id.replace("local-", "local-8")
    cut = [ln.replace(app_id.encode(), tid.encode()) for ln in lines]
    body = b"".join(cut[:-3]) + cut[-3][: len(cut[-3]) // 2]
    (out / f"{tid}.inprogress").write_bytes(body)
    aid = app_id.replace("local-", "local-7")
    for attempt, shift in (("1", 0), ("2", 3_600_000)):
        buf = []
        for ln in lines:
            ev = json.loads(ln.replace(app_id.encode(), aid.encode()))
            if ev["Event"] == "SparkListenerApplicationStart":
                ev["App Attempt ID"] = attempt
                ev["Timestamp"] += shift
            if ev["Event"] == "SparkListenerApplicationEnd":
                ev["Timestamp"] += shift
            buf.append(json.dumps(ev, separators=(",", ":")).encode() + b"\n")
        (out / f"{aid}_{attempt}").write_bytes(b"".join(buf))


@pytest.fixture(scope="session")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every layout and codec in one folder (real logs copied, derived ones written)."""
    out = tmp_path_factory.mktemp("layouts")
    for p in LAYOUTS.iterdir():
        if p.is_dir():
            shutil.copytree(p, out / p.name)
        else:
            shutil.copy2(p, out / p.name)
    derive(LAYOUTS / PLAIN, out)
    return out


def _shared() -> Path:
    for candidate in (ROOT.parent / "shared", ROOT.parents[1] / "shared", Path("/work/shared")):
        if (candidate / "spark-events").is_dir():
            return candidate
    return ROOT.parent / "shared"


#: The shared corpora (beside the checkout, as CI lays them out); tests that need them skip
#: when they are absent.
SHARED = _shared()
DEMO = ROOT / "demo"


def need(path: Path) -> Path:
    """``path``, or skip the test when it is not there."""
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path
