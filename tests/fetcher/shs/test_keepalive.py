"""Requests on a connection the server kept open (the stand-in server speaks HTTP/1.1 and keeps
connections alive): each test asks once to open the connection, then checks that the next
answer, read on that same connection, ends as a request through urllib3 ends: chunked and
compressed bodies decoded, a retried status retried and counted, a body cut short and a read
timeout as clear errors, a connection the server closes replaced."""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import pytest

from fetcher.shs import endpoints
from fetcher.shs.client import ShsClient, ShsError, ShsHttpError, ShsTimeout, ShsUnreachable
from tests.fetcher import recorded
from tests.fetcher.fake_shs import FakeShs, running, spread_listing
from tests.fetcher.test_client import APP, no_proxy_from_the_machine, recorded_jobs, shs
from tests.support.tls import make_cert

__all__ = ["no_proxy_from_the_machine", "shs"]  # the client tests' fixtures, used here too
JOBS = endpoints.jobs(APP, None)
Responder = Callable[[BaseHTTPRequestHandler], None]


class Ports:
    """The client port of every request an override answered (one port: one connection)."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def __call__(self, answer: Responder) -> Responder:
        def recorded_port(handler: BaseHTTPRequestHandler) -> None:
            self.seen.append(handler.client_address[1])
            answer(handler)

        return recorded_port


def body_answer(body: bytes, *, status: int = 200, headers: dict[str, str] | None = None,
                length: bool = True, close: bool = False) -> Responder:  # fmt: skip
    def write(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        if length:
            handler.send_header("Content-Length", str(len(body)))
        if close:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        handler.wfile.write(body)

    return write


def chunked(body: bytes, size: int, headers: dict[str, str] | None = None) -> Responder:
    def write(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        for i in range(0, len(body), size):
            part = body[i : i + size]
            handler.wfile.write(b"%x;ext=1\r\n%s\r\n" % (len(part), part))
            handler.wfile.flush()
        handler.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")

    return write


def warmed(shs: FakeShs, ports: Ports, **kwargs: object) -> ShsClient:
    """A client whose thread has an open connection: one plain answer through it first."""
    shs.overrides["warm"] = ports(body_answer(b"[]"))
    client = ShsClient(shs.url, **kwargs)  # type: ignore[arg-type]
    assert client.get_json(("warm", [])) == []
    return client


def test_a_chunked_gzip_body_on_the_kept_connection_decodes_as_the_plain_one(shs: FakeShs) -> None:
    ports = Ports()
    raw = (recorded.RECORDING / recorded.index()[JOBS[0]]).read_bytes()
    shs.overrides["zipped"] = ports(chunked(gzip.compress(raw), 700, {"Content-Encoding": "gzip"}))
    shs.overrides["pieces"] = ports(chunked(raw, 333))
    client = warmed(shs, ports, retries=0)
    assert client.get_json(("zipped", [])) == recorded_jobs()
    assert client.get_json(("pieces", [])) == recorded_jobs()
    assert client.get_json(JOBS) == recorded_jobs()
    assert len(set(ports.seen)) == 1  # all on the one connection


def test_a_retried_status_on_the_kept_connection_is_retried_and_counted(shs: FakeShs) -> None:
    ports, calls = Ports(), []

    def busy_once(handler: BaseHTTPRequestHandler) -> None:
        calls.append(1)
        if len(calls) == 1:
            body_answer(b"busy", status=503, headers={"Retry-After": "0"})(handler)
        else:
            body_answer(b"[1]")(handler)

    shs.overrides["busy"] = ports(busy_once)
    client = warmed(shs, ports, retries=2, backoff_factor_s=0)
    before = client.requests
    assert client.get_json(("busy", [])) == [1]
    assert client.requests - before == 2  # the 503 and the answer
    assert ports.seen[0] == ports.seen[1]  # the 503 came on the kept connection


def test_a_retried_status_past_the_retries_is_the_status(shs: FakeShs) -> None:
    ports = Ports()
    shs.overrides["down"] = ports(body_answer(b"down", status=502))
    client = warmed(shs, ports, retries=0)
    with pytest.raises(ShsHttpError) as caught:
        client.get_json(("down", []))
    assert caught.value.status == 502
    assert len(set(ports.seen)) == 1


def test_a_body_cut_short_on_the_kept_connection_is_an_error_and_the_next_request_works(
    shs: FakeShs,
) -> None:
    ports = Ports()

    def cut(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "5000")
        handler.end_headers()
        handler.wfile.write(b'[{"jobId": 0, "na')
        handler.wfile.flush()
        handler.close_connection = True

    shs.overrides["cut"] = ports(cut)
    client = warmed(shs, ports, retries=0)
    with pytest.raises(ShsError) as caught:
        client.get_json(("cut/jobs", []))
    assert not isinstance(caught.value, ShsUnreachable | ShsTimeout)
    assert "body cut short" in caught.value.message and "cut/jobs" in caught.value.url
    assert ports.seen[0] == ports.seen[1]
    assert client.get_json(JOBS) == recorded_jobs()


def test_a_read_timeout_on_the_kept_connection_is_a_timeout(shs: FakeShs) -> None:
    ports = Ports()

    def slow(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(1.5)
        body_answer(b"[]")(handler)

    shs.overrides["slow"] = ports(slow)
    client = warmed(shs, ports, retries=0, read_timeout_s=0.3)
    with pytest.raises(ShsTimeout) as caught:
        client.get_json(("slow", []))
    assert "read timeout" in caught.value.message
    assert client.get_json(JOBS) == recorded_jobs()


def test_an_answer_that_closes_the_connection_is_read_whole_and_the_next_opens_another(
    shs: FakeShs,
) -> None:
    ports = Ports()
    shs.overrides["last"] = ports(body_answer(b"[2]", close=True))
    shs.overrides["until-eof"] = ports(body_answer(b"[3, 4]", length=False, close=True))
    client = warmed(shs, ports, retries=0)
    assert client.get_json(("last", [])) == [2]
    assert client.get_json(("until-eof", [])) == [3, 4]
    assert client.get_json(("warm", [])) == []
    assert ports.seen[0] == ports.seen[1] != ports.seen[2] != ports.seen[3]


def test_a_redirect_and_a_cookie_on_the_kept_connection_are_followed_and_kept(
    shs: FakeShs,
) -> None:
    ports, cookies = Ports(), []
    shs.overrides["moved"] = ports(
        body_answer(b"", status=302, headers={"Location": f"/api/v1/{JOBS[0]}"})
    )

    def sets_cookie(handler: BaseHTTPRequestHandler) -> None:
        cookies.append(handler.headers.get("Cookie"))
        body_answer(b"[]", headers={"Set-Cookie": "route=b; Path=/"})(handler)

    shs.overrides["sticky"] = ports(sets_cookie)
    client = warmed(shs, ports, retries=0)
    assert client.get_json(("moved", [])) == recorded_jobs()
    assert client.get_json(("sticky/1", [])) == []
    assert client.get_json(("sticky/2", [])) == []
    assert cookies == [None, "route=b"]
    assert ports.seen[0] == ports.seen[1]


def test_a_plain_answer_on_the_kept_connection_is_read_without_urllib3s_request_path(
    shs: FakeShs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib3.connectionpool import HTTPConnectionPool

    opened: list[str] = []
    urlopen = HTTPConnectionPool.urlopen

    def counted(self: HTTPConnectionPool, method: str, url: str, *args: object, **kw: object):  # type: ignore[no-untyped-def]
        opened.append(url)
        return urlopen(self, method, url, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(HTTPConnectionPool, "urlopen", counted)
    client = warmed(shs, Ports(), retries=0)
    assert len(opened) == 1  # the first request opened the connection
    assert client.get_json(JOBS) == recorded_jobs()
    with pytest.raises(ShsError):
        client.get_json(("applications/unknown-app", []))
    assert len(opened) == 1


def test_an_answer_in_a_form_the_reader_does_not_take_is_asked_again_through_urllib3(
    shs: FakeShs,
) -> None:
    ports = Ports()

    def interim_first(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(
            b"HTTP/1.1 100 Continue\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n[5]"
        )

    shs.overrides["interim"] = ports(interim_first)
    client = warmed(shs, ports, retries=0)
    assert client.get_json(("interim", [])) == [5]
    assert len(ports.seen) == 3  # the warm-up, then the interim answer read twice
    assert ports.seen[0] == ports.seen[1]


def test_bytes_beyond_the_body_keep_the_connection_from_being_reused(shs: FakeShs) -> None:
    ports = Ports()

    def too_long(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n[6]junk")

    shs.overrides["junk"] = ports(too_long)
    client = warmed(shs, ports, retries=0)
    assert client.get_json(("junk", [])) == [6]
    assert client.get_json(("warm", [])) == []
    assert ports.seen[0] == ports.seen[1] != ports.seen[2]


def test_over_https_the_kept_connection_is_read_through_tls(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    cert = make_cert(tmp_path_factory.mktemp("tls"))
    with running(spread_listing()[-2:], tls=cert.server_context()) as shs:
        ports = Ports()
        raw = (recorded.RECORDING / recorded.index()[JOBS[0]]).read_bytes()
        shs.overrides["pieces"] = ports(chunked(raw, 1000))
        shs.overrides["whole"] = ports(body_answer(raw))
        client = warmed(shs, ports, retries=0, verify=str(cert.cert))
        assert client.get_json(("pieces", [])) == recorded_jobs()
        assert client.get_json(("whole", [])) == recorded_jobs()
        assert len(set(ports.seen)) == 1


@pytest.mark.parametrize(
    ("target", "as_is"),
    [
        (JOBS[0], True),
        ("applications/app-1/stages?details=true&quantiles=0.0%2C0.25%2C0.5", True),
        ("applications/a%2Fb/jobs", True),
        ("applications/a%2fb/jobs", False),  # a lower-case escape: urllib3 upper-cases it
        ("applications/a%2/jobs", False),  # an escape cut short: urllib3 encodes its "%"
        ("applications/a%%2F/jobs", False),  # a "%" that starts no escape, before one that does
        ('applications/a"b/jobs', False),
        ("applications/a b/jobs", False),
        ("applications/\u00e9/jobs", False),
        ("applications/./jobs", False),  # a dot segment: left to urllib3
        ("applications/a{b}/jobs", False),
    ],
)
def test_the_kept_connection_sends_a_target_as_is_only_where_urllib3_sends_it_unchanged(
    target: str, as_is: bool
) -> None:
    from urllib3.util.url import _encode_target

    from fetcher.shs.keepalive import sendable

    assert sendable(target) == as_is
    if as_is:
        assert _encode_target(f"/{target}") == f"/{target}"
