"""The HTTP transport under ShsClient: a total deadline per request and quiet, counted retries.

requests and urllib3 time out per socket operation only: a server that sends one byte a second
keeps a request going for ever without tripping ``read_timeout_s``. Each request here registers a
deadline with a :class:`Watchdog` (one daemon thread per client); past it, the watchdog shuts down
the socket the request is using, which ends any blocked read at once, and the request fails as a
timeout instead of being retried.

urllib3 logs every retry as a long WARNING; :class:`QuietRetry` logs one short INFO line instead
(URL and attempt number) and the urllib3 warning is filtered out.

:func:`read_body` reads a streamed response's body in one call, its errors raised as requests
raises them.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.exceptions import InvalidProxyURL, InvalidURL
from requests.models import PreparedRequest
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers, prepend_scheme_if_needed, select_proxy
from urllib3 import BaseHTTPResponse
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    DecodeError,
    MaxRetryError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
    SSLError,
)
from urllib3.util.retry import Retry
from urllib3.util.url import parse_url

log = logging.getLogger("sparkscope.fetch")

_current = threading.local()
IDLE_EXIT_S = 5.0


@dataclass
class Deadline:
    """One request in flight: when it must end and the connection it is using."""

    at: float
    seconds: float
    conn: Any = None
    fired: bool = False


class Watchdog:
    """Shuts down the socket of every request that runs past its deadline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[int, Deadline] = {}
        self._wake = threading.Event()
        self._idle = True
        self._thread: threading.Thread | None = None
        self._waited = False

    def start(self, seconds: float) -> Deadline:
        """Register the calling thread's request; it must call :meth:`finish` afterwards."""
        d = Deadline(at=time.monotonic() + seconds, seconds=seconds)
        _current.deadline = d
        with self._lock:
            self._active[threading.get_ident()] = d
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="shs-deadline", daemon=True)
                self._thread.start()
            wake = self._idle  # later deadlines never need an earlier wake-up
        if wake:
            self._wake.set()
        return d

    def finish(self) -> None:
        """The calling thread's request is over."""
        _current.deadline = None
        with self._lock:
            self._active.pop(threading.get_ident(), None)

    def _run(self) -> None:
        while True:
            now = time.monotonic()
            with self._lock:
                if self._idle and not self._active and not self._wake.is_set() and self._waited:
                    self._thread = None  # idle a while: end; the next request starts another
                    return
                wait: float | None = None
                for d in self._active.values():
                    if now >= d.at:
                        d.fired = True
                        _shutdown(d.conn)
                        wait = 0.2 if wait is None else min(wait, 0.2)  # until it gives up
                    else:
                        wait = d.at - now if wait is None else min(wait, d.at - now)
                self._idle = wait is None
                self._wake.clear()
            self._waited = not self._wake.wait(timeout=IDLE_EXIT_S if wait is None else wait)


def _shutdown(conn: Any) -> None:
    sock = getattr(conn, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _bind(conn: Any) -> None:
    """Tell the watchdog which connection the current request uses; refuse a new attempt past it."""
    d: Deadline | None = getattr(_current, "deadline", None)
    if d is not None:
        d.conn = conn
        if d.fired:
            _shutdown(conn)


class _DeadlineHTTPPool(HTTPConnectionPool):
    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _bind(conn)
        return conn


class _DeadlineHTTPSPool(HTTPSConnectionPool):
    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _bind(conn)
        return conn


class DeadlineAdapter(HTTPAdapter):
    """An HTTPAdapter whose connection pools report their connections to the watchdog.

    The connection pool's key (scheme, host, port, TLS settings, proxy) depends on the URL only
    through its origin: it is worked out once per origin and settings, as ``HTTPAdapter`` does,
    instead of at every request (a ``stat`` of the CA bundle, two URL parses and the proxy
    look-up each time).
    """

    _POOL_KEYS_KEPT = 16

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pool_keys: dict[tuple[Any, ...], tuple[str | None, Any, Any]] = {}
        super().__init__(*args, **kwargs)

    def get_connection_with_tls_context(
        self,
        request: PreparedRequest,
        verify: Any,
        proxies: Mapping[str, str] | None = None,
        cert: Any = None,
    ) -> Any:
        """The pool for the request's origin (see ``HTTPAdapter``), its key computed once."""
        url = request.url or ""
        start = url.find("//") + 2
        end = url.find("/", start)
        origin = url if end < 0 else url[:end]
        key = (origin, verify, cert, tuple(sorted(proxies.items())) if proxies else ())
        found = self._pool_keys.get(key)
        if found is None:
            proxy = select_proxy(url, proxies)
            try:
                host_params, pool_kwargs = self.build_connection_pool_key_attributes(
                    request, verify, cert
                )
            except ValueError as e:
                raise InvalidURL(e, request=request) from e
            if proxy:
                proxy = prepend_scheme_if_needed(proxy, "http")
                if not parse_url(proxy).host:
                    raise InvalidProxyURL(
                        "Please check proxy URL. It is malformed and could be missing the host."
                    )
            if len(self._pool_keys) >= self._POOL_KEYS_KEPT:
                self._pool_keys.clear()
            found = self._pool_keys[key] = (proxy, host_params, pool_kwargs)
        proxy, host_params, pool_kwargs = found
        manager = self.proxy_manager_for(proxy) if proxy else self.poolmanager
        return manager.connection_from_host(**host_params, pool_kwargs=pool_kwargs)

    def request_url(self, request: PreparedRequest, proxies: Mapping[str, str] | None) -> str:
        """The path to send (see ``HTTPAdapter``); with no proxy configured that is the path and
        query, so the URL is not parsed again to look one up."""
        if not proxies:
            return request.path_url
        return str(super().request_url(request, proxies))

    def build_response(self, req: PreparedRequest, resp: Any) -> requests.Response:
        """The response, as ``HTTPAdapter`` builds it, except that its cookie jar is filled only
        when the server set a cookie: the jar's extraction otherwise builds a stand-in request
        and response for ``http.cookiejar`` to find nothing in."""
        headers = getattr(resp, "headers", None)
        if headers is None or "set-cookie" in headers or "set-cookie2" in headers:
            return super().build_response(req, resp)
        response = requests.Response()
        response.status_code = getattr(resp, "status", None)  # type: ignore[assignment]
        response.headers = CaseInsensitiveDict(headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = resp
        response.reason = resp.reason
        response.url = req.url.decode("utf-8") if isinstance(req.url, bytes) else req.url  # type: ignore[assignment]
        response.request = req
        response.connection = self  # type: ignore[attr-defined]
        return response

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """Create the pool manager with deadline-aware pools."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _DeadlineHTTPPool,
            "https": _DeadlineHTTPSPool,
        }


class QuietRetry(Retry):
    """urllib3 Retry that logs one short INFO line per retry and never retries past the deadline."""

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Retry:
        """Count one more attempt (see urllib3); log it in one line."""
        d: Deadline | None = getattr(_current, "deadline", None)
        if d is not None and d.fired:
            raise MaxRetryError(_pool, url or "", error or ResponseError("deadline passed"))
        new = super().increment(method, url, response, error, _pool, _stacktrace)
        where = url or ""
        if _pool is not None:
            where = f"{_pool.scheme}://{_pool.host}:{_pool.port}{where}"
        why = f"HTTP {response.status}" if response is not None else type(error).__name__
        configured = (self.total or 0) + len(self.history)
        log.info("retry %d of %d: %s (%s)", len(new.history), configured, where, why)
        return new


class _DropUrllib3Retries(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Retrying (")


_urllib3_log = logging.getLogger("urllib3.connectionpool")
if not any(isinstance(f, _DropUrllib3Retries) for f in _urllib3_log.filters):
    _urllib3_log.addFilter(_DropUrllib3Retries())


def read_body(resp: requests.Response) -> bytes:
    """The whole body of a streamed response in one read (requests' ``content`` reads it in
    10 kB chunks), its errors raised as ``content`` raises them; the connection goes back to the
    pool once the body is read."""
    raw = resp.raw
    if not isinstance(raw, BaseHTTPResponse):  # a transport adapter's own (a recording's)
        return resp.content
    try:
        return raw.read(decode_content=True)
    except ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(exc) from exc
    except DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc) from exc
    except ReadTimeoutError as exc:
        raise requests.exceptions.ConnectionError(exc) from exc
    except SSLError as exc:
        raise requests.exceptions.SSLError(exc) from exc


def retries_used(resp: requests.Response) -> int:
    """How many retries urllib3 made before this response."""
    raw = getattr(resp, "raw", None)
    retries = getattr(raw, "retries", None)
    history = getattr(retries, "history", None)
    return len(history) if history else 0
