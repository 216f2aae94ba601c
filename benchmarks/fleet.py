"""Fill PostgreSQL with N synthetic Spark applications shaped like real ones, fast (COPY).

Per application: a few stages, executors plus the driver, Spark properties and findings stored
under the current heuristics fingerprint (so pages do not re-score them). On top: one application
with 2,000 stages and one name with 1,000 runs, the worst cases of the application and history
pages. This module gives the fleet its shape (servers, names, the worst cases) and the command
line; benchmarks/fleet_rows.py makes each application's rows and copies them in.

    python -m benchmarks.fleet --apps 100000 --database-url postgresql+psycopg2://...
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence

from sqlalchemy import Connection, func, select, text

from benchmarks.fleet_rows import Rows, flush, make_app_rows
from sparkscope import migrate
from sparkscope.accounting import day_summary as summary
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine, now_ms
from sparkscope.models.application import Application

DAY_MS = 86_400_000
BIG_APP_ID = "application_bench_2000_stages"
RECURRING_NAME = "nightly revenue rollup (eu-west/1)"
RECURRING_RUNS = 1000
BIG_STAGES = 2000
CHUNK_APPS = 10_000

NAME_STEMS = [
    "daily_sales_etl",
    "customer revenue",
    "sessionize.events",
    "ml/feature-build",
    "report: weekly kpis",
    "inventory_sync",
    "fraud-scoring",
    "clickstream agg",
]


def _names(rng: random.Random, count: int) -> list[str]:
    return [f"{rng.choice(NAME_STEMS)} #{i}" for i in range(count)]


def recurring_compare_ids(conn: Connection) -> list[str]:
    """The app ids of the two latest runs of the recurring application (the compare page's)."""
    return list(
        conn.execute(
            select(Application.app_id)
            .where(Application.name == RECURRING_NAME)
            .order_by(Application.start_time_ms.desc())
            .limit(2)
        )
        .scalars()
        .all()
    )


def generate(database_url: str, apps: int = 100_000, seed: int = 42) -> dict[str, object]:
    """Migrate and fill the database; returns what was made (ids of the worst cases included)."""
    started = time.perf_counter()
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    fingerprint = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")).fingerprint
    rng = random.Random(seed)
    now = now_ms()
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO history_server (id, name, url, created_at_ms) VALUES "
                "(1, 'prod', 'http://shs-prod.example:18080', :t), "
                "(2, 'research', 'http://shs-research.example:18080', :t)"
            ),
            {"t": now},
        )
    names = _names(rng, max(10, apps // 50))
    recurring = min(RECURRING_RUNS, max(1, apps // 10))
    rows = Rows([], [], [], [], [], [])
    for pk in range(1, apps + 1):
        if pk == 1:
            app_id, name, stages = BIG_APP_ID, "wide job with many stages", BIG_STAGES
            start = now - 3 * DAY_MS
        elif pk <= 1 + recurring:
            run = pk - 2
            app_id, name, stages = f"application_bench_recurring_{run:04d}", RECURRING_NAME, 4
            start = now - (recurring - run) * DAY_MS // 4  # four runs a day
        else:
            app_id = f"application_{1_700_000_000_000 + pk}_{pk % 10_000:04d}"
            name, stages = rng.choice(names), rng.choice((2, 3, 4, 5, 6, 8))
            start = now - rng.randint(0, 90 * DAY_MS)
        server_id = 1 if pk % 5 else 2
        make_app_rows(rows, pk, server_id, app_id, name, start, stages, fingerprint, rng)
        if pk % CHUNK_APPS == 0:
            flush(engine, rows)
            rows = Rows([], [], [], [], [], [])
    flush(engine, rows)
    with engine.begin() as conn:
        summary.rebuild(conn)  # the dashboard's per-day summary, in one pass of SQL
        conn.execute(text("SELECT setval('history_server_id_seq', 2)"))
        conn.execute(text("SELECT setval('application_id_seq', :n)"), {"n": apps})
    # VACUUM sets the visibility map, so count and distinct-name scans can be index-only.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    with engine.connect() as conn:
        stored = conn.scalar(select(func.count()).select_from(Application))
        compare_ids = recurring_compare_ids(conn)
    engine.dispose()
    return {
        "apps": stored,
        "seconds": round(time.perf_counter() - started, 1),
        "big_app_id": BIG_APP_ID,
        "recurring_name": RECURRING_NAME,
        "recurring_runs": recurring,
        "compare": compare_ids,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: generate a fleet into --database-url."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=100_000)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    print(json.dumps(generate(args.database_url, args.apps, args.seed), indent=2))


if __name__ == "__main__":
    main()
