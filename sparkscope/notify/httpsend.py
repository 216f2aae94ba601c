"""One HTTP POST, once: (connect, read) timeouts, a total deadline, no retries, no redirects.

The outbox retries across runs, so nothing here retries within one. requests times out per socket
operation only (a receiver sending a byte every few seconds never trips the read timeout); a timer
shuts the request's socket down at the deadline, which ends any blocked read at once.

The session does not read the environment's ``.netrc``, CA bundle or other request settings
(``trust_env`` off): only the proxies the environment names for the URL (``HTTPS_PROXY``,
``NO_PROXY``) are used, so that a network that reaches Slack through a proxy still can.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util.retry import Retry

MAX_BODY = 64 * 1024  # of a receiver's answer kept (for the error text)
USER_AGENT = "sparkscope-notify/1"


@dataclass
class _Slot:
    conn: Any = None
    fired: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fire(self) -> None:
        with self.lock:
            self.fired = True
            _shutdown(self.conn)


_SLOTS: dict[int, _Slot] = {}


def _shutdown(conn: Any) -> None:
    sock = getattr(conn, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _bind(conn: Any) -> None:
    slot = _SLOTS.get(threading.get_ident())
    if slot is not None:
        with slot.lock:
            slot.conn = conn
            if slot.fired:
                _shutdown(conn)


class _Pool(HTTPConnectionPool):
    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _bind(conn)
        return conn


class _TlsPool(HTTPSConnectionPool):
    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _bind(conn)
        return conn


class _Adapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TlsPool}


class DeadlinePassed(Exception):
    """No complete answer within the request's total deadline."""


@dataclass(frozen=True)
class Answer:
    """What the receiver answered (its body cut to MAX_BODY)."""

    status: int
    headers: dict[str, str]
    body: bytes


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    connect_timeout_s: float,
    read_timeout_s: float,
    deadline_s: float,
    verify: bool | str = True,
) -> Answer:
    """POST ``body`` once; raise requests' exceptions, or DeadlinePassed past the deadline."""
    session = requests.Session()
    session.trust_env = False
    proxies = requests.utils.get_environ_proxies(url)
    adapter = _Adapter(max_retries=Retry(total=0, redirect=False, raise_on_status=False))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    slot = _Slot()
    _SLOTS[threading.get_ident()] = slot
    timer = threading.Timer(deadline_s, slot.fire)
    timer.daemon = True
    timer.start()
    try:
        resp = session.post(
            url,
            data=body,
            headers={"User-Agent": USER_AGENT, **headers},
            timeout=(connect_timeout_s, read_timeout_s),
            allow_redirects=False,
            verify=verify,
            stream=True,
            proxies=proxies,
        )
        try:
            data = resp.raw.read(MAX_BODY, decode_content=True) or b""
        finally:
            resp.close()
        if slot.fired:
            raise DeadlinePassed(deadline_s)
        return Answer(resp.status_code, dict(resp.headers), data)
    except Exception:
        if slot.fired:
            raise DeadlinePassed(deadline_s) from None
        raise
    finally:
        timer.cancel()
        _SLOTS.pop(threading.get_ident(), None)
        session.close()
