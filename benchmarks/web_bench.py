"""Server-side latency of the web pages on a synthetic fleet (p50 / p95 over repeated requests).

    python -m benchmarks.web_bench --apps 100000 [--database-url URL] [--requests 30]

Without --database-url a throwaway PostgreSQL is started with scripts/pg-start.sh in a temporary
folder (and stopped at the end). A database that already holds a fleet of that size is reused.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import func, select

from benchmarks.fleet import BIG_APP_ID, RECURRING_NAME, generate, recurring_compare_ids
from benchmarks.pg import throwaway_database
from benchmarks.sql_plan import attach, fleet_app_id
from benchmarks.stage_page import attach_stage
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.scoring import analyze_all
from sparkscope.config.loader import BUNDLED_CONFIG_DIR, parse_config
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.application import Application
from sparkscope.web.app import create_app

ROOT = Path(__file__).resolve().parent.parent
TARGET_P95_MS = 150.0


def _fleet_size(url: str) -> int | None:
    engine = make_engine(url, create=False)
    try:
        with engine.connect() as conn:
            return conn.scalar(select(func.count()).select_from(Application))
    except Exception:  # noqa: BLE001 - an empty or unmigrated database simply has no fleet
        return None
    finally:
        engine.dispose()


def rescore_opened(url: str, app_ids: Sequence[str]) -> int:
    """Bring the applications the scenarios open up to the heuristics in force (the bundled ones),
    as ``sparkscope analyze`` does after an upgrade; returns how many were re-scored.

    A fleet generated under older heuristics would otherwise have every application page score
    its application again in memory (about 60 ms for the 2,000-stage one), which is the
    transient state between an upgrade and the next ``analyze``, not the one measured here.
    """
    registry = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
    engine = make_engine(url)
    try:
        return analyze_all(make_sessionmaker(engine), registry, app_ids=list(app_ids)).analysed
    finally:
        engine.dispose()


def scenarios(compare_ids: Sequence[str], sql_app: str = "") -> list[tuple[str, str, bool]]:
    """(label, path, with the per-process caches) of every measured request."""
    left, right = (list(compare_ids) + ["", ""])[:2]
    name = quote(RECURRING_NAME)
    return [
        ("application, 200-node plan", f"/apps/{sql_app}", False),
        ("application, 200-node plan + text", f"/apps/{sql_app}?query=0", False),
        ("api/apps/<id>/sql, 200 nodes", f"/api/apps/{sql_app}/sql", False),
        ("search, no filter", "/search", False),
        ("search, name filter", "/search?name=revenue", False),
        ("search, rare name filter", "/search?name=sessionize.events%20%2312", False),
        ("search, severity filter", "/search?severity=severe", False),
        ("search, heuristic filter", "/search?heuristic=stage_skew&severity=critical", False),
        ("search, last 7 days by duration", "/search?since=7d&sort=duration", False),
        ("search, by impact", "/search?sort=impact", False),
        ("search, by impact, last page", "/search?sort=impact&order=asc", False),
        ("search, by waste", "/search?sort=waste", False),
        ("search, last day by impact", "/search?since=1d&sort=impact", False),
        ("search, critical by impact", "/search?severity=critical&sort=impact", False),
        (
            "search, heuristic by impact",
            "/search?heuristic=stage_skew&severity=critical&sort=impact",
            False,
        ),
        (
            "search, exactly none, last day",
            "/search?severity=none&severity_mode=exactly&since=1d",
            False,
        ),
        ("search, regressions", "/search?verdict=regression", False),
        ("api/apps, severity filter", "/api/apps?severity=critical", False),
        ("application, 2,000 stages", f"/apps/{BIG_APP_ID}", False),
        ("application, all stages, page 1", f"/apps/{BIG_APP_ID}?stages=all", False),
        (
            "application, all stages, last page",
            f"/apps/{BIG_APP_ID}?stages=all&stage_page=10",
            False,
        ),
        ("api/apps/<id>, 2,000 stages", f"/api/apps/{BIG_APP_ID}", False),
        ("stage, 200 tasks, 100 executors", f"/apps/{BIG_APP_ID}/stages/0/0", False),
        ("timeline, 2,000 stages", f"/apps/{BIG_APP_ID}/timeline", False),
        ("compare", f"/compare?left={left}&right={right}", False),
        ("compare, run picker only", f"/compare?left={left}", False),
        ("api/compare", f"/api/compare?left={left}&right={right}", False),
        ("history, 1,000 runs", f"/history?name={name}", False),
        ("history, 1,000 runs, x=input", f"/history?name={name}&x=input", False),
        ("history, unknown name (suggestions)", f"/history?name={name}x", False),
        ("history, 1,000 runs (cached names)", f"/history?name={name}", True),
        ("api/history, 1,000 runs", f"/api/history?name={name}", False),
        ("dashboard, 7 days", "/", False),
        ("dashboard, 90 days", "/?days=90", False),
        ("dashboard, 7 days (cached 60 s)", "/", True),
    ]


def measure(
    url: str, compare_ids: Sequence[str], requests: int, only: str = "", sql_app: str = ""
) -> list[tuple[str, float, float]]:
    """p50 and p95 in ms of each scenario (whose label contains ``only``) through the Flask test
    client."""
    config = parse_config({"database_url": url}, env={})
    uncached = {"DASHBOARD_CACHE_SECONDS": 0, "NAMES_CACHE_SECONDS": 0}
    apps = {False: create_app(uncached, config=config), True: create_app({}, config=config)}
    results = []
    for label, path, with_cache in scenarios(compare_ids, sql_app):
        if only not in label:
            continue
        client = apps[with_cache].test_client()
        for _ in range(3):  # warm caches, the connection pool and Jinja's template cache
            resp = client.get(path)
            if resp.status_code != 200:
                raise SystemExit(f"{path}: HTTP {resp.status_code}")
        timings = []
        for _ in range(requests):
            started = time.perf_counter()
            client.get(path)
            timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        p95 = timings[min(len(timings) - 1, round(0.95 * (len(timings) - 1)))]
        results.append((label, statistics.median(timings), p95))
    for app in apps.values():
        app.extensions["sparkscope.engine"].dispose()
    return results


def main(argv: Sequence[str] | None = None) -> None:
    """Generate (or reuse) a fleet and print the latency table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=100_000)
    parser.add_argument("--database-url")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--only", default="", help="the scenarios whose label contains this")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        # pg-start.sh runs PostgreSQL as an unprivileged user, who must reach the data folder.
        Path(tmp).chmod(0o755)
        url = args.database_url or throwaway_database(f"{tmp}/pg", 54391)
        try:
            size = _fleet_size(url)
            if size != args.apps:
                if size:
                    raise SystemExit(f"database holds {size} applications, not {args.apps}")
                info = generate(url, args.apps)
                print(f"generated {info['apps']} applications in {info['seconds']} s")
            engine = make_engine(url, create=False)
            with engine.connect() as conn:
                compare_ids = recurring_compare_ids(conn)
            sql_app = fleet_app_id(args.apps)
            print(f"{attach(engine, sql_app)}-node SQL plan attached to {sql_app}")
            print(f"stage rows attached: {attach_stage(engine, BIG_APP_ID)}")
            engine.dispose()
            rescored = rescore_opened(url, [BIG_APP_ID, sql_app, *compare_ids])
            if rescored:
                print(f"re-scored {rescored} application(s) under the heuristics in force")
            rows = measure(url, compare_ids, args.requests, args.only, sql_app)
        finally:
            if not args.database_url:
                subprocess.run([str(ROOT / "scripts" / "pg-stop.sh"), f"{tmp}/pg"], check=False)
    print(f"\n{args.apps:,} applications, {args.requests} requests each (server-side, ms)\n")
    print(f"{'scenario':<36} {'p50':>8} {'p95':>8}  target p95 <= {TARGET_P95_MS:.0f}")
    for label, p50, p95 in rows:
        flag = "ok" if p95 <= TARGET_P95_MS else "SLOW"
        print(f"{label:<36} {p50:>8.1f} {p95:>8.1f}  {flag}")


if __name__ == "__main__":
    main()
