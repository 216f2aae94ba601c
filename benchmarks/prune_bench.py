"""Retention: the time `sparkscope prune --keep-days N` takes per 100,000 applications deleted.

    python -m benchmarks.prune_bench [--apps 100000] [--keep-days 45] [--batch 1000]
                                     [--server-url postgresql://postgres@127.0.0.1:54350/postgres]

A synthetic fleet (benchmarks/fleet.py: stages, executors, properties, findings and the day
summary; starts spread over the last 90 days) is written into a new database on the PostgreSQL
server of --server-url (a throwaway server started with scripts/pg-start.sh without it), then the
prune runs as the command runs it (batches of --batch applications, each its own transaction).
Afterwards the day summary is compared with a full recount, and the database is dropped.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import func, select, text

from benchmarks.fleet import generate
from benchmarks.pg import ROOT, drop_database, throwaway_database, throwaway_database_on
from sparkscope.accounting import day_summary
from sparkscope.db import make_engine, make_sessionmaker, now_ms
from sparkscope.models.app_rows import APP_CHILD_TABLES
from sparkscope.models.application import Application
from sparkscope.models.summary import DaySummary
from sparkscope.pipeline.retention import count_old, cutoff_ms, prune


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rows(url: str) -> int:
    engine = make_engine(url, create=False)
    with engine.connect() as conn:
        total = sum(
            int(conn.scalar(select(func.count()).select_from(t)) or 0) for t in APP_CHILD_TABLES
        )
    engine.dispose()
    return total


def _summary_is_exact(url: str) -> bool:
    engine = make_engine(url, create=False)
    with engine.connect() as conn:
        stored = {
            (r.dimension, r.day, r.key): (r.apps, r.executors, r.jobs, r.stages, r.tasks)
            for r in conn.execute(select(DaySummary))
        }
        recount = {
            (dim, int(day), key): tuple(values[:5])
            for dim, day, key, *values in conn.execute(text(day_summary.recount_sql("postgresql")))
        }
    engine.dispose()
    return stored == recount


def measure(url: str, apps: int, keep_days: int, batch: int) -> dict[str, float]:
    """Generate the fleet into ``url``, prune it, and return the figures."""
    info = generate(url, apps)
    print(f"generated {info['apps']:,} applications in {info['seconds']} s")
    engine = make_engine(url, create=False)
    factory = make_sessionmaker(engine)
    now = now_ms()
    with factory() as session:
        old = count_old(session, cutoff_ms(now, keep_days))
    rows_before = _rows(url)
    cpu = _cpu_s()
    started = time.perf_counter()
    done = prune(factory, now, keep_days, batch)
    wall = time.perf_counter() - started
    cpu = _cpu_s() - cpu
    with factory() as session:
        left = int(session.scalar(select(func.count()).select_from(Application)) or 0)
    engine.dispose()
    deleted = done.applications
    return {
        "apps": float(apps),
        "old": float(old),
        "deleted": float(deleted),
        "left": float(left),
        "child_rows": float(rows_before - _rows(url)),
        "batches": float(done.batches),
        "wall_s": wall,
        "cpu_s": cpu,
        "exact": float(_summary_is_exact(url)),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: print the time per 100,000 applications."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=100_000)
    parser.add_argument("--keep-days", type=int, default=45)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--server-url", help="a PostgreSQL server to make the database on")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o755)  # pg-start.sh runs PostgreSQL as an unprivileged user
        if args.server_url:
            url = throwaway_database_on(args.server_url)
        else:
            url = throwaway_database(f"{tmp}/pg", 54392)
        try:
            f = measure(url, args.apps, args.keep_days, args.batch)
        finally:
            if args.server_url:
                drop_database(url)
            else:
                subprocess.run([str(ROOT / "scripts" / "pg-stop.sh"), f"{tmp}/pg"], check=False)
    per = 100_000 / f["deleted"] if f["deleted"] else float("nan")
    print(
        f"\nprune --keep-days {args.keep_days} --batch {args.batch} on PostgreSQL: "
        f"{f['deleted']:,.0f} of {f['apps']:,.0f} applications deleted "
        f"({f['old']:,.0f} were old, {f['left']:,.0f} left), {f['child_rows']:,.0f} child rows, "
        f"{f['batches']:.0f} batches"
    )
    print(f"wall {f['wall_s']:.1f} s, our CPU {f['cpu_s']:.1f} s")
    print(f"per 100,000 applications: {f['wall_s'] * per:.1f} s wall, {f['cpu_s'] * per:.1f} s CPU")
    print(f"day summary equals a recount afterwards: {'yes' if f['exact'] else 'NO'}")


if __name__ == "__main__":
    main()
