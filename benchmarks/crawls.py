"""The crawls `fetch_bench` compares a fetch with: the URLs the fetch asked for, grouped per
application and threaded as the fetch does, read with ``requests`` (the HTTP library's usual
path) or on bare kept-alive sockets (the floor of the HTTP, and of orjson's decode after it)."""

from __future__ import annotations

import resource
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor


def cpu_s() -> float:
    """CPU seconds of this process so far, user and system, every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def system_s() -> float:
    """System (kernel) CPU seconds of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def by_application(urls: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(the listing's URLs, each application's URLs in the order asked)."""
    listing: list[str] = []
    per_app: dict[str, list[str]] = defaultdict(list)
    for u in urls:
        if u.startswith("applications?") or u == "applications":
            listing.append(u)
        else:
            per_app[u.split("/")[1].split("?")[0]].append(u)
    return listing, per_app


def crawl(url: str, urls: list[str], threads: int) -> tuple[float, float]:
    """Request the same URLs, grouped per application, with the same threads; read bodies only.
    Returns (wall seconds, CPU seconds of this process)."""
    import requests

    listing, per_app = by_application(urls)
    local = threading.local()

    def session() -> requests.Session:
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = requests.Session()
        return s

    def get_all(paths: list[str]) -> int:
        n = 0
        for p in paths:
            n += len(session().get(f"{url}/api/v1/{p}", timeout=120).content)
        return n

    started, cpu = time.perf_counter(), cpu_s()
    get_all(listing)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(get_all, per_app.values()))
    return time.perf_counter() - started, cpu_s() - cpu


def socket_crawl(url: str, urls: list[str], threads: int) -> tuple[float, float]:
    """The floor of the HTTP: the same URLs, grouped and threaded as :func:`crawl`, each thread
    on one kept-alive socket writing a bare ``GET`` and reading the status line, the headers and
    a ``Content-Length`` body, nothing more; and each body then decoded by orjson alone, as the
    fetch decodes it (the environment's unread members emptied first, outside the clock). Returns
    (CPU seconds of the crawl, CPU seconds of the decode), of this process."""
    import socket
    from urllib.parse import urlsplit

    import orjson

    from fetcher.shs.keepalive import read_exactly
    from fetcher.shs.request_plan import ENVIRONMENT_UNREAD
    from fetcher.shs.safejson import without_members

    unread = ("hadoopProperties", *ENVIRONMENT_UNREAD)
    parts = urlsplit(url)
    per_app = by_application(urls)[1]
    local = threading.local()
    sockets: list[socket.socket] = []
    lock = threading.Lock()
    spent_s = [0.0, 0.0]  # emptying the environment's unread members, decoding

    def get(path: str) -> bytes:
        sock = getattr(local, "sock", None)
        if sock is None:
            sock = local.sock = socket.create_connection((parts.hostname, parts.port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with lock:
                sockets.append(sock)
        sock.sendall(f"GET /api/v1/{path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed before the headers")
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        return read_exactly(sock, rest, length)  # as the fetch's client reads a body

    def get_all(paths: list[str]) -> None:
        cut = decode = 0.0
        for path in paths:
            body = get(path)
            started = time.thread_time()
            if path.split("?")[0].endswith("/environment"):
                body = without_members(body, unread)
            cut_at = time.thread_time()
            orjson.loads(body)
            cut, decode = cut + cut_at - started, decode + time.thread_time() - cut_at
        with lock:
            spent_s[0] += cut
            spent_s[1] += decode

    cpu = cpu_s()
    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(get_all, per_app.values()))
    finally:
        for sock in sockets:
            sock.close()
    return cpu_s() - cpu - sum(spent_s), spent_s[1]
