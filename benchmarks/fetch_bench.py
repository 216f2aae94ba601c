"""Fetcher benchmark: `sparkscope fetch` against a scaled replay of real SHS responses.

The replay server (:mod:`benchmarks.replay_server`, a process of its own) serves the responses
recorded from a real Spark 4.0.1 History Server, scaled to N applications. For each database
(SQLite, and PostgreSQL: a throwaway server and database) two runs:

1. **CPU**: the fetch (client, parse, load, per-application pipeline) of ``--cpu-apps``
   applications at zero SHS latency into a fresh database, in a process of its own; its CPU time
   (user + system, every thread) per fetched application, split by phase
   (:mod:`benchmarks.cpu_phases`), and for comparison the CPU of a bare crawl of the same URLs
   with ``requests``, and the floors: the same URLs read on bare sockets, and orjson's decode of
   their bodies;
2. **ratio**: the fetch of ``--apps`` applications with ``--latency-ms`` per request and
   ``--replay-ms`` on each application's first request, and a bare crawl that requests exactly
   the URLs the fetch requested (as the replay server logged them), per application in the same
   order, with the same thread count and one ``requests.Session`` per thread, reading every body
   and doing nothing else; the ratio of their wall times.

    python -m benchmarks.fetch_bench [--databases sqlite,postgresql] [--cpu-apps 420 --repeat 1]
        [--apps 2000 --latency-ms 40 --replay-ms 400 --threads 4] [--spread] [--postgres-url URL]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.request import urlopen

from benchmarks.cpu_phases import PHASES
from benchmarks.crawls import cpu_s as _cpu_s
from benchmarks.crawls import crawl, socket_crawl
from benchmarks.crawls import system_s as _system_s
from benchmarks.replay_server import serve

ROOT = Path(__file__).resolve().parent.parent
TARGET_CPU_MS = 10.0
TARGET_RATIO = 1.15


# ------------------------------------------------------------------------------------- fetch


def run_fetch(url: str, db_url: str, threads: int, out_queue: Any, one_cpu: bool = True) -> None:
    """The real fetch (client, parse, load, pipeline) in a process of its own, as `sparkscope
    fetch` runs it; reports its wall and CPU time, per phase too, requests, bytes and peak RSS."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    from benchmarks.cpu_phases import instrument
    from fetcher.job import run_server
    from fetcher.options import FetchOptions
    from sparkscope import migrate
    from sparkscope.analysis.heuristics_config import load_heuristics
    from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig, ServerConfig
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.pipeline.steps import Pipeline

    clock = instrument()
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    factory = make_sessionmaker(engine)
    pipeline = Pipeline(registry=load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml")))
    started, cpu, system = time.perf_counter(), _cpu_s(), _system_s()
    result = run_server(
        factory,
        ServerConfig(name="bench", url=url, read_timeout_s=120),
        FetcherConfig(threads=threads, retries=0, one_cpu=one_cpu),
        FetchOptions(threads=threads),
        pipeline=pipeline,
    )
    wall, cpu = time.perf_counter() - started, _cpu_s() - cpu
    system = _system_s() - system
    phases = dict(clock.seconds)
    complete_cpu = _cpu_s()
    pipeline.complete(factory)
    complete_cpu = _cpu_s() - complete_cpu
    engine.dispose()
    out_queue.put(
        {
            "wall_s": wall,
            "cpu_s": cpu,
            "system_s": system,
            "phases_s": phases,
            "complete_cpu_s": complete_cpu,
            "loaded": result.loaded,
            "failed": len(result.failed),
            "requests": result.requests,
            "bytes": result.bytes,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


def run_case(
    db_url: str,
    apps: int,
    latency_ms: float,
    replay_ms: float,
    threads: int,
    one_cpu: bool = True,
) -> dict[str, Any]:
    """One fetch of ``apps`` applications into ``db_url`` and one bare crawl of its URLs."""
    ctx = mp.get_context("spawn")

    def start_server() -> tuple[Any, str]:
        port_q = ctx.Queue()
        process = ctx.Process(
            target=serve, args=(port_q, apps, latency_ms / 1000, replay_ms / 1000), daemon=True
        )
        process.start()
        return process, f"http://127.0.0.1:{port_q.get(timeout=120)}"

    server, url = start_server()
    out_q = ctx.Queue()
    fetch_proc = ctx.Process(target=run_fetch, args=(url, db_url, threads, out_q, one_cpu))
    fetch_proc.start()
    try:
        fetched = out_q.get()
        urls = json.loads(urlopen(f"{url}/__served", timeout=60).read())
    finally:
        fetch_proc.join()
        server.kill()
        server.join()
    # a fresh server, so the crawl pays the same first-request replay delays
    server, url = start_server()
    try:
        fetched["crawl_wall_s"], fetched["crawl_cpu_s"] = crawl(url, urls, threads)
        if not latency_ms and not replay_ms:
            fetched["socket_cpu_s"], fetched["orjson_cpu_s"] = socket_crawl(url, urls, threads)
    finally:
        server.kill()
        server.join()
    fetched["urls"] = len(urls)
    return fetched


# ------------------------------------------------------------------------------------ report


def _phase_s(phase: str, run: dict[str, Any]) -> float:
    return float(run["phases_s"][phase])


def _per_app_ms(seconds: float, run: dict[str, Any]) -> float:
    return seconds * 1000 / max(1, run["loaded"])


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's figures from several: the median of each, phase by phase (the machine's load
    moves one run's figures by more than most changes do), and the total's lowest and highest."""
    import statistics

    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = statistics.median(r[key] for r in runs)
    out["phases_s"] = {
        phase: statistics.median(r["phases_s"][phase] for r in runs) for phase in PHASES
    }
    out["cpu_range_s"] = (min(r["cpu_s"] for r in runs), max(r["cpu_s"] for r in runs))
    return out


def line(label: str, values: list[str]) -> None:
    """One line of a table: its label, then one column per database."""
    print(f"  {label:<28}" + "".join(f"{v:>12}" for v in values))


def report_cpu(runs: dict[str, dict[str, Any]], apps: int, threads: int, repeat: int = 1) -> None:
    """The CPU table, one column per database (medians of ``repeat`` runs each)."""
    names = list(runs)
    of_runs = f", median of {repeat} runs" if repeat > 1 else ""
    print(
        f"\nour CPU per fetched application, zero SHS latency: {apps} applications "
        f"(the 21 recorded ones, repeated), {threads} threads, fresh database{of_runs}"
    )
    print(f"  {'':<28}" + "".join(f"{n:>12}" for n in names))

    def per_app(label: str, seconds: Callable[[dict[str, Any]], float]) -> None:
        """A line of CPU seconds per run, shown as ms per application."""
        line(label, [f"{_per_app_ms(seconds(r), r):.2f}" for r in runs.values()])

    line("loaded (failed)", [f"{r['loaded']:.0f} ({r['failed']:.0f})" for r in runs.values()])
    line("requests/app", [f"{r['requests'] / max(1, r['loaded']):.2f}" for r in runs.values()])
    line("wall (s)", [f"{r['wall_s']:.1f}" for r in runs.values()])
    per_app(f"CPU/app (ms, target <= {TARGET_CPU_MS:.0f})", lambda r: r["cpu_s"])
    if repeat > 1:
        line(
            "  lowest-highest run",
            ["-".join(f"{_per_app_ms(s, r):.1f}" for s in r["cpu_range_s"]) for r in runs.values()],
        )
    per_app("  of which system", lambda r: r["system_s"])
    for phase in PHASES:
        per_app(f"  {phase}", partial(_phase_s, phase))
    per_app("  other", lambda r: r["cpu_s"] - sum(r["phases_s"].values()))
    per_app("bare crawl CPU/app (ms)", lambda r: r["crawl_cpu_s"])
    per_app("floor: socket crawl (ms)", lambda r: r["socket_cpu_s"])
    per_app("floor: orjson decode (ms)", lambda r: r["orjson_cpu_s"])
    line("queued steps, per run (CPU s)", [f"{r['complete_cpu_s']:.2f}" for r in runs.values()])


def report_ratio(runs: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    """The ratio table, one column per database."""
    names = list(runs)
    print(
        f"\nratio to a bare crawl: {args.apps} applications, {args.threads} threads, "
        f"+{args.latency_ms:.0f} ms/request, +{args.replay_ms:.0f} ms first request per app"
    )
    print(f"  {'':<28}" + "".join(f"{n:>12}" for n in names))

    line("loaded (failed)", [f"{r['loaded']:.0f} ({r['failed']:.0f})" for r in runs.values()])
    line("fetch wall (s)", [f"{r['wall_s']:.1f}" for r in runs.values()])
    line("apps/s", [f"{r['loaded'] / r['wall_s']:.1f}" for r in runs.values()])
    line("bare crawl wall (s)", [f"{r['crawl_wall_s']:.1f}" for r in runs.values()])
    line(
        f"ratio (target <= {TARGET_RATIO})",
        [f"{r['wall_s'] / r['crawl_wall_s']:.3f}" for r in runs.values()],
    )
    line("requests/app", [f"{r['requests'] / max(1, r['loaded']):.2f}" for r in runs.values()])
    line("kB/app", [f"{r['bytes'] / max(1, r['loaded']) / 1e3:.0f}" for r in runs.values()])
    line("CPU/app (ms)", [f"{_per_app_ms(r['cpu_s'], r):.2f}" for r in runs.values()])
    line("peak RSS (MB)", [f"{r['peak_rss_mb']:.0f}" for r in runs.values()])


# -------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--databases", default="sqlite,postgresql", help="comma-separated")
    ap.add_argument("--cpu-apps", type=int, default=420, help="apps of the CPU run (0: none)")
    ap.add_argument("--apps", type=int, default=2000, help="apps of the ratio run (0: none)")
    ap.add_argument("--latency-ms", type=float, default=40.0, help="ratio run: every request")
    ap.add_argument("--replay-ms", type=float, default=400.0, help="ratio run: first request")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument(
        "--spread",
        action="store_true",
        help="let the fetch's threads run on every CPU (fetcher.one_cpu off)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="CPU runs per database (median shown)")
    ap.add_argument("--postgres-url", help="server URL (default: a throwaway one in a temp dir)")
    ap.add_argument("--pg-port", type=int, default=54391, help="port of the throwaway server")
    args = ap.parse_args(argv)
    databases = [d.strip() for d in args.databases.split(",") if d.strip()]
    unknown = set(databases) - {"sqlite", "postgresql"}
    if unknown:
        ap.error(f"unknown database(s): {', '.join(sorted(unknown))}")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    with tempfile.TemporaryDirectory(prefix="sparkscope-fetch-bench-") as tmp:
        Path(tmp).chmod(0o755)  # pg-start.sh runs PostgreSQL as an unprivileged user
        pg_dir = f"{tmp}/pg"
        started_pg = False
        made: list[str] = []  # databases made on the --postgres-url server, dropped at the end

        def database(kind: str, label: str) -> str:
            nonlocal started_pg
            if kind == "sqlite":
                return f"sqlite:///{tmp}/{label}.db"
            from benchmarks.pg import throwaway_database, throwaway_database_on

            if args.postgres_url:
                made.append(throwaway_database_on(args.postgres_url))
                return made[-1]
            started_pg = True
            return throwaway_database(pg_dir, args.pg_port)

        try:
            if args.cpu_apps:
                cpu_runs = {
                    kind: median_run(
                        [
                            run_case(
                                database(kind, f"cpu{i}"),
                                args.cpu_apps,
                                0,
                                0,
                                args.threads,
                                not args.spread,
                            )
                            for i in range(args.repeat)
                        ]
                    )
                    for kind in databases
                }
                report_cpu(cpu_runs, args.cpu_apps, args.threads, args.repeat)
            if args.apps:
                ratio_runs = {
                    kind: run_case(
                        database(kind, "ratio"),
                        args.apps,
                        args.latency_ms,
                        args.replay_ms,
                        args.threads,
                        not args.spread,
                    )
                    for kind in databases
                }
                report_ratio(ratio_runs, args)
        finally:
            from benchmarks.pg import drop_database

            for url in made:
                drop_database(url)
            if started_pg:
                subprocess.run([str(ROOT / "scripts" / "pg-stop.sh"), pg_dir], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
