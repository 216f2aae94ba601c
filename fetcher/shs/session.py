"""One worker thread's HTTP connection to a History Server, on urllib3's connection pool.

The target, headers and login are built once per session. A GET that finds an open connection in
the pool (with no cookie to send) is written and read on its socket by
:class:`fetcher.shs.keepalive.KeptAlive`; any other is one ``urlopen`` on the server's pool and one
read of its body. What a browser-like client would do around that is done here, only when it
applies:

- **proxies** from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``, as requests
  reads them) and a login in ``~/.netrc``, both resolved once per session;
- **TLS**: the CA bundle configured, else ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE``, else
  certifi's; ``verify_tls: false`` turns verification off;
- **redirects** are followed (at most :data:`MAX_REDIRECTS`), the login dropped when one leads
  to another host;
- **cookies** the server sets go back with the next requests (a load balancer's sticky route, a
  gateway's session).

Retries, backoff and the total deadline are :mod:`fetcher.shs.transport`'s; failures are
urllib3's exceptions, which :mod:`fetcher.shs.client` turns into ``ShsError`` s.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from urllib3 import BaseHTTPResponse, PoolManager, ProxyManager, Timeout
from urllib3.util import make_headers
from urllib3.util.retry import Retry

from fetcher.shs.keepalive import BodyError, KeptAlive, RawAnswer
from fetcher.shs.transport import DeadlineHTTPPool, DeadlineHTTPSPool

MAX_REDIRECTS = 30
REDIRECTS = (301, 302, 303, 307, 308)
#: what requests asks for (its ``DEFAULT_ACCEPT_ENCODING``, made the same way): the codings
#: urllib3 decodes here
ACCEPT_ENCODING = ", ".join(
    re.split(r",\s*", make_headers(accept_encoding=True)["accept-encoding"])
)
#: where requests looks for a login when ``NETRC`` names no file
NETRC_FILES = ("~/.netrc", "~/_netrc")


@dataclass
class Reply:
    """A finished GET: status, the URL that answered (after redirects), body, retries made."""

    status: int
    url: str
    body: bytes
    retries: int


class TooManyRedirects(Exception):
    """Redirect after redirect: more than :data:`MAX_REDIRECTS`."""


class ServerSession:
    """GETs to one server's API root from one thread (urllib3 pools are thread-safe, the
    cookie jar and the redirect bookkeeping are kept per session)."""

    def __init__(
        self,
        root: str,
        *,
        user_agent: str,
        timeout: tuple[float, float],
        retry: Retry,
        verify: bool | str,
        auth: tuple[str, str] | None,
        pool_size: int = 4,
    ) -> None:
        self.root = root.rstrip("/")
        self.retry = retry
        self.timeout = Timeout(connect=timeout[0], read=timeout[1])
        self.cookies = http.cookiejar.CookieJar()
        env = _environment(self.root)
        if auth is None:
            auth = env.netrc
        self.headers = {
            "User-Agent": user_agent,
            "Accept-Encoding": ACCEPT_ENCODING,
            "Accept": "application/json",
            "Connection": "keep-alive",
        }
        if auth is not None:
            self.headers.update(make_headers(basic_auth=f"{auth[0]}:{auth[1]}"))
        tls: dict[str, Any] = {}
        if verify is False:
            tls["cert_reqs"] = "CERT_NONE"
        else:
            bundle = verify if isinstance(verify, str) else env.ca_bundle
            tls["cert_reqs"] = "CERT_REQUIRED"
            tls["ca_cert_dir" if os.path.isdir(bundle) else "ca_certs"] = bundle
        self._proxy = env.proxy_for(self.root)
        self.manager = self._manager(self._proxy, pool_size, tls)
        self._pool = None if self._proxy else self.manager.connection_from_url(self.root)
        self._origin = _origin(self.root)
        self._path = urlsplit(self.root).path
        self._kept = (
            None
            if self._pool is None
            else KeptAlive(
                self._pool, self._path, urlsplit(self.root).netloc, self.headers,
                read_timeout=self.timeout.read_timeout, retry=self.retry,
                urlopen=self._urlopen_path,
            )
        )  # fmt: skip

    @staticmethod
    def _manager(proxy: str | None, size: int, tls: dict[str, Any]) -> PoolManager:
        if proxy is None:
            manager = PoolManager(num_pools=4, maxsize=size, **tls)
        else:
            from urllib3.util.url import parse_url

            login = parse_url(proxy).auth
            headers = make_headers(proxy_basic_auth=login) if login else None
            manager = ProxyManager(proxy, num_pools=4, maxsize=size, proxy_headers=headers, **tls)
        manager.pool_classes_by_scheme = {"http": DeadlineHTTPPool, "https": DeadlineHTTPSPool}
        return manager

    def get(self, target: str) -> Reply:
        """GET ``target`` (the path and query under the API root, already encoded)."""
        url = f"{self.root}/{target}"
        headers = self.headers
        resp: BaseHTTPResponse | None = None
        if len(self.cookies):
            headers = self._with_cookies(url, headers)
        elif self._kept is not None:
            got = self._kept.get(target)
            if isinstance(got, RawAnswer):
                return Reply(got.status, url, got.body, 0)
            resp = got
        if resp is None and self._pool is not None:
            resp = self._urlopen_path(f"{self._path}/{target}", self.retry, headers)
        elif resp is None:
            resp = self._open(url, headers)
        hops = 0
        while resp.status in REDIRECTS and resp.headers.get("Location"):
            self._keep_cookies(url, resp)
            _drop(resp)
            hops += 1
            if hops > MAX_REDIRECTS:
                raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")
            nxt = urljoin(url, resp.headers["Location"])
            headers = self.headers
            if _origin(nxt) != self._origin:  # another host gets no login
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            url = nxt
            if len(self.cookies):
                headers = self._with_cookies(url, headers)
            resp = self._open(url, headers)
        self._keep_cookies(url, resp)
        return Reply(resp.status, url, _read(resp), _retries(resp))

    def _urlopen_path(
        self, path: str, retry: Retry, headers: dict[str, str] | None = None
    ) -> BaseHTTPResponse:
        assert self._pool is not None
        return self._pool.urlopen(
            "GET", path, headers=self.headers if headers is None else headers, retries=retry,
            redirect=False, timeout=self.timeout, preload_content=False, assert_same_host=False,
        )  # fmt: skip

    def _open(self, url: str, headers: dict[str, str]) -> BaseHTTPResponse:
        return self.manager.urlopen(
            "GET", url, headers=headers, retries=self.retry, redirect=False,
            timeout=self.timeout, preload_content=False,
        )  # fmt: skip

    def _with_cookies(self, url: str, headers: dict[str, str]) -> dict[str, str]:
        request = urllib.request.Request(url)
        self.cookies.add_cookie_header(request)
        cookie = request.unredirected_hdrs.get("Cookie")
        return {**headers, "Cookie": cookie} if cookie else headers

    def _keep_cookies(self, url: str, resp: BaseHTTPResponse) -> None:
        if "set-cookie" in resp.headers or "set-cookie2" in resp.headers:
            self.cookies.extract_cookies(_Headers(resp), urllib.request.Request(url))  # type: ignore[arg-type]

    def close(self) -> None:
        """Close every pooled connection."""
        self.manager.clear()


class _Headers:
    """The response as ``http.cookiejar`` reads one (its headers through ``info()``)."""

    def __init__(self, resp: BaseHTTPResponse) -> None:
        self._headers = resp.headers

    def info(self) -> _Headers:
        return self

    def get_all(self, name: str, default: Any = None) -> list[str] | Any:
        return self._headers.getlist(name) or default


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _read(resp: BaseHTTPResponse) -> bytes:
    """The whole body in one read; its connection goes back to the pool."""
    try:
        return resp.read(decode_content=True)
    except Exception as exc:
        raise BodyError.cut_short(exc) from exc
    finally:
        resp.release_conn()


def _drop(resp: BaseHTTPResponse) -> None:
    try:
        resp.drain_conn()
    finally:
        resp.release_conn()


def _retries(resp: BaseHTTPResponse) -> int:
    history = getattr(resp.retries, "history", None)
    return len(history) if history else 0


@dataclass
class _Environment:
    proxies: dict[str, str]
    netrc: tuple[str, str] | None
    ca_bundle: str

    def proxy_for(self, url: str) -> str | None:
        """The proxy the environment names for ``url``, unless ``NO_PROXY`` names its host."""
        if not self.proxies:
            return None  # what select_proxy finds in no proxies
        from requests.utils import prepend_scheme_if_needed, select_proxy

        proxy = select_proxy(url, self.proxies)
        return prepend_scheme_if_needed(proxy, "http") if proxy else None


def _environment(root: str) -> _Environment:
    """What the environment says about requests to ``root``, read as requests reads it.

    requests itself (some 20 ms of imports) is imported only when the environment names a
    proxy or a netrc file exists, the cases where its answer is more than "none"."""
    import certifi  # requests' CA bundle (``requests.utils.DEFAULT_CA_BUNDLE_PATH``)

    bundle = (
        os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or certifi.where()
    )
    proxies: dict[str, str] = {}
    if urllib.request.getproxies():  # else requests' get_environ_proxies is {} too
        from requests.utils import get_environ_proxies

        proxies = dict(get_environ_proxies(root))
    netrc = None
    if _netrc_file() is not None:  # else requests' get_netrc_auth is None too
        from requests.utils import get_netrc_auth

        netrc = get_netrc_auth(root)
    return _Environment(
        proxies=proxies,
        netrc=(netrc[0], netrc[1]) if netrc else None,
        ca_bundle=bundle,
    )


def _netrc_file() -> str | None:
    """The netrc file requests would read (the one ``NETRC`` names, else the first of
    :data:`NETRC_FILES` there is), or None."""
    netrc_file = os.environ.get("NETRC")
    for name in (netrc_file,) if netrc_file is not None else NETRC_FILES:
        path = os.path.expanduser(name)
        if os.path.exists(path):
            return path
    return None
