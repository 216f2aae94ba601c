"""The HTTP transport under ShsClient: a total deadline per request and quiet, counted retries.

urllib3 times out per socket operation only: a server that sends one byte a second
keeps a request going for ever without tripping ``read_timeout_s``. Each request here registers a
deadline with a :class:`Watchdog` (one daemon thread per client); past it, the watchdog shuts down
the socket the request is using, which ends any blocked read at once, and the request fails as a
timeout instead of being retried.

urllib3 logs every retry as a long WARNING; :class:`QuietRetry` logs one short INFO line instead
(URL and attempt number) and the urllib3 warning is filtered out.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import MaxRetryError, ResponseError
from urllib3.util.retry import Retry

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


class DeadlineHTTPPool(HTTPConnectionPool):
    """A pool whose connections are reported to the watchdog of the request using them."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _bind(conn)
        return conn


class DeadlineHTTPSPool(HTTPSConnectionPool):
    """The same for HTTPS."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _bind(conn)
        return conn


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
        if _pool is not None and where.startswith("/"):
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
