"""Real servers on 127.0.0.1 for the channel tests: an SMTP server (aiosmtpd: AUTH, STARTTLS,
implicit TLS, with a self-signed certificate made here) and HTTP receivers (http.server in a
thread) whose answers each test scripts. Nothing leaves the loopback interface."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.support.tls import Cert, make_cert

SMTP_USER = "sparkscope"
SMTP_PASSWORD = "s3cr3t-Pa55word-XYZ"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def cert(tmp_path_factory: pytest.TempPathFactory) -> Cert:
    """A self-signed certificate for 127.0.0.1 and localhost."""
    return make_cert(tmp_path_factory.mktemp("tls"))


# ------------------------------------------------------------------------------------- SMTP


class Mailbox:
    """aiosmtpd handler: keeps each accepted message; RCPT answers can be scripted."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.auth: list[str] = []
        self.rcpt_answer: str | None = None  # e.g. "550 5.1.1 no such user"

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:  # noqa: N802
        if self.rcpt_answer:
            return self.rcpt_answer
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        msg = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        self.messages.append(msg)
        return "250 Message accepted for delivery"

    def authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        if (
            isinstance(data, LoginPassword)
            and data.login.decode() == SMTP_USER
            and data.password.decode() == SMTP_PASSWORD
        ):
            self.auth.append(mechanism)
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)


@dataclass
class SmtpServer:
    port: int
    mailbox: Mailbox
    controller: Controller


def _start_smtp(cert: Cert, mode: str) -> SmtpServer:
    mailbox = Mailbox()
    port = free_port()
    kwargs: dict[str, Any] = {"authenticator": mailbox.authenticate, "auth_require_tls": True}
    if mode == "starttls":
        kwargs.update(tls_context=cert.server_context(), require_starttls=True)
    elif mode == "tls":
        # aiosmtpd only counts STARTTLS as TLS; the whole connection is TLS here
        kwargs.update(ssl_context=cert.server_context(), auth_require_tls=False)
    else:  # plain: no TLS offered at all
        kwargs.update(auth_require_tls=False)
    controller = Controller(mailbox, hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    return SmtpServer(port, mailbox, controller)


@pytest.fixture
def smtp_starttls(cert: Cert) -> Iterator[SmtpServer]:
    server = _start_smtp(cert, "starttls")
    yield server
    server.controller.stop()


@pytest.fixture
def smtp_tls(cert: Cert) -> Iterator[SmtpServer]:
    server = _start_smtp(cert, "tls")
    yield server
    server.controller.stop()


@pytest.fixture
def smtp_plain(cert: Cert) -> Iterator[SmtpServer]:
    server = _start_smtp(cert, "plain")
    yield server
    server.controller.stop()


# ------------------------------------------------------------------------------------- HTTP


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before answering
    drip_s: float = 0.0  # send the answer one byte at a time, this far apart


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """A local HTTP receiver: answers POSTs with the scripted replies in turn (the last one
    repeats) and records every request."""

    def __init__(self, replies: list[Reply] | None = None) -> None:
        self.replies = list(replies or [Reply()])
        self.received: list[Received] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.received.append(Received(self.path, dict(self.headers), body))
                    n = len(receiver.received)
                    reply = receiver.replies[min(n, len(receiver.replies)) - 1]
                time.sleep(reply.delay_s)
                try:
                    if reply.drip_s:
                        raw = (
                            f"HTTP/1.1 {reply.status} X\r\nContent-Length: {len(reply.body)}\r\n\r\n".encode()
                            + reply.body
                        )
                        for i in range(len(raw)):
                            self.wfile.write(raw[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.drip_s)
                        return
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client gave up

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def closed_port() -> int:
    return free_port()


# ------------------------------------------------------------------------ the recorded corpora


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def corpus_master(
    request: pytest.FixtureRequest,
    pg_server_url: str,
    pg_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """demo/spark-events and demo/recurring-events fetched with the corpus's notifications, on
    PostgreSQL and on SQLite (once per module; tests work on copies)."""
    from tests.conftest import create_pg_database, drop_pg_database
    from tests.sparkscope.notify.corpus import RECURRING, SPARK_EVENTS, fetch, write_config

    folder = tmp_path_factory.mktemp("corpus")
    if request.param == "postgresql":
        url = create_pg_database(pg_server_url, template=pg_template)
    else:
        url = f"sqlite:///{folder / 'master.db'}"
    config = write_config(folder / "sparkscope.yaml")
    fetch(url, config, SPARK_EVENTS, RECURRING)
    yield url
    if request.param == "postgresql":
        drop_pg_database(pg_server_url, url)


@pytest.fixture
def corpus_url(corpus_master: str, pg_server_url: str, tmp_path: Path) -> Iterator[str]:
    """A copy of the corpus database, the test's own."""
    from tests.conftest import drop_pg_database
    from tests.sparkscope.notify.corpus import copy_database

    url = copy_database(corpus_master, pg_server_url, tmp_path)
    yield url
    if url.startswith("postgresql"):
        drop_pg_database(pg_server_url, url)


# ------------------------------------------------------------------------------- a TCP gate


class Gate:
    """A TCP proxy in front of a server: it forwards the first ``passes`` connections and holds
    every later one without reading a byte of it (the server never sees those), until
    :meth:`open`, which drops the held ones and forwards every new connection. A client blocked
    at the gate has claimed its message but not sent it."""

    def __init__(self, target_port: int, passes: int) -> None:
        self.target_port = target_port
        self.passes = passes
        self.opened = False
        self.held: list[socket.socket] = []
        self.sockets: list[socket.socket] = []
        self.accepted = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                forward = self.opened or self.accepted <= self.passes
                if not forward:
                    self.held.append(client)
            if forward:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
                with self.lock:
                    self.sockets += [client, upstream]
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def open(self) -> None:
        with self.lock:
            self.opened = True
            for s in self.held:
                s.close()
            self.held.clear()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.open()
        self.listener.close()
        with self.lock:
            for s in self.sockets:
                s.close()
