"""A History Server stand-in on 127.0.0.1 that answers only what a test registered for it.

The tests of the fetch path against recorded responses name the server ``http://shs.test:18080``
(``recorded.BASE``), a name that resolves nowhere. While a :class:`StubShs` is open, the
environment names it as the HTTP proxy, so the fetcher's real client sends every request, over
real HTTP, to this server, which answers it as the registered server would. A test registers
answers by URL (a string, with its query matched when it has one or by ``query_string``, or a
regular expression over the whole URL), as a status and body, a callback, or a fault
(:data:`READ_TIMEOUT`: headers never come; :data:`HANG_UP`: the connection is closed unanswered).

Matching: of the registrations that match a request, the first is used; when more than one
match, the first is used up (removed) and, if it had answered before, the second answers, so
registering the same URL twice answers two requests (or two runs of requests).
A request nothing matches is hung up on, and listed in ``unmatched``. On leaving the block,
unless ``assert_all_requests_are_fired=False``, every registration must have answered.
"""

from __future__ import annotations

import json as jsonlib
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

GET = "GET"
READ_TIMEOUT = "read timeout"
HANG_UP = "hang up"
#: How long a READ_TIMEOUT answer stalls at most (the client gives up well before).
STALL_S = 30.0
PROXY_VARS = ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")

Matcher = Callable[[str], bool]
Callback = Callable[["Request"], tuple[int, dict[str, str], str | bytes]]


def query_string(query: str | None) -> Matcher:
    """Match a request whose query holds exactly these pairs (any order); None: no query."""
    wanted = sorted(parse_qsl(query, keep_blank_values=True)) if query else []

    def match(url: str) -> bool:
        return sorted(parse_qsl(urlsplit(url).query, keep_blank_values=True)) == wanted

    return match


@dataclass
class Request:
    """A request as the stand-in received it (``url`` absolute, as sent to a proxy)."""

    method: str
    url: str
    headers: dict[str, str]


@dataclass
class Response:
    status_code: int


@dataclass
class Call:
    request: Request
    response: Response | None


@dataclass
class _Registered:
    url: str | re.Pattern[str]
    match: Sequence[Matcher]
    status: int = 200
    body: bytes | str | None = None
    callback: Callback | None = None
    used: int = 0

    def matches(self, url: str) -> bool:
        if isinstance(self.url, re.Pattern):
            found = self.url.match(url) is not None
        else:
            mine, theirs = urlsplit(self.url), urlsplit(url)
            found = (mine.scheme, mine.netloc, mine.path) == (
                theirs.scheme,
                theirs.netloc,
                theirs.path,
            )
            if found and mine.query:
                found = query_string(mine.query)(url)
        return found and all(m(url) for m in self.match)


class StubShs:
    """The stand-in, as a context manager; see the module's docstring."""

    def __init__(self, assert_all_requests_are_fired: bool = True) -> None:
        self.assert_all = assert_all_requests_are_fired
        self.calls: list[Call] = []
        self.unmatched: list[str] = []
        self._registered: list[_Registered] = []
        self._lock = threading.Lock()
        self._saved: dict[str, str | None] = {}
        self._closing = threading.Event()
        self.httpd: ThreadingHTTPServer | None = None

    # -- registering ------------------------------------------------------------------------

    def add(
        self,
        method: str,
        url: str | re.Pattern[str],
        *,
        json: Any = None,
        body: bytes | str | None = None,
        status: int = 200,
        match: Sequence[Matcher] = (),
    ) -> None:
        """Answer GETs of ``url`` with ``status`` and ``json`` (encoded) or ``body`` (or a fault)."""
        assert method == GET
        if json is not None:
            body = jsonlib.dumps(json)
        self._add(_Registered(url=url, match=match, status=status, body=body))

    def add_callback(self, method: str, url: str | re.Pattern[str], callback: Callback) -> None:
        """Answer GETs of ``url`` with what ``callback(request)`` returns."""
        assert method == GET
        self._add(_Registered(url=url, match=(), callback=callback))

    def _add(self, reg: _Registered) -> None:
        with self._lock:
            self._registered.append(reg)

    # -- running ----------------------------------------------------------------------------

    def __enter__(self) -> StubShs:
        self.httpd = _Server(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        proxy = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        for name in PROXY_VARS:
            self._saved[name] = os.environ.pop(name, None)
        os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = proxy
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        for name, value in self._saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
        if kind is None and self.assert_all:
            idle = [str(r.url) for r in self._registered if not r.used]
            assert not idle, f"registered, never asked for: {idle}"

    def _find(self, url: str) -> _Registered | None:
        with self._lock:
            found = [r for r in self._registered if r.matches(url)]
            if not found:
                return None
            first = found[0]
            if len(found) > 1:
                self._registered.remove(first)
                if first.used:  # answered before: the next one registered takes over
                    first = found[1]
            first.used += 1
            return first

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        url = handler.path  # absolute: the client takes this server for its proxy
        request = Request(handler.command, url, dict(handler.headers.items()))
        reg = self._find(url)
        call = Call(request, None)
        with self._lock:
            self.calls.append(call)
            if reg is None:
                self.unmatched.append(url)
        if reg is None or reg.body == HANG_UP:
            handler.close_connection = True
            return
        if reg.body == READ_TIMEOUT:
            self._closing.wait(STALL_S)
            handler.close_connection = True
            return
        if reg.callback is not None:
            status, headers, body = reg.callback(request)
        else:
            status, headers, body = reg.status, {}, reg.body or b""
        data = body.encode() if isinstance(body, str) else body
        call.response = Response(status)
        handler.send_response(status)
        handler.send_header("Content-Type", headers.get("Content-Type", "application/json"))
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                stub._answer(self)

        return Handler


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up on a stalled answer hung up; that is the point
