"""Re-scoring benchmark: `sparkscope analyze` over N stored applications on PostgreSQL.

The stored applications are the 21 real ones recorded from a Spark 4.0.1 History Server
(demo/spark-events), loaded through the fetcher, then cloned in SQL until there are N of them
(default 10,000), so every row the heuristics read is shaped like real data: stages with 21-point
task distributions, slowest and failed tasks, executors, Spark properties.

It re-scores them the ways it happens: the first analysis (every result document written),
`analyze --force` with the config unchanged (in one process and in --workers), after a threshold
edit (every application re-scored, the documents that change rewritten), and after the encoded
inputs are dropped (rebuilt from the tables, as after an upgrade that changes their format).

    python -m benchmarks.rescore_bench --apps 10000 [--database-url postgresql+psycopg2://...]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import Engine, delete, insert, select, text
from sqlalchemy.orm import Session, sessionmaker

from benchmarks.pg import throwaway_database
from heuristics.registry import Registry
from sparkscope.accounting import day_summary as summary
from sparkscope.analysis import inputs
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.inputs import from_tables, load_inputs
from sparkscope.analysis.scoring import BATCH_SIZE, analyze_all
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import Analysis, AnalysisInput, AnalysisResult
from sparkscope.models.app_rows import APP_CHILD_TABLES
from sparkscope.models.application import Application

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "demo" / "spark-events"


def clone(engine: Engine, target: int) -> int:
    """Copy the stored applications (with all child rows) until there are ``target`` of them."""
    with engine.begin() as c:
        base = c.execute(select(Application.id, Application.app_id).order_by(Application.id)).all()
        encoded = {
            pk: data
            for pk, data in c.execute(select(AnalysisInput.application_id, AnalysisInput.data))
        }
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
            # The encoded inputs name the application: re-encoded with the copy's id, as the
            # fetcher would have stored them.
            c.execute(
                insert(AnalysisInput),
                [
                    {
                        "application_id": by_app[app_id],
                        "format": inputs.FORMAT,
                        "data": inputs.encode(
                            dataclasses.replace(
                                inputs.decode(encoded[pk]), app_id=f"{app_id}~{copies}"
                            )
                        ),
                    }
                    for pk, app_id in take
                ],
            )
            for model in reversed(APP_CHILD_TABLES):  # parents (stages) before children (tasks)
                if model in (AnalysisResult, Analysis, AnalysisInput):
                    continue  # not analysed yet; inputs done above
                cols = [col.name for col in model.__table__.columns if col.name != "application_id"]
                c.execute(
                    text(
                        f"INSERT INTO {model.__tablename__} (application_id, {', '.join(cols)}) "
                        f"SELECT m.new_id, {', '.join('t.' + x for x in cols)} FROM {model.__tablename__} t "
                        f"JOIN (VALUES {values}) AS m(old_id, new_id) ON t.application_id = m.old_id"
                    )
                )
            n += len(take)
        summary.rebuild(c)  # the copies count in the dashboard's summary, as loaded ones would
    return n


#: A threshold edit that moves some applications across a boundary: the realistic re-score.
EDIT = """\
task_granularity:
  tiny_min_tasks_per_slot: 5000
task_failures:
  failed_task_rate: {low: 0.05, moderate: 0.1, severe: 0.2, critical: 0.4}
"""


def _documents(factory: sessionmaker[Session]) -> dict[int, int]:
    with factory() as s:
        return {
            pk: at for pk, at in s.execute(select(Analysis.application_id, Analysis.analyzed_at_ms))
        }


def _timed(
    label: str,
    factory: sessionmaker[Session],
    registry: Registry,
    workers: int,
    force: bool = True,
) -> float:
    before = _documents(factory)
    stats = analyze_all(factory, registry, force=force, workers=workers)
    after = _documents(factory)
    rewritten = sum(1 for pk, at in after.items() if before.get(pk) != at)
    rate = stats.analysed / stats.seconds
    print(
        f"  {label:<44} {rate:7.0f} apps/s  ({stats.analysed} apps in {stats.seconds:.1f} s, "
        f"{workers} process{'es' if workers > 1 else ''}, {rewritten} documents rewritten)",
        flush=True,
    )
    return rate


def main(argv: list[str] | None = None) -> int:
    """Build the data set, re-score it in the ways it happens, print apps/s."""
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
        f"rescore benchmark: {total} applications on PostgreSQL (cloned in "
        f"{time.perf_counter() - started:.0f} s), {os.cpu_count()} CPUs"
    )
    registry = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
    factory = make_sessionmaker(engine)

    # The parts, per batch of up to BATCH_SIZE applications in one process: the median over five
    # batches, after one to warm up, with the cyclic GC paused as analyze pauses it.
    parts: dict[str, list[float]] = {"decode": [], "tables": [], "heuristics": []}
    gc.disable()
    with factory() as s:
        all_ids = s.scalars(select(Application.id).order_by(Application.id)).all()
        size = max(1, min(BATCH_SIZE, len(all_ids) // 6))
        for b in range(6):
            ids = all_ids[b * size : (b + 1) * size]
            t0 = time.perf_counter()
            data = load_inputs(s, ids)
            t1 = time.perf_counter()
            rebuilt = from_tables(s, ids)
            t2 = time.perf_counter()
            for app in data.values():
                registry.run(app)
            t3 = time.perf_counter()
            assert data == rebuilt
            if b:
                for key, seconds in zip(parts, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                    parts[key].append(seconds / len(ids) * 1e6)
        s.rollback()
    gc.enable()
    mid = {key: sorted(values)[len(values) // 2] for key, values in parts.items()}
    print(f"  per application, one process (median of 5 batches of {size}):")
    print(f"    read + decode the encoded inputs   {mid['decode']:7.0f} us")
    print(f"    build them from the tables instead {mid['tables']:7.0f} us")
    print(f"    run the 13 heuristics              {mid['heuristics']:7.0f} us")

    workers = args.workers
    print("  analyze, all applications (target >= 2,000 apps/s):")
    _timed("first analysis (every document written)", factory, registry, workers, force=False)
    _timed("analyze --force, config unchanged", factory, registry, 1)
    _timed("analyze --force, config unchanged", factory, registry, workers)
    with tempfile.TemporaryDirectory() as tmp:
        edited = Path(tmp) / "heuristics.yaml"
        edited.write_text(EDIT)
        _timed(
            "after a threshold edit (analyze)",
            factory,
            load_heuristics(str(edited)),
            workers,
            force=False,
        )
    _timed("back to the bundled config (analyze)", factory, registry, workers, force=False)
    with factory() as s, s.begin():
        s.execute(delete(AnalysisInput))
    _timed("encoded inputs dropped: rebuilt from tables", factory, registry, workers)
    engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
