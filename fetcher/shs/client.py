"""HTTP client for the Spark History Server REST API.

One ``requests.Session`` per worker thread (requests documents no thread-safety contract for a
Session), each with connection reuse, (connect, read) timeouts, a total deadline per request
(:mod:`fetcher.shs.transport`) and urllib3 retries with exponential backoff and jitter on connection
errors, 429 and 5xx. Failures raise typed :class:`ShsError`\\ s that carry the URL; nothing returns
``None``. Bodies are decoded by :mod:`fetcher.shs.safejson`, which refuses numbers that JSON or the
database cannot hold.

A server URL that is a folder or ``file://`` URL (a recording made by ``sparkscope dump``) is read
through :class:`fetcher.shs.replay.DirectoryAdapter`, a transport adapter, so recorded data goes through
exactly the same code.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
from requests.cookies import RequestsCookieJar, extract_cookies_to_jar, merge_cookies
from requests.utils import get_netrc_auth
from urllib3.exceptions import ReadTimeoutError

from fetcher.shs import endpoints, safejson
from fetcher.shs.endpoints import Params
from fetcher.shs.transport import DeadlineAdapter, QuietRetry, Watchdog, read_body, retries_used
from sparkscope.config.loader import FetcherConfig, ServerConfig
from sparkscope.redaction import split_credentials

RETRY_STATUSES = (429, 500, 502, 503, 504)
#: A path made of these characters only is one that requests' URL preparation leaves as it is.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._~/-]*")
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
        # The root as requests prepares it (scheme and host lower-cased, quoted), once.
        root = requests.PreparedRequest()
        root.prepare_url(self.root, None)
        self._prepared_root = (root.url or self.root).rstrip("/")
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

    def _new_session(self) -> requests.Session:
        session = requests.Session()
        session.headers["User-Agent"] = USER_AGENT
        session.headers["Accept"] = "application/json"
        session.verify = self.verify
        if self._auth is not None:
            session.auth = self._auth
        if self.local:
            from fetcher.shs.replay import DirectoryAdapter

            assert self.source_dir is not None
            session.trust_env = False  # no proxies or netrc for a folder
            session.mount("http://recorded.invalid/", DirectoryAdapter(self.source_dir))
            return session
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
        adapter = DeadlineAdapter(max_retries=retry, pool_connections=4, pool_maxsize=4)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        if session.trust_env:
            # What requests takes from the environment (proxies and no_proxy, a CA bundle in
            # REQUESTS_CA_BUNDLE, a login in ~/.netrc) is the same for every request to this
            # server: resolved once here instead of at each request, which reads the whole
            # environment twice.
            env = session.merge_environment_settings(self.root, {}, None, session.verify, None)
            session.proxies.update(env["proxies"])
            session.verify = env["verify"]
            if session.auth is None:  # credentials of the configured URL win over ~/.netrc
                session.auth = get_netrc_auth(self.root)
            session.trust_env = False
        return session

    @property
    def session(self) -> requests.Session:
        """This thread's session."""
        s = getattr(self._tls, "session", None)
        if s is None:
            s = self._new_session()
            self._tls.session = s
            headers = requests.PreparedRequest()
            headers.prepare_headers(s.headers)  # checked once: the session's headers stay
            self._tls.headers = headers.headers
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

    def get_json(self, request: tuple[str, Params], mark_hostile: bool = False) -> Any:
        """GET an API path and decode its JSON body; raise ShsError on any failure.

        A number JSON or the database cannot hold fails the body (ShsBadResponse), unless
        ``mark_hostile``: then it is replaced by a :class:`fetcher.shs.safejson.Hostile` marker.
        """
        path, params = request
        url = self.url_for(path)
        if self._stopped is not None:
            raise ShsStopped(self.shown(url), f"not sent: {self._stopped}")
        deadline = self._watchdog.start(self.deadline_s)
        try:
            resp = self._get(url, params)
            body = read_body(resp)
        except requests.exceptions.RequestException as exc:
            raise self._request_error(self.shown(url), exc, deadline.fired) from None
        finally:
            self._watchdog.finish()
        with self._lock:
            self.requests += 1 + retries_used(resp)
            self.bytes += len(body)
        full_url = self.shown(resp.url or url)
        if resp.status_code == 404:
            text = body[:200].decode("utf-8", "replace").strip()
            raise ShsNotFound(full_url, f"not found: {text or '404'}")
        if resp.status_code != 200:
            raise ShsHttpError(full_url, resp.status_code, f"HTTP {resp.status_code}")
        try:
            data = safejson.loads_marking(body) if mark_hostile else safejson.loads(body)
        except safejson.HostileNumber as exc:
            raise ShsBadResponse(full_url, str(exc)) from None
        except (ValueError, RecursionError) as exc:
            raise ShsBadResponse(
                full_url, f"invalid JSON ({len(body)} bytes): {str(exc)[:80]}"
            ) from None
        if self.recorder is not None:
            self.recorder(endpoints.request_key(path, params), body)
        return data

    def _get(self, url: str, params: Params) -> requests.Response:
        """GET through this thread's transport adapter (retries, deadline), streamed.

        The request is prepared here from the session's headers, login and cookies rather than
        by ``Session.request``, whose merging of per-request settings (seven of them, each
        through runtime protocol checks) cost more than the HTTP itself; what the session adds
        at send time is kept: cookies the server sets are kept, and a redirect is followed.
        """
        session = self.session
        prep = requests.PreparedRequest()  # as PreparedRequest.prepare does, minus the no-ops
        prep.method = "GET"
        path = url[len(self.root) + 1 :] if url.startswith(self.root + "/") else None
        if path is not None and _PLAIN_PATH.fullmatch(path):
            # What prepare_url would give (the root prepared once, a path it leaves alone, the
            # query as requests encodes it) without parsing and requoting the URL each time.
            query = urlencode(params) if params else ""
            prep.url = f"{self._prepared_root}/{path}" + (f"?{query}" if query else "")
        else:
            prep.prepare_url(url, params)
        prep.headers = self._tls.headers.copy()
        if len(session.cookies):  # a copy, as Session.prepare_request makes one
            prep.prepare_cookies(merge_cookies(RequestsCookieJar(), session.cookies))
        prep.prepare_body(None, None)
        if session.auth is not None:
            prep.prepare_auth(session.auth, url)
        prep.prepare_hooks({})
        if "%2E" in url:  # an id made of dots: requests decodes ``%2E`` back to ``.``
            head, sep, query = (prep.url or url).partition("?")
            parts = urlsplit(head)
            segments = [
                s.replace(".", "%2E") if s and s.strip(".") == "" else s
                for s in parts.path.split("/")
            ]
            prep.url = parts._replace(path="/".join(segments)).geturl() + sep + query
        settings: dict[str, Any] = {
            "stream": True,
            "timeout": self.timeout,
            "verify": session.verify,
            "cert": session.cert,
            "proxies": session.proxies,
        }
        resp = session.get_adapter(prep.url or url).send(prep, **settings)
        if resp.is_redirect:  # rare for an SHS (a proxy in front): let the session follow it
            resp.close()
            if not len(session.cookies):
                prep.prepare_cookies(RequestsCookieJar())  # the redirects keep theirs in it
            return session.send(prep, allow_redirects=True, **settings)
        if len(resp.cookies):
            extract_cookies_to_jar(session.cookies, prep, resp.raw)
        return resp

    def _request_error(self, url: str, exc: Exception, deadline_passed: bool) -> ShsError:
        if deadline_passed:
            return ShsTimeout(url, f"timed out: no complete answer within {self.deadline_s:g} s")
        if _caused_by(exc, (ReadTimeoutError, requests.exceptions.ReadTimeout)):
            # also after the retries, which requests reports as a ConnectionError
            return ShsTimeout(
                url, f"timed out: no answer within {self.timeout[1]:g} s (read timeout)"
            )
        if isinstance(exc, requests.exceptions.ConnectTimeout):
            return ShsUnreachable(
                url, f"server unreachable: no connection within {self.timeout[0]:g} s"
            )
        if isinstance(exc, requests.exceptions.RetryError):
            return ShsHttpError(url, 0, f"gave up after {self.retries} retries: {exc}")
        if isinstance(exc, requests.exceptions.ConnectionError):
            return ShsUnreachable(url, f"server unreachable: {_reason(exc)}")
        return ShsError(url, f"request failed: {exc}")


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
