"""Record History Server responses into a folder, and serve such a folder as if it were the server.

``sparkscope dump`` writes every response body it receives into ``DIR`` and an ``index.json``
mapping each request (path and sorted query) to its file. :class:`RecordingSession` answers
from that folder in place of a server session, so fetching from a recording runs exactly the
same client, parse and load code as fetching from a live server. The application
listing is filtered here the way the SHS filters it (status, minEndDate, maxEndDate, limit).
"""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

from fetcher.shs import endpoints
from fetcher.shs.session import Reply

INDEX = "index.json"
LISTING_KEY = "applications?status=completed"


def _file_for(key: str) -> str:
    path, _, query = key.partition("?")
    safe = "/".join(unquote(p).replace("..", "_") for p in path.split("/"))
    if query:
        safe += "__" + hashlib.sha1(query.encode()).hexdigest()[:10]
    return f"api/v1/{safe}.json"


class DumpWriter:
    """Writes recorded responses into a folder; thread-safe."""

    def __init__(self, out_dir: Path, server_url: str) -> None:
        self.out_dir = out_dir
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        index_path = out_dir / INDEX
        if index_path.is_file():
            self.index: dict[str, Any] = json.loads(index_path.read_text())
        else:
            self.index = {"format": 1, "server": server_url, "requests": {}}

    def record(self, key: str, body: bytes) -> None:
        """Store one response body under its request key."""
        rel = _file_for(key)
        target = self.out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        # Pretty-printed as the SHS does, so diffs of recordings stay readable.
        target.write_bytes(body)
        with self._lock:
            self.index["requests"][key] = rel

    def record_listing(self, apps: list[dict[str, Any]]) -> None:
        """Store the complete listing the replay filters from."""
        self.record(LISTING_KEY, json.dumps(apps, indent=2).encode())

    def close(self) -> None:
        """Write the index."""
        with self._lock:
            self.index["requests"] = dict(sorted(self.index["requests"].items()))
            (self.out_dir / INDEX).write_text(json.dumps(self.index, indent=1) + "\n")


def _parse_shs_time(text: str) -> int:
    """``2026-11-01T10:00:00.000GMT`` or ``2026-11-01`` -> epoch ms (UTC)."""
    text = text.strip()
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f%Z", "%Y-%m-%d"):
        try:
            dt = datetime.strptime(text.replace("GMT", "UTC"), fmt.replace("%Z", "UTC"))
        except ValueError:
            continue
        return int(dt.timestamp() * 1000) if dt.tzinfo else int(_as_utc(dt) * 1000)
    raise ValueError(f"bad date {text!r}")


def _as_utc(dt: datetime) -> float:
    from datetime import UTC

    return dt.replace(tzinfo=UTC).timestamp()


def _attempt_end(app: dict[str, Any]) -> int:
    attempts = app.get("attempts") or [{}]
    return int(attempts[0].get("endTimeEpoch") or 0)


def filter_listing(
    apps: list[dict[str, Any]], params: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Apply the SHS listing parameters (minEndDate, maxEndDate, limit), newest end first.

    Raises ValueError for a date the SHS would not parse.
    """
    for key, value in params:
        if key == "minEndDate":
            lo = _parse_shs_time(value)
            apps = [a for a in apps if _attempt_end(a) >= lo]
        elif key == "maxEndDate":
            hi = _parse_shs_time(value)
            apps = [a for a in apps if _attempt_end(a) <= hi]
    apps = sorted(apps, key=_attempt_end, reverse=True)
    limit = dict(params).get("limit")
    return apps[: int(limit)] if limit is not None else apps


class RecordingSession:
    """Answers GETs from a folder written by :class:`DumpWriter`, as a server session does."""

    def __init__(self, root: Path, api_root: str) -> None:
        self.root = root
        self.api_root = api_root.rstrip("/")
        index_path = root / INDEX
        if not index_path.is_file():
            self.requests_index: dict[str, str] = {}
        else:
            self.requests_index = json.loads(index_path.read_text()).get("requests", {})

    def get(self, target: str) -> Reply:
        """Serve one GET (a path and query under the API root) from the folder."""
        path, _, query = target.partition("?")
        status, body = self._answer(path, parse_qsl(query, keep_blank_values=True))
        return Reply(status, f"{self.api_root}/{target}", body, 0)

    def _answer(self, path: str, params: list[tuple[str, str]]) -> tuple[int, bytes]:
        if not self.requests_index:
            return 404, f"no recording in {self.root}".encode()
        if path == "applications":
            return self._listing(params)
        if path.startswith("applications/") and path.count("/") == 1:
            return self._one_app(unquote(path.split("/", 1)[1]))
        rel = self.requests_index.get(endpoints.request_key(path, params))
        if rel is None:
            return 404, f"not recorded: {path}".encode()
        return 200, (self.root / rel).read_bytes()

    def _listing(self, params: list[tuple[str, str]]) -> tuple[int, bytes]:
        rel = self.requests_index.get(LISTING_KEY)
        if rel is None:
            return 404, b"no listing recorded"
        apps: list[dict[str, Any]] = json.loads((self.root / rel).read_bytes())
        try:
            apps = filter_listing(apps, params)
        except ValueError as exc:
            return 400, str(exc).encode()
        return 200, json.dumps(apps).encode()

    def _one_app(self, app_id: str) -> tuple[int, bytes]:
        rel = self.requests_index.get(LISTING_KEY)
        apps = json.loads((self.root / rel).read_bytes()) if rel else []
        for app in apps:
            if app.get("id") == app_id:
                return 200, json.dumps(app).encode()
        return 404, f"unknown app: {app_id}".encode()

    def close(self) -> None:
        """Nothing to release."""
