"""A small real History Server stand-in on 127.0.0.1: the recorded responses of a real Spark
4.0.1 SHS (demo/spark-events), with their end times spread over several days, served by a threading
``http.server`` that tests can steer: which apps are listed, which requests hang until released, a
server that goes away, and hostile bodies for chosen paths.
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from fetcher.shs import endpoints
from fetcher.shs.replay import filter_listing
from tests.fetcher import recorded

HOUR_MS = 3_600_000
#: recorded app ids, oldest first after spreading
SPREAD_STEP_MS = 7 * HOUR_MS


def spread_listing(step_ms: int = SPREAD_STEP_MS) -> list[dict[str, Any]]:
    """The 21 recorded listing entries, ends ``step_ms`` apart (about six days), oldest first."""
    entries = sorted(recorded.listing(), key=lambda a: a["attempts"][0]["endTimeEpoch"])
    newest = entries[-1]["attempts"][0]["endTimeEpoch"]
    out = []
    for i, entry in enumerate(entries):
        entry = copy.deepcopy(entry)
        set_end(entry, newest - (len(entries) - 1 - i) * step_ms)
        out.append(entry)
    return out


def set_end(entry: dict[str, Any], end_ms: int) -> None:
    """Move one listing entry's attempt to end at ``end_ms`` (start and lastUpdated follow)."""
    attempt = entry["attempts"][0]
    duration = attempt.get("duration") or 0
    attempt.update(
        endTimeEpoch=end_ms,
        startTimeEpoch=end_ms - duration,
        lastUpdatedEpoch=end_ms,
        endTime=endpoints.shs_time(end_ms),
        startTime=endpoints.shs_time(end_ms - duration),
        lastUpdated=endpoints.shs_time(end_ms),
    )


Raw = Callable[[BaseHTTPRequestHandler], None]


class FakeShs:
    """The steerable server. ``entries`` is the full listing; ``listed`` the ids shown (None: all)."""

    def __init__(
        self, entries: list[dict[str, Any]], port: int = 0, tls: ssl.SSLContext | None = None
    ) -> None:
        # its own copy: a test changes an entry through ``entries`` without touching the caller's
        self.entries = copy.deepcopy(entries)
        self.listed: set[str] | None = None
        self.bodies = {k: recorded.RECORDING / rel for k, rel in recorded.index().items()}
        #: raw path (with query) prefix -> body bytes, or a function writing the whole answer
        self.overrides: dict[str, bytes | Raw] = {}
        #: per-app paths of these app ids hang until ``release`` is set (or the server goes away)
        self.hold_apps: set[str] = set()
        #: the listing request with this number (1-based) hangs likewise
        self.hold_listing_call: int | None = None
        self.holding = threading.Event()
        self.release = threading.Event()
        self.gone = False
        self.paths: list[str] = []
        #: (user, password) every request must send as HTTP basic auth (401 otherwise)
        self.require_auth: tuple[str, str] | None = None
        #: the Authorization header of every request (None where there was none)
        self.auth_headers: list[str | None] = []
        self.listing_calls = 0
        self._lock = threading.Lock()
        self.httpd = _QuietServer(("127.0.0.1", port), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if tls is not None:  # HTTPS: the listening socket wrapped before anything is served
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
            self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def alias(self, app_id: str, as_id: str) -> None:
        """Serve app ``app_id``'s recorded bodies also under id ``as_id`` (raw, encoded path)."""
        prefix = f"applications/{app_id}/"
        encoded = endpoints.segment(as_id)
        for key, path in list(self.bodies.items()):
            if key.startswith(prefix):
                self.bodies[f"applications/{encoded}/{key[len(prefix) :]}"] = path

    def go_away(self) -> None:
        """Stop listening and drop every held request without an answer."""
        self.gone = True
        self.httpd.shutdown()
        self.httpd.server_close()
        self.release.set()

    def close(self) -> None:
        """Stop the server (idempotent)."""
        if not self.gone:
            self.go_away()

    def _hold(self) -> bool:
        """Wait while held; True when the server went away meanwhile."""
        self.holding.set()
        self.release.wait(timeout=120)
        return self.gone

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        if self.gone:  # a kept-alive connection outlives the listening socket: drop it
            handler.close_connection = True
            return
        raw_path = handler.path.removeprefix("/api/v1/")
        header = handler.headers.get("Authorization")
        with self._lock:
            self.paths.append(raw_path)
            self.auth_headers.append(header)
        if self.require_auth is not None:
            expected = base64.b64encode(":".join(self.require_auth).encode()).decode()
            if header != f"Basic {expected}":
                _send(handler, 401, b'{"error": "authentication required"}')
                return
        for prefix, override in self.overrides.items():
            if raw_path.startswith(prefix):
                if callable(override):
                    override(handler)
                else:
                    _send(handler, 200, override)
                return
        parts = urlsplit(raw_path)
        params = parse_qsl(parts.query, keep_blank_values=True)
        if parts.path == "applications":
            with self._lock:
                self.listing_calls += 1
                hold = self.listing_calls == self.hold_listing_call
            if hold and self._hold():
                handler.close_connection = True
                return
            shown = [e for e in self.entries if self.listed is None or e["id"] in self.listed]
            _send(handler, 200, json.dumps(filter_listing(shown, params)).encode())
            return
        segments = parts.path.split("/")
        app_id = unquote(segments[1]) if len(segments) > 1 else ""
        if app_id in self.hold_apps and self._hold():
            handler.close_connection = True
            return
        if len(segments) == 2:
            entry = next((e for e in self.entries if e["id"] == app_id), None)
            if entry is None:
                _send(handler, 404, b"unknown app")
            else:
                _send(handler, 200, json.dumps(entry).encode())
            return
        body = self.bodies.get(endpoints.request_key(parts.path, params))
        if body is None:
            _send(handler, 404, f"not recorded: {parts.path}".encode())
        else:
            _send(handler, 200, body.read_bytes())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                fake._answer(self)

        return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (killed on purpose) is no news


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def drip(body: bytes, seconds_per_byte: float = 1.0) -> Raw:
    """An answer whose headers come at once and whose body comes one byte at a time."""

    def write(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.flush()
        try:
            for i in range(len(body)):
                handler.wfile.write(body[i : i + 1])
                handler.wfile.flush()
                time.sleep(seconds_per_byte)
        except OSError:
            pass  # the client hung up, as it should

    return write


@contextmanager
def running(
    entries: list[dict[str, Any]], port: int = 0, tls: ssl.SSLContext | None = None
) -> Iterator[FakeShs]:
    """A FakeShs for the duration of a block (over HTTPS with ``tls``)."""
    server = FakeShs(entries, port, tls)
    try:
        yield server
    finally:
        server.close()
