"""The scaled replay server of the fetch benchmark, in a process of its own.

It serves the responses recorded from a real Spark 4.0.1 History Server (demo/spark-events) over
HTTP on 127.0.0.1, scaled to N applications (app ``bench-000123`` answers with recorded app
``123 % 21``'s bodies), with an added latency per request and an added "replay" delay on the
first request of each application (a real SHS replays the event log then), and nothing else: it
answers at once (TCP_NODELAY, as the SHS's Jetty). ``GET /__served``
lists the paths asked for so far, in order, for the bare crawl to ask for the same ones.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "demo" / "spark-events"
BASE_END_MS = 1_795_000_000_000


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
        # As Jetty (the SHS's server) does: without it, the body written after the headers
        # waits for the client's delayed ACK, ~40 ms a request on top of the added latency.
        disable_nagle_algorithm = True

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
