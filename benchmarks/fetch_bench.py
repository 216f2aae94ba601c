"""Fetcher benchmark: `sparkscope fetch` against a scaled replay of real SHS responses.

A separate process serves the responses recorded from a real Spark 4.0.1 History Server
(demo/spark-events) over HTTP on 127.0.0.1, scaled to N applications (app ``bench-000123`` answers
with recorded app ``123 % 21``'s bodies), with an added latency per request and an added "replay"
delay on the first request of each application (a real SHS replays the event log then). Then:

1. the fetch (client, parse, load into a fresh database, analysis) runs in its own process, which
   reports its wall time, requests, bytes and peak RSS;
2. a bare crawl requests exactly the URLs the fetch requested (as the replay server logged them), per application in the same order,
   with the same thread count and one ``requests.Session`` per thread, reading every body and
   doing nothing else.

Prints apps/s, requests/app, bytes, peak RSS and the ratio fetch wall time / crawl wall time.

    python -m benchmarks.fetch_bench --apps 2000 --latency-ms 40 --replay-ms 400 --threads 4
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "demo" / "spark-events"
BASE_END_MS = 1_795_000_000_000


# ------------------------------------------------------------------------------- replay server


def _load_recording() -> tuple[list[str], dict[str, dict[str, bytes]], list[dict[str, Any]]]:
    from fetcher.shs.replay import INDEX, LISTING_KEY

    index = json.loads((RECORDING / INDEX).read_text())["requests"]
    listing = json.loads((RECORDING / index[LISTING_KEY]).read_text())
    base_ids = sorted(a["id"] for a in listing)
    bodies: dict[str, dict[str, bytes]] = defaultdict(dict)
    for key, rel in index.items():
        if key == LISTING_KEY or "/" not in key.split("?")[0]:
            continue
        app_id = key.split("/")[1]
        rest = key.split("/", 2)[2] if key.count("/") >= 2 else ""
        bodies[app_id][rest] = (RECORDING / rel).read_bytes()
    return base_ids, bodies, listing


def serve(port_queue: Any, n_apps: int, latency_s: float, replay_s: float) -> None:
    """Run the scaled replay server until killed (in its own process)."""
    from fetcher.shs.replay import filter_listing

    base_ids, bodies, listing = _load_recording()
    by_id = {a["id"]: a for a in listing}
    apps: list[dict[str, Any]] = []
    for i in range(n_apps):
        base = by_id[base_ids[i % len(base_ids)]]
        attempt = dict(base["attempts"][0])
        end = BASE_END_MS + i * 60_000
        attempt.update(
            endTimeEpoch=end,
            startTimeEpoch=end - attempt.get("duration", 10_000),
            lastUpdatedEpoch=end,
        )
        from fetcher.shs.endpoints import shs_time

        attempt.update(
            endTime=shs_time(end),
            startTime=shs_time(attempt["startTimeEpoch"]),
            lastUpdated=shs_time(end),
        )
        apps.append(
            {"id": f"bench-{i:06d}", "name": f"{base['name']} #{i % 50}", "attempts": [attempt]}
        )
    apps.sort(key=lambda a: a["attempts"][0]["endTimeEpoch"], reverse=True)
    replayed: set[str] = set()
    served: list[str] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/__served":  # what the fetch asked for, in order, for the crawl
                with lock:
                    self._send(200, json.dumps(served).encode())
                return
            with lock:
                served.append(self.path.removeprefix("/api/v1/"))
            parts = urlsplit(self.path)
            path = unquote(parts.path).removeprefix("/api/v1/")
            params = parse_qsl(parts.query)
            time.sleep(latency_s)
            if path == "applications":
                self._send(200, json.dumps(filter_listing(apps, params)).encode())
                return
            segs = path.split("/", 2)
            if len(segs) < 3 or not segs[1].startswith("bench-"):
                self._send(404, b"unknown app")
                return
            index = int(segs[1].split("-")[1])
            base = base_ids[index % len(base_ids)]
            with lock:
                first = segs[1] not in replayed
                replayed.add(segs[1])
            if first:
                time.sleep(replay_s)
            key = segs[2] + (
                "?" + "&".join(f"{k}={v}" for k, v in sorted(params)) if params else ""
            )
            body = bodies[base].get(key)
            self._send(200, body) if body is not None else self._send(404, b"not recorded")

    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.request_queue_size = 128
    port_queue.put(server.server_address[1])
    server.serve_forever()


# ------------------------------------------------------------------------------------- fetch


def run_fetch(url: str, db_url: str, threads: int, out_queue: Any) -> None:
    """The real fetch (client, parse, load, analysis) in a process of its own."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    from fetcher.job import run_server
    from fetcher.options import FetchOptions
    from sparkscope import migrate
    from sparkscope.analysis.heuristics_config import load_heuristics
    from sparkscope.config.loader import BUNDLED_CONFIG_DIR, FetcherConfig, ServerConfig
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.pipeline.steps import Pipeline

    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    registry = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
    started = time.perf_counter()
    result = run_server(
        make_sessionmaker(engine),
        ServerConfig(name="bench", url=url, read_timeout_s=120),
        FetcherConfig(threads=threads, retries=0),
        FetchOptions(threads=threads),
        pipeline=Pipeline(registry=registry),
    )
    wall = time.perf_counter() - started
    out_queue.put(
        {
            "wall_s": wall,
            "loaded": result.loaded,
            "failed": len(result.failed),
            "requests": result.requests,
            "bytes": result.bytes,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


def crawl(url: str, urls: list[str], threads: int) -> float:
    """Request the same URLs, grouped per application, with the same threads; read bodies only."""
    import requests

    per_app: dict[str, list[str]] = defaultdict(list)
    listing = []
    for u in urls:
        if u.startswith("applications?") or u == "applications":
            listing.append(u)
        else:
            per_app[u.split("/")[1].split("?")[0]].append(u)
    local = threading.local()

    def session() -> requests.Session:
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = requests.Session()
        return s

    def get_all(paths: list[str]) -> int:
        n = 0
        for p in paths:
            n += len(session().get(f"{url}/api/v1/{p}", timeout=120).content)
        return n

    started = time.perf_counter()
    get_all(listing)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(get_all, per_app.values()))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=40.0, help="added to every request")
    ap.add_argument(
        "--replay-ms", type=float, default=400.0, help="added to an app's first request"
    )
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--database-url", help="default: a fresh SQLite file")
    args = ap.parse_args(argv)

    ctx = mp.get_context("spawn")

    def start_server() -> tuple[Any, str]:
        port_q = ctx.Queue()
        process = ctx.Process(
            target=serve,
            args=(port_q, args.apps, args.latency_ms / 1000, args.replay_ms / 1000),
            daemon=True,
        )
        process.start()
        return process, f"http://127.0.0.1:{port_q.get(timeout=120)}"

    server, url = start_server()
    tmp = tempfile.mkdtemp(prefix="sparkscope-fetch-bench-")
    db_url = args.database_url or f"sqlite:///{tmp}/bench.db"
    out_q = ctx.Queue()
    fetch_proc = ctx.Process(target=run_fetch, args=(url, db_url, args.threads, out_q))
    fetch_proc.start()
    fetched = out_q.get()
    urls = json.loads(urlopen(f"{url}/__served", timeout=60).read())
    fetch_proc.join()
    server.kill()
    server.join()
    # a fresh server, so the crawl pays the same first-request replay delays
    server, url = start_server()
    crawl_s = crawl(url, urls, args.threads)
    server.kill()
    apps = max(1, fetched["loaded"])
    print(
        f"fetch benchmark: {args.apps} apps, {args.threads} threads, "
        f"+{args.latency_ms:.0f} ms/request, +{args.replay_ms:.0f} ms first request per app, "
        f"database {db_url.split(':', 1)[0]}"
    )
    print(f"  loaded            {fetched['loaded']} (failed {fetched['failed']})")
    print(
        f"  fetch wall        {fetched['wall_s']:.1f} s  ({fetched['loaded'] / fetched['wall_s']:.1f} apps/s)"
    )
    print(f"  bare crawl wall   {crawl_s:.1f} s  (same {len(urls)} URLs)")
    print(f"  ratio fetch/crawl {fetched['wall_s'] / crawl_s:.3f}  (target <= 1.15)")
    print(f"  requests/app      {fetched['requests'] / apps:.2f}")
    print(
        f"  bytes             {fetched['bytes'] / 1e6:.1f} MB ({fetched['bytes'] / apps / 1e3:.0f} kB/app)"
    )
    print(f"  peak RSS (fetch)  {fetched['peak_rss_mb']:.0f} MB  (target <= 300 MB at 10,000 apps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
