"""HTTP client for the Spark History Server REST API.

One :class:`fetcher.shs.session.ServerSession` per worker thread (urllib3's connection pool, with
the login, proxies, redirects and cookies handled there), each with connection reuse, (connect,
read) timeouts, a total deadline per request (:mod:`fetcher.shs.transport`) and urllib3 retries
with exponential backoff and jitter on connection errors, 429 and 5xx. Failures raise typed :class:`ShsError`\\ s that carry the URL; nothing returns
``None``. Bodies are decoded by :mod:`fetcher.shs.safejson`, which refuses numbers that JSON or the
database cannot hold.

A server URL that is a folder or ``file://`` URL (a recording made by ``sparkscope dump``) is read
through :class:`fetcher.shs.replay.RecordingSession` in place of a server session, so recorded
data goes through exactly the same code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ReadTimeoutError,
    ResponseError,
)

from fetcher.shs import endpoints, safejson
from fetcher.shs.endpoints import Params
from fetcher.shs.keepalive import BodyError
from fetcher.shs.session import Reply, ServerSession, TooManyRedirects
from fetcher.shs.transport import QuietRetry, Watchdog
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.redaction import split_credentials

RETRY_STATUSES = (429, 500, 502, 503, 504)
USER_AGENT = "sparkscope-fetcher/0.1"


class ShsError(Exception):
    """A request to the History Server failed for good."""

    def __init__(self, url: str, message: str) -> None:
        self.url = url
        self.message = message
        super().__init__(f"{message} ({url})")


class ShsUnreachable(ShsError):
    """The server did not answer: connection refused, DNS failure, timeout."""


class ShsTimeout(ShsError):
    """No complete answer in time: a read timeout, or the request's total deadline passed."""


class ShsNotFound(ShsError):
    """404: the application (or stage) is not on the server (any more)."""


class ShsHttpError(ShsError):
    """Another non-2xx answer, after retries where they apply."""

    def __init__(self, url: str, status: int, message: str) -> None:
        self.status = status
        super().__init__(url, message)


class ShsBadResponse(ShsError):
    """A 200 whose body is not the JSON we expected (truncated, HTML, wrong shape)."""


class ShsStopped(ShsError):
    """Not sent: the run stopped asking (see :meth:`ShsClient.stop`)."""


Recorder = Callable[[str, bytes], None]


class Session(Protocol):
    """What a worker thread asks with: a server's session, or a recording's."""

    def get(self, target: str) -> Reply: ...

    def close(self) -> None: ...


def is_local_source(url: str) -> bool:
    """True when the server 'URL' is a folder or file:// URL of recorded responses."""
    scheme = urlsplit(url).scheme
    return scheme in ("", "file")


def local_source_path(url: str) -> Path:
    """The folder behind a file:// URL or plain path."""
    parts = urlsplit(url)
    return Path(parts.path if parts.scheme == "file" else url).expanduser().resolve()


class ShsClient:
    """Talks to one History Server; safe to share between threads."""

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 60.0,
        retries: int = 4,
        backoff_factor_s: float = 0.5,
        verify: bool | str = True,
        recorder: Recorder | None = None,
        deadline_s: float = 300.0,
        auth: tuple[str, str] | None = None,
    ) -> None:
        base_url, user, password = split_credentials(base_url)
        if auth is None and (user is not None or password is not None):
            auth = (user or "", password or "")
        self.local = is_local_source(base_url)
        if self.local:
            self.root = "http://recorded.invalid/api/v1"
            self.source_dir: Path | None = local_source_path(base_url)
        else:
            self.root = base_url.rstrip("/") + "/api/v1"
            self.source_dir = None
        self.base_url = base_url
        # HTTP basic auth from the credentials the configured URL carried (the URL itself holds
        # none, so no message, log line or row can show them).
        self._auth = auth
        self.timeout = (connect_timeout_s, read_timeout_s)
        self.deadline_s = deadline_s
        self._watchdog = Watchdog()
        self.retries = retries
        self.backoff_factor_s = backoff_factor_s
        self.verify = verify
        self.recorder = recorder
        self._tls = threading.local()
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self._stopped: str | None = None

    def stop(self, reason: str) -> None:
        """Send no more requests: every later one, in any thread, raises ShsStopped at once."""
        self._stopped = reason

    # -- sessions -------------------------------------------------------------------------------

    def _new_session(self) -> Session:
        if self.local:
            from fetcher.shs.replay import RecordingSession

            assert self.source_dir is not None
            return RecordingSession(self.source_dir, self.root)
        retry = QuietRetry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            other=0,
            backoff_factor=self.backoff_factor_s,
            backoff_jitter=self.backoff_factor_s / 2,
            status_forcelist=RETRY_STATUSES,
            allowed_methods=frozenset({"GET"}),
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        return ServerSession(
            self.root,
            user_agent=USER_AGENT,
            timeout=self.timeout,
            retry=retry,
            verify=self.verify,
            auth=self._auth,
        )

    @property
    def session(self) -> Session:
        """This thread's session."""
        s: Session | None = getattr(self._tls, "session", None)
        if s is None:
            s = self._tls.session = self._new_session()
        return s

    def close(self) -> None:
        """Close this thread's session."""
        s = getattr(self._tls, "session", None)
        if s is not None:
            s.close()
            self._tls.session = None

    # -- requests -------------------------------------------------------------------------------

    def url_for(self, path: str) -> str:
        """Absolute URL of an API path."""
        return f"{self.root}/{path}"

    def shown(self, url: str) -> str:
        """A URL as messages show it: a recording's folder rather than the internal placeholder."""
        if self.source_dir is not None and url.startswith(self.root):
            return f"{self.source_dir}/api/v1{url[len(self.root) :]}"
        return url

    def get_json(
        self, request: tuple[str, Params], mark_hostile: bool = False, unread: Sequence[str] = ()
    ) -> Any:
        """GET an API path and decode its JSON body; raise ShsError on any failure.

        A number JSON or the database cannot hold fails the body (ShsBadResponse), unless
        ``mark_hostile``: then it is replaced by a :class:`fetcher.shs.safejson.Hostile` marker.
        ``unread``: top-level array members of the body's object that the caller does not read,
        which come back empty when the server wrote them in its usual form
        (:func:`fetcher.shs.safejson.without_members`).
        """
        path, params = request
        url = self.url_for(path)
        if self._stopped is not None:
            raise ShsStopped(self.shown(url), f"not sent: {self._stopped}")
        query = _query(tuple(params)) if params else ""
        deadline = self._watchdog.start(self.deadline_s)
        try:
            reply = self.session.get(f"{path}?{query}" if query else path)
        except (HTTPError, BodyError, TooManyRedirects, OSError) as exc:
            raise self._request_error(self.shown(url), exc, deadline.fired) from None
        finally:
            self._watchdog.finish()
        body = reply.body
        with self._lock:
            self.requests += 1 + reply.retries
            self.bytes += len(body)
        full_url = self.shown(reply.url)
        if reply.status == 404:
            text = body[:200].decode("utf-8", "replace").strip()
            raise ShsNotFound(full_url, f"not found: {text or '404'}")
        if reply.status != 200:
            raise ShsHttpError(full_url, reply.status, f"HTTP {reply.status}")
        try:
            if mark_hostile:
                data = safejson.loads_marking(body)
            else:
                data = safejson.loads_unread(body, unread) if unread else safejson.loads(body)
        except safejson.HostileNumber as exc:
            raise ShsBadResponse(full_url, str(exc)) from None
        except (ValueError, RecursionError) as exc:
            raise ShsBadResponse(
                full_url, f"invalid JSON ({len(body)} bytes): {str(exc)[:80]}"
            ) from None
        if self.recorder is not None:
            self.recorder(endpoints.request_key(path, params), body)
        return data

    def _request_error(self, url: str, exc: BaseException, deadline_passed: bool) -> ShsError:
        if deadline_passed:
            return ShsTimeout(url, f"timed out: no complete answer within {self.deadline_s:g} s")
        if _caused_by(exc, (ReadTimeoutError,)):  # also after the retries
            return ShsTimeout(
                url, f"timed out: no answer within {self.timeout[1]:g} s (read timeout)"
            )
        if isinstance(exc, BodyError | TooManyRedirects):
            return ShsError(url, f"request failed: {exc}")
        if _caused_by(exc, (ConnectTimeoutError,)) and not _caused_by(exc, (NewConnectionError,)):
            return ShsUnreachable(
                url, f"server unreachable: no connection within {self.timeout[0]:g} s"
            )
        if isinstance(exc, MaxRetryError) and isinstance(exc.reason, ResponseError):
            return ShsHttpError(url, 0, f"gave up after {self.retries} retries: {exc.reason}")
        return ShsUnreachable(url, f"server unreachable: {_reason(exc)}")


@lru_cache(maxsize=1024)
def _query(params: tuple[tuple[str, str], ...]) -> str:
    """A request's query string. The plan asks for the same few again and again (a stage's
    21 quantiles, ``details=true``), and encoding one costs a call per character class."""
    return urlencode(params)


def _chain(exc: BaseException) -> list[BaseException]:
    """An exception and every one it wraps (urllib3 keeps causes in ``reason`` and ``args``)."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        cur = todo.pop()
        if any(cur is x for x in seen):
            continue
        seen.append(cur)
        links = [getattr(cur, "reason", None), cur.__cause__, cur.__context__, *cur.args[:1]]
        todo.extend(x for x in links if isinstance(x, BaseException))
    return seen


def _caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    return any(isinstance(x, kinds) for x in _chain(exc))


def _reason(exc: BaseException) -> str:
    """The root cause of a connection error in a few words (``Connection refused``)."""
    chain = _chain(exc)
    for cur in chain:
        if isinstance(cur, OSError) and cur.strerror:
            return f"{cur.strerror} ({type(cur).__name__})"
    return type(chain[-1]).__name__


def make_client(
    server: ServerConfig, fetcher_config: FetcherConfig, recorder: Any = None
) -> ShsClient:
    """A client for one configured server."""
    verify: bool | str = (
        server.ca_bundle if (server.verify_tls and server.ca_bundle) else server.verify_tls
    )
    return ShsClient(
        server.url,
        connect_timeout_s=server.connect_timeout_s,
        read_timeout_s=server.read_timeout_s,
        retries=fetcher_config.retries,
        backoff_factor_s=fetcher_config.backoff_factor_s,
        verify=verify,
        recorder=recorder,
        deadline_s=server.request_deadline_s,
        auth=(server.username or "", server.password or "")
        if server.username is not None or server.password is not None
        else None,
    )
