"""GETs on a kept-alive connection, written and read on its socket directly.

Most of a fetch's requests go to a connection the server keeps open (Jetty does, as every
HTTP/1.1 server). For those, urllib3's request path and ``http.client``'s response parser (which
reads the headers through the ``email`` package) cost about three times what the exchange itself
costs. :class:`KeptAlive` writes the request line and the session's headers (built once) on the
socket and reads the status line, the headers and a ``Content-Length``, chunked or
close-delimited body itself.

Everything else stays urllib3's, with the same outcome as a request through ``urlopen``:

- no open connection in the pool (the first request of a thread, or after one was dropped):
  the request goes through ``urlopen``, which opens one;
- an answer that breaks off before its headers, or a read timeout then: the connection is
  dropped and the attempt counted on the session's :class:`urllib3.util.retry.Retry` as urllib3
  counts it (``ProtocolError`` / ``ReadTimeoutError``), then the request goes on through
  ``urlopen`` with the retries that are left;
- a status the retry policy retries (429, 5xx): counted and slept on likewise, then ``urlopen``;
- an answer in a form this reader does not take (an interim 1xx, folded headers, another
  transfer coding): asked again through ``urlopen``, not counted;
- a body that breaks off: :class:`BodyError` (which the session raises too), caused by the
  urllib3 error a body read would have raised;
- a target urllib3 would encode (the request plan's are encoded already): sent by ``urlopen``;
- a redirect, a cookie, a compressed body: the answer is handed over as a urllib3
  ``HTTPResponse`` over the bytes read, so the session follows, keeps and decodes it as before.
"""

from __future__ import annotations

import io
import re
import socket
import string
import sys
from collections.abc import Callable
from typing import Any

from urllib3 import BaseHTTPResponse, HTTPHeaderDict, HTTPResponse
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.exceptions import MaxRetryError, ProtocolError, ReadTimeoutError
from urllib3.util.retry import Retry

RECV = 65536
#: the most one read of a body asks for (and so allocates), whatever its Content-Length says
BODY_RECV = 1 << 22
MAX_HEAD = 65536  # bytes of status line and headers; a longer head is not HTTP we expect
PLAIN = ("", "identity")
#: the headers whose values an answer's reading or its handling depends on (names in lower case)
_ACTED_ON = frozenset(
    ("content-length", "transfer-encoding", "connection", "retry-after", "content-encoding",
     "location", "set-cookie", "set-cookie2")
)  # fmt: skip
#: the characters a URI allows unencoded, which urllib3 sends as they are; it also leaves
#: upper-case percent escapes alone (it encodes any other character, upper-cases escapes and
#: resolves dot segments, so such targets are left to it)
_PLAIN = string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/?"
_DROP_PLAIN = str.maketrans("", "", _PLAIN)
_ESCAPE = re.compile(r"%[0-9A-F]{2}")
#: ``urlopen(path, retries)`` on the session's pool, with the session's headers
Urlopen = Callable[[str, Retry], BaseHTTPResponse]


def sendable(target: str) -> bool:
    """Whether urllib3 would send ``target`` exactly as it is."""
    rest = target.translate(_DROP_PLAIN)  # what is left: "%" of escapes, or a character to encode
    if rest and (rest.strip("%") or len(rest) != len(_ESCAPE.findall(target))):
        return False
    path = target.split("?", 1)[0]
    return "." not in path or not any(segment in (".", "..") for segment in path.split("/"))


class Malformed(Exception):
    """What came back is not an HTTP/1.x answer this reader takes (urllib3 reads it instead)."""


class RemoteClosed(ConnectionError):
    """The server closed the connection before the answer's headers were whole."""


class BodyError(Exception):
    """The answer's headers came, its body did not arrive whole (the cause is chained)."""

    @classmethod
    def cut_short(cls, cause: BaseException) -> BodyError:
        """The error for a body read that ``cause`` (a urllib3 error) ended."""
        return cls(f"body cut short: {type(cause).__name__}")


class RawAnswer:
    """A status, the headers as received and the raw (still encoded) body; ``plain`` when the
    session needs nothing from the headers (not a redirect, no cookie, an uncompressed body),
    ``retry_after`` when the last ``Retry-After`` header has a value."""

    __slots__ = ("status", "headers", "body", "keep_alive", "plain", "retry_after")

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
        keep: bool,
        plain: bool = True,
        retry_after: bool = False,
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.keep_alive = keep
        self.plain = plain
        self.retry_after = retry_after

    def as_response(self, url: str, retries: Retry) -> HTTPResponse:
        """The answer as urllib3 would have returned it (its body read from memory)."""
        return HTTPResponse(
            body=io.BytesIO(self.body),
            headers=HTTPHeaderDict(self.headers),
            status=self.status,
            preload_content=False,
            decode_content=True,
            request_url=url,
            retries=retries,
        )


class KeptAlive:
    """The GETs of one session to one pool (no proxy), on connections the server kept open."""

    def __init__(
        self,
        pool: HTTPConnectionPool,
        base_path: str,
        host: str,
        headers: dict[str, str],
        *,
        read_timeout: float | None,
        retry: Retry,
        urlopen: Urlopen,
    ) -> None:
        self.pool = pool
        self.base_path = base_path
        lines = [f"Host: {host}"] + [f"{k}: {v}" for k, v in headers.items()]
        self._head_tail = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.read_timeout = read_timeout
        self.retry = retry
        self.urlopen = urlopen

    def get(self, target: str) -> RawAnswer | BaseHTTPResponse | None:
        """GET ``target`` on an open pooled connection: a plain answer (a body and nothing the
        session must act on), any other answer as a urllib3 response (after retries through
        ``urlopen``), or None, with nothing sent, when no open connection was pooled or the
        target is one urllib3 would encode."""
        if not sendable(target):
            return None
        path = f"{self.base_path}/{target}"
        conn = self.pool._get_conn()
        sock: socket.socket | None = getattr(conn, "sock", None)
        if sock is None:
            self.pool._put_conn(conn)
            return None
        retry = self.retry
        try:
            if sock.gettimeout() != self.read_timeout:  # as this session left it, mostly
                sock.settimeout(self.read_timeout)
            sock.sendall(b"GET " + path.encode("ascii") + b" HTTP/1.1\r\n" + self._head_tail)
            answer = _read_answer(sock)
        except BaseException as exc:
            self._discard(conn)
            if isinstance(exc, Malformed):
                # an answer in a form this reader does not take: asked again through urllib3,
                # which reads every form
                return self.urlopen(path, retry)
            if not isinstance(exc, OSError):
                raise
            if isinstance(exc, TimeoutError | socket.timeout):
                error: Exception = ReadTimeoutError(
                    self.pool, path, f"Read timed out. (read timeout={self.read_timeout})"
                )
            else:
                error = ProtocolError("Connection aborted.", exc)
            retry = retry.increment("GET", path, error=error, _pool=self.pool,
                                    _stacktrace=sys.exc_info()[2])  # fmt: skip
            retry.sleep()
            return self.urlopen(path, retry)
        if answer.keep_alive:
            self.pool._put_conn(conn)
        else:
            self._discard(conn)
        if retry.is_retry("GET", answer.status, answer.retry_after):
            response = answer.as_response(path, retry)
            try:
                retry = retry.increment("GET", path, response=response, _pool=self.pool)
            except MaxRetryError:
                if retry.raise_on_status:
                    raise
                return response
            retry.sleep(response)
            return self.urlopen(path, retry)
        return answer if answer.plain else answer.as_response(path, retry)

    def _discard(self, conn: Any) -> None:
        """Close a connection and free its place in the pool (the next request opens another)."""
        conn.close()
        self.pool._put_conn(None)


def _read_answer(sock: socket.socket) -> RawAnswer:
    """One answer from ``sock``: OSError (RemoteClosed among them) or Malformed before its
    headers are whole, BodyError (caused by the urllib3 error) after."""
    buf = b""
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            break
        if len(buf) > MAX_HEAD:
            raise Malformed("headers too long")
        chunk = sock.recv(RECV)
        if not chunk:
            raise RemoteClosed("connection closed before the answer's headers")
        buf += chunk
    lines = buf[:end].decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/1.") or len(status_line[1]) != 3:
        raise Malformed(f"not an HTTP/1.x status line: {lines[0][:40]!r}")
    try:
        status = int(status_line[1])
    except ValueError:
        raise Malformed(f"not an HTTP/1.x status line: {lines[0][:40]!r}") from None
    if status < 200:
        raise Malformed(f"unexpected interim answer {status}")
    headers: list[tuple[str, str]] = []
    length: int | None = None
    chunked = False
    keep = status_line[0] != "HTTP/1.0"
    plain = True
    retry_after = False
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise Malformed(f"not a header line: {line[:40]!r}")
        name = name.strip()
        value = value.strip()
        headers.append((name, value))
        low = name.lower()
        if low not in _ACTED_ON:
            continue
        if low == "content-length":
            try:
                length = int(value)
            except ValueError:
                raise Malformed(f"bad Content-Length {value[:20]!r}") from None
        elif low == "transfer-encoding":
            chunked = value.lower() == "chunked"
            if not chunked:
                raise Malformed(f"transfer encoding {value[:20]!r}")
        elif low == "connection":
            keep = "close" not in value.lower() and (keep or "keep-alive" in value.lower())
        elif low == "retry-after":
            retry_after = bool(value)  # the last one counts, as urllib3 reads it
        elif low != "content-encoding" or value.lower() not in PLAIN:
            plain = False  # a redirect, a cookie or a compressed body: urllib3's to handle
    rest = buf[end + 4 :]
    try:
        if status in (204, 304):
            body = b""
        elif chunked:
            body, clean = _chunked(sock, rest)
            keep = keep and clean
        elif length is not None:
            body = read_exactly(sock, rest, length)
            keep = keep and len(rest) <= length  # bytes beyond the body: not reused
        else:
            body, keep = _until_closed(sock, rest), False
    except (OSError, Malformed) as exc:
        if isinstance(exc, TimeoutError | socket.timeout):
            cause: Exception = ReadTimeoutError(None, "", "Read timed out.")  # type: ignore[arg-type]
        else:
            cause = ProtocolError(f"Connection broken: {exc!r}", exc)
        raise BodyError.cut_short(cause) from cause
    return RawAnswer(status, headers, body, keep, plain, retry_after)


def read_exactly(sock: socket.socket, have: bytes, length: int) -> bytes:
    """A body of ``length`` bytes: ``have`` (what was read with the headers), then the rest read
    from ``sock``; Malformed when the connection ends first.

    Each ``recv`` asks for all that is missing (up to :data:`BODY_RECV`), so it fills a bytes
    object of its own (allocated, not zeroed) with whatever has arrived: a body that comes in one
    read is returned as it is, one that comes in several is copied once, when they are joined.
    (A zeroed buffer filled with ``recv_into`` and copied out cost a clearing and a copy of the
    whole body.)"""
    if len(have) >= length:
        return have[:length]
    parts = [have] if have else []
    got = len(have)
    while got < length:
        chunk = sock.recv(min(length - got, BODY_RECV))
        if not chunk:
            raise Malformed(f"IncompleteRead({got} bytes read, {length - got} more expected)")
        parts.append(chunk)
        got += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _until_closed(sock: socket.socket, have: bytes) -> bytes:
    parts = [have]
    while True:
        chunk = sock.recv(RECV)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


def _chunked(sock: socket.socket, have: bytes) -> tuple[bytes, bool]:
    """The body of a chunked answer, and whether nothing came after its end."""
    buf = bytearray(have)
    pos = 0
    parts: list[bytes] = []

    def need(n: int) -> None:
        while len(buf) - pos < n:
            chunk = sock.recv(RECV)
            if not chunk:
                raise Malformed("chunked body ended early")
            buf.extend(chunk)

    def line() -> bytes:
        nonlocal pos
        while True:
            end = buf.find(b"\r\n", pos)
            if end >= 0:
                out = bytes(buf[pos:end])
                pos = end + 2
                return out
            if len(buf) - pos > MAX_HEAD:
                raise Malformed("chunk size line too long")
            chunk = sock.recv(RECV)
            if not chunk:
                raise Malformed("chunked body ended early")
            buf.extend(chunk)

    while True:
        size_text = line().split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise Malformed(f"bad chunk size {size_text[:20]!r}") from None
        if size == 0:
            while line():  # trailers, up to the empty line
                pass
            return b"".join(parts), pos == len(buf)
        need(size + 2)
        parts.append(bytes(buf[pos : pos + size]))
        pos += size + 2
        if pos > RECV:
            del buf[:pos]
            pos = 0
