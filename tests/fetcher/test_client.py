"""The SHS client over real HTTP (the stand-in server on 127.0.0.1): what requests' Session would
do per request is still done by the client's own request path, from the environment resolved once
per session: a redirect is followed, cookies the server sets go back, a proxy named in the
environment is used unless no_proxy names the server, a body cut short is a clear error; over
HTTPS the server's certificate is checked against the configured CA bundle (or the default one)
unless verification is off, and the login goes only to the configured server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from fetcher.shs import endpoints
from fetcher.shs.client import ShsClient, ShsError, ShsUnreachable
from tests.fetcher import recorded
from tests.fetcher.fake_shs import FakeShs, running, spread_listing
from tests.support.tls import Cert, make_cert

APP = spread_listing()[-1]["id"]


@pytest.fixture
def shs() -> Iterator[FakeShs]:
    with running(spread_listing()[-2:]) as server:
        yield server


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)


def recorded_jobs() -> object:
    path, params = endpoints.jobs(APP, None)
    return json.loads((recorded.RECORDING / recorded.index()[path]).read_bytes())


def redirect(status: int, location: str) -> Callable[[BaseHTTPRequestHandler], None]:
    """An answer sending the client to ``location``."""

    def moved(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return moved


def test_a_redirect_is_followed(shs: FakeShs) -> None:
    target = endpoints.jobs(APP, None)[0]
    shs.overrides["moved/jobs"] = redirect(302, f"/api/v1/{target}")
    client = ShsClient(shs.url, retries=0)
    assert client.get_json(("moved/jobs", [])) == recorded_jobs()
    assert shs.paths[-2:] == ["moved/jobs", target]


def test_cookies_the_server_sets_are_sent_back(shs: FakeShs) -> None:
    seen: list[str | None] = []

    def sets_cookie(handler: BaseHTTPRequestHandler) -> None:
        seen.append(handler.headers.get("Cookie"))
        handler.send_response(200)
        handler.send_header("Set-Cookie", "route=shs-2; Path=/")
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "2")
        handler.end_headers()
        handler.wfile.write(b"[]")

    shs.overrides["sticky"] = sets_cookie
    client = ShsClient(shs.url, retries=0)
    assert client.get_json(("sticky/one", [])) == []
    assert client.get_json(("sticky/two", [])) == []
    assert seen == [None, "route=shs-2"]


def test_a_body_cut_short_is_an_shs_error_naming_the_url(shs: FakeShs) -> None:
    def cut(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "5000")
        handler.end_headers()
        handler.wfile.write(b'[{"jobId": 0, "na')
        handler.wfile.flush()
        handler.close_connection = True

    shs.overrides["cut/jobs"] = cut
    client = ShsClient(shs.url, retries=0)
    with pytest.raises(ShsError) as caught:
        client.get_json(("cut/jobs", []))
    assert not isinstance(caught.value, ShsUnreachable)
    assert "cut/jobs" in caught.value.url
    # the next request on the same client is answered (the broken connection was dropped)
    assert client.get_json(endpoints.jobs(APP, None)) == recorded_jobs()


def test_the_proxy_of_the_environment_is_used(
    shs: FakeShs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in acts as the proxy of a server name that does not resolve: only a request
    sent through the proxy (which asks for the absolute URL) is answered."""
    monkeypatch.setenv("HTTP_PROXY", shs.url)
    shs.overrides["http://shs.invalid:18080/api/v1/"] = lambda h: _json(h, b'{"via": "proxy"}')
    client = ShsClient("http://shs.invalid:18080", retries=0, connect_timeout_s=2)
    assert client.get_json(endpoints.jobs(APP, None)) == {"via": "proxy"}
    assert shs.paths[-1] == f"http://shs.invalid:18080/api/v1/{endpoints.jobs(APP, None)[0]}"


def _json(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_no_proxy_sends_the_request_directly(shs: FakeShs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert ShsClient(shs.url, retries=0).get_json(endpoints.jobs(APP, None)) == recorded_jobs()
    monkeypatch.delenv("NO_PROXY")  # the same server, now through the dead proxy
    with pytest.raises(ShsUnreachable):
        ShsClient(shs.url, retries=0, connect_timeout_s=2).get_json(endpoints.jobs(APP, None))


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> Cert:
    return make_cert(tmp_path_factory.mktemp("tls"))


def test_https_checks_the_certificate_against_the_configured_bundle(cert: Cert) -> None:
    with running(spread_listing()[-2:], tls=cert.server_context()) as shs:
        assert shs.url.startswith("https://")
        jobs = ShsClient(shs.url, retries=0, verify=str(cert.cert)).get_json(
            endpoints.jobs(APP, None)
        )
        assert jobs == recorded_jobs()
        with pytest.raises(ShsUnreachable) as caught:  # self-signed: not in the default bundle
            ShsClient(shs.url, retries=0).get_json(endpoints.jobs(APP, None))
        assert "SSL" in caught.value.message or "certificate" in caught.value.message
        unchecked = ShsClient(shs.url, retries=0, verify=False)
        with pytest.warns(Warning, match="Unverified HTTPS"):
            assert unchecked.get_json(endpoints.jobs(APP, None)) == recorded_jobs()


def test_the_login_goes_to_the_server_and_not_to_another_host_it_redirects_to(
    shs: FakeShs,
) -> None:
    with running(spread_listing()[-2:]) as other:
        other_url = other.url.replace("127.0.0.1", "localhost")  # another host, same machine
        target = endpoints.jobs(APP, None)[0]
        shs.overrides["moved/jobs"] = redirect(307, f"{other_url}/api/v1/{target}")
        client = ShsClient(shs.url, retries=0, auth=("ops", "hunter2"))
        assert client.get_json(endpoints.jobs(APP, None)) == recorded_jobs()
        assert client.get_json(("moved/jobs", [])) == recorded_jobs()
    assert shs.auth_headers and all(h and h.startswith("Basic ") for h in shs.auth_headers)
    assert other.paths == [target] and other.auth_headers == [None]
