"""Re-scoring benchmark: `sparkscope analyze --force` over N stored applications on PostgreSQL.

The stored applications are the 21 real ones recorded from a Spark 4.0.1 History Server
(demo/spark-events), loaded through the fetcher, then cloned in SQL until there are N of them
(default 10,000), so every row the heuristics read is shaped like real data: stages with 21-point
task distributions, slowest and failed tasks, executors, Spark properties.

    python -m benchmarks.rescore_bench --apps 10000 [--database-url postgresql+psycopg2://...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import Engine, func, select, text
from sqlalchemy.engine import make_url

from sparkscope.analysis import analyze_all, load_app_data, load_heuristics
from sparkscope.config import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models import APP_CHILD_TABLES, AnalysisResult, Application

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "demo" / "spark-events"


def throwaway_database() -> str:
    """A new database on the local throwaway PostgreSQL (scripts/pg-start.sh)."""
    server = (
        subprocess.run(
            [str(ROOT / "scripts" / "pg-start.sh")], check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    name = f"sparkscope_bench_{int(time.time())}"
    admin = make_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server).set(database=name).render_as_string(hide_password=False)


def clone(engine: Engine, target: int) -> int:
    """Copy the stored applications (with all child rows) until there are ``target`` of them."""
    with engine.begin() as c:
        base = c.execute(select(Application.id, Application.app_id).order_by(Application.id)).all()
        app_cols = [
            col.name for col in Application.__table__.columns if col.name not in ("id", "app_id")
        ]
        copies = 0
        n = len(base)
        while n < target:
            copies += 1
            take = base[: min(len(base), target - n)]
            ids = [pk for pk, _ in take]
            rows = c.execute(
                text(
                    f"INSERT INTO application (app_id, {', '.join(app_cols)}) "
                    f"SELECT app_id || '~{copies}', {', '.join(app_cols)} FROM application "
                    "WHERE id = ANY(:ids) RETURNING id, app_id"
                ),
                {"ids": ids},
            ).all()
            by_app = {app_id.rsplit("~", 1)[0]: new for new, app_id in rows}
            mapping = [(pk, by_app[app_id]) for pk, app_id in take]
            values = ", ".join(f"({old}, {new})" for old, new in mapping)
            for model in reversed(APP_CHILD_TABLES):  # parents (stages) before children (tasks)
                if model is AnalysisResult:
                    continue
                cols = [col.name for col in model.__table__.columns if col.name != "application_id"]
                c.execute(
                    text(
                        f"INSERT INTO {model.__tablename__} (application_id, {', '.join(cols)}) "
                        f"SELECT m.new_id, {', '.join('t.' + x for x in cols)} FROM {model.__tablename__} t "
                        f"JOIN (VALUES {values}) AS m(old_id, new_id) ON t.application_id = m.old_id"
                    )
                )
            n += len(take)
    return n


def main(argv: list[str] | None = None) -> int:
    """Build the data set, re-score it, print apps/s."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="scoring processes")
    ap.add_argument(
        "--database-url", help="an empty PostgreSQL database (default: a throwaway one)"
    )
    args = ap.parse_args(argv)
    url = args.database_url or throwaway_database()
    env = {"SPARKSCOPE_DATABASE_URL": url}
    subprocess.run(
        [sys.executable, "-m", "sparkscope", "db", "upgrade"],
        check=True,
        env={**os.environ, **env},
        capture_output=True,
    )
    subprocess.run(
        [sys.executable, "-m", "sparkscope", "fetch", "--url", str(RECORDING), "--no-analyze"],
        check=True,
        env={**os.environ, **env},
        capture_output=True,
    )
    engine = make_engine(url)
    started = time.perf_counter()
    total = clone(engine, args.apps)
    # planner statistics, as autovacuum keeps them on a live database
    with make_engine(url, isolation_level="AUTOCOMMIT").connect() as c:
        c.execute(text("ANALYZE"))
    print(
        f"rescore benchmark: {total} applications on PostgreSQL (cloned in {time.perf_counter() - started:.0f} s)"
    )
    registry = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
    factory = make_sessionmaker(engine)

    # the parts, on one batch: loading inputs, running heuristics
    with factory() as s:
        ids = s.scalars(select(Application.id).order_by(Application.id).limit(400)).all()
        t0 = time.perf_counter()
        data = load_app_data(s, ids)
        t1 = time.perf_counter()
        for app in data.values():
            registry.run(app)
        t2 = time.perf_counter()
    print(f"  load inputs       {len(ids) / (t1 - t0):8.0f} apps/s (one batch of {len(ids)})")
    print(f"  run heuristics    {len(ids) / (t2 - t1):8.0f} apps/s")

    for workers in sorted({1, args.workers}):
        stats = analyze_all(factory, registry, force=True, workers=workers)
        with factory() as s:
            stored = s.scalar(select(func.count()).select_from(AnalysisResult))
        print(
            f"  analyze --force   {stats.analysed / stats.seconds:8.0f} apps/s, {workers} process(es) "
            f"({stats.analysed} apps in {stats.seconds:.1f} s, {stored} findings stored; target >= 2,000)"
        )
    engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
