"""Event-log benchmark: equivalence with a real History Server, speed, CPU and memory.

1. Equivalence and speed, per corpus (spark-events, recurring-events, scaling-events, sql-events
   from the shared folder): a real Spark 4.0.1 SHS is started on the corpus, and as soon as it
   lists the applications (cold: it has replayed none of them), `run_server` fetches every
   application through it into a fresh PostgreSQL database; then the same applications are
   fetched from the event logs into another one. Both fetches store findings, predictions and
   what-if inputs. Prints wall time of each, the ratio, our CPU per application (everything the
   event-log fetch does in this process, parsing included) and the number of stored rows that
   differ (tests.support.stores; 0 expected, the listed known columns left out).
2. Memory: N clones of the smallest spark-events log (distinct application ids, zstd rolling
   folders) generated in a temporary folder and fetched by `sparkscope fetch --event-logs` in a
   process of its own; prints apps/s, its CPU per application and its peak RSS (the predictions
   step included: the clones are N runs of one recurring key).

    python -m benchmarks.eventlog_bench [--clones 10000] [--port 18094] [--corpora a,b]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ("spark-events", "recurring-events", "scaling-events", "sql-events")


def _shared(arg: str | None) -> Path:
    for c in [arg] if arg else [str(ROOT.parent / "shared"), "/work/shared"]:
        if c and (Path(c) / "spark-events").is_dir():
            return Path(c)
    raise SystemExit("no shared corpora found: pass --shared DIR")


def _server_url() -> str:
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        return url
    out = subprocess.run(
        [str(ROOT / "scripts" / "pg-start.sh")], check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]


def _new_db(server: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from sparkscope import migrate

    name = f"sparkscope_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
    migrate.upgrade(url)
    return url


def _drop_db(server: str, url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


def _fetch(db_url: str, server: Any, threads: int) -> tuple[Any, float, float]:
    """(result, wall s, CPU s of this process) of one fetch with the whole pipeline."""
    from fetcher.job import run_server
    from fetcher.options import FetchOptions
    from sparkscope.analysis.heuristics_config import load_heuristics
    from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.pipeline.steps import Pipeline

    registry = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
    engine = make_engine(db_url)
    factory = make_sessionmaker(engine)
    pipeline = Pipeline(registry=registry)
    cpu, wall = time.process_time(), time.perf_counter()
    result = run_server(factory, server, FetcherConfig(threads=threads), FetchOptions(), pipeline)
    pipeline.complete(factory)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    engine.dispose()
    return result, wall, cpu


def equivalence(shared: Path, corpora: list[str], port: int, threads: int) -> int:
    from sparkscope.config.loader import ServerConfig
    from tests.support.shs import running_shs
    from tests.support.stores import differences, extras_count, stored

    pg = _server_url()
    bad = 0
    print(
        f"{'corpus':<17} {'apps':>4} {'SHS s':>7} {'logs s':>7} {'ratio':>6} "
        f"{'CPU ms/app':>10} {'rows differ':>11} {'task blobs':>10} {'B/task':>9}"
    )
    for corpus in corpora:
        logs = shared / corpus
        n = sum(1 for p in logs.iterdir() if p.name.startswith(("eventlog_v2_", "local-", "app")))
        urls = [_new_db(pg), _new_db(pg)]
        try:
            with running_shs(logs, port=port, expect_apps=n, timeout_s=300) as base:
                shs_server = ServerConfig(name="shs", url=base, read_timeout_s=600)
                shs, shs_wall, _ = _fetch(urls[0], shs_server, threads)
            ev, ev_wall, ev_cpu = _fetch(
                urls[1], ServerConfig(name="logs", url=str(logs), event_logs=str(logs)), threads
            )
            diffs = differences(stored(urls[1]), stored(urls[0]), limit=10_000)
            blobs = extras_count(urls[1])["stage_task_times"]
            tasks, size = _task_bytes(urls[1])
        finally:
            for u in urls:
                _drop_db(pg, u)
        bad += len(diffs) + len(shs.failed) + len(ev.failed)
        print(
            f"{corpus:<17} {ev.loaded:>4} {shs_wall:>7.2f} {ev_wall:>7.2f} "
            f"{shs_wall / ev_wall:>5.1f}x {1000 * ev_cpu / max(1, ev.loaded):>10.1f} "
            f"{len(diffs):>11} {blobs:>10} {size / max(1, tasks):>9.1f}",
            flush=True,
        )
        for d in diffs[:5]:
            print(f"    {d[:300]}")
        if shs.loaded != ev.loaded:
            print(f"    loaded {shs.loaded} through the SHS, {ev.loaded} from the logs")
            bad += 1
    return bad


def _task_bytes(url: str) -> tuple[int, int]:
    """(tasks stored, bytes of their blobs) in stage_task_times."""
    from sqlalchemy import func, select

    from sparkscope.db import make_engine
    from sparkscope.models.eventlog import StageTaskTimes

    engine = make_engine(url)
    with engine.connect() as c:
        n, size = c.execute(
            select(func.sum(StageTaskTimes.num_stored), func.sum(func.length(StageTaskTimes.data)))
        ).one()
    engine.dispose()
    return int(n or 0), int(size or 0)


def parse_only(shared: Path) -> None:
    """CPU of reading the spark-events logs into bundles alone (no database)."""
    from fetcher.eventlog.bundle import read_bundle
    from fetcher.eventlog.read.files import discover
    from sparkscope.config.loader import FetcherConfig

    fetcher_config = FetcherConfig()
    redaction = re.compile(fetcher_config.redaction_regex)
    logs = discover(str(shared / "spark-events"))
    cpu = time.process_time()
    size = sum(read_bundle(s, fetcher_config, redaction).bytes_read for s in logs)
    cpu = time.process_time() - cpu
    print(
        f"read + replay + request plan + parse of the {len(logs)} spark-events logs "
        f"({size / 1e6:.1f} MB of JSON): {cpu:.2f} s CPU, {1000 * cpu / len(logs):.0f} ms/app"
    )


def make_clones(base: Path, out: Path, n: int) -> None:
    """``n`` copies of a rolling zstd log, each with its own application id."""
    import zstandard

    from fetcher.eventlog.read.files import iter_events, open_log

    app_id = base.name.removeprefix("eventlog_v2_")
    src = open_log(str(base))
    import json

    lines = [json.dumps(e, separators=(",", ":")) for e in iter_events(src)]
    text = "\n".join(lines) + "\n"
    cctx = zstandard.ZstdCompressor(level=3)
    for i in range(n):
        new = f"local-9{i:012d}"
        d = out / f"eventlog_v2_{new}"
        d.mkdir()
        (d / f"events_1_{new}.zstd").write_bytes(cctx.compress(text.replace(app_id, new).encode()))
        (d / f"appstatus_{new}").write_bytes(b"")


def clones(shared: Path, n: int, threads: int) -> None:
    base = min(
        (p for p in (shared / "spark-events").glob("eventlog_v2_*")),
        key=lambda p: sum(f.stat().st_size for f in p.iterdir()),
    )
    pg = _server_url()
    url = _new_db(pg)
    tmp = Path(tempfile.mkdtemp(prefix="sparkscope-clones-"))
    try:
        started = time.perf_counter()
        make_clones(base, tmp, n)
        made = time.perf_counter() - started
        env = {**os.environ, "SPARKSCOPE_DATABASE_URL": url}
        env.pop("SPARKSCOPE_CONFIG", None)
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "sparkscope", "fetch", "--event-logs", str(tmp)]
            + ["--threads", str(threads)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        rss_mb, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
        summary = [ln for ln in proc.stdout.splitlines() if "seen" in ln]
        print(f"{n} clones of {base.name} generated in {made:.0f} s")
        print(
            f"fetch --event-logs: exit {proc.returncode}, {wall:.0f} s ({n / wall:.1f} apps/s), "
            f"CPU {cpu:.0f} s ({1000 * cpu / n:.0f} ms/app)"
        )
        print(f"  {summary[-1] if summary else proc.stdout[-500:]}")
        print(f"  peak RSS of the fetch process: {rss_mb:.0f} MB (target <= 300 MB)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        _drop_db(pg, url)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", help="folder holding the corpora (default: ../shared)")
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--port", type=int, default=18094, help="port of the History Server")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--clones", type=int, default=10_000, help="0: skip the memory run")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    shared = _shared(args.shared)
    bad = equivalence(shared, [c for c in args.corpora.split(",") if c], args.port, args.threads)
    parse_only(shared)
    if args.clones:
        clones(shared, args.clones, args.threads)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
