"""Serve responses recorded from a real Spark 4.0.1 History Server (demo/spark-events) through
:class:`tests.fetcher.stub_shs.StubShs`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from fetcher.shs.replay import INDEX, LISTING_KEY, filter_listing
from tests.fetcher import stub_shs

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "demo" / "spark-events"
BASE = "http://shs.test:18080"
API = f"{BASE}/api/v1"

HEALTHY = "local-1795971819513"
SKEWED = "local-1795971880926"
FLAKY = "local-1795972006331"  # 3 failed tasks in stage 0, retried
BILLING = "local-1795972028393"  # stage 6 failed, job 3 failed
CRASHING = "local-1795972038475"

Transform = Callable[[str, Any], Any]


def index() -> dict[str, str]:
    """Request key -> recorded file."""
    return dict(json.loads((RECORDING / INDEX).read_text())["requests"])


def listing() -> list[dict[str, Any]]:
    """The recorded listing entries of all 21 applications."""
    return list(json.loads((RECORDING / index()[LISTING_KEY]).read_text()))


def app_requests(app_id: str) -> dict[str, Any]:
    """Every recorded request key of one application -> its decoded JSON."""
    return {
        key: json.loads((RECORDING / rel).read_text())
        for key, rel in index().items()
        if key.startswith(f"applications/{app_id}/")
    }


def register_app(
    rsps: stub_shs.StubShs,
    app_id: str,
    transform: Transform | None = None,
    path_prefix: str | None = None,
) -> list[str]:
    """Register exactly the requests the fetcher made for one app when it was recorded.

    ``transform(key, data)`` may rewrite a body; ``path_prefix`` replaces ``applications/<id>``
    (to serve the same data under an attempt-id path). Returns the registered keys.
    """
    keys = []
    for key, data in app_requests(app_id).items():
        body = transform(key, data) if transform else data
        path, _, query = key.partition("?")
        if path_prefix:
            path = path.replace(f"applications/{app_id}", path_prefix, 1)
        rsps.add(
            stub_shs.GET,
            f"{API}/{path}",
            json=body,
            match=[stub_shs.query_string(query or None)],
        )
        keys.append(key)
    return keys


def listing_callback(
    entries: list[dict[str, Any]],
) -> Callable[[Any], tuple[int, dict[str, str], str]]:
    """A stand-in callback that filters ``entries`` the way the SHS does."""

    def callback(request: Any) -> tuple[int, dict[str, str], str]:
        apps = filter_listing(entries, parse_qsl(urlsplit(request.url).query))
        return 200, {"Content-Type": "application/json"}, json.dumps(apps)

    return callback


def register_listing(rsps: stub_shs.StubShs, app_ids: list[str] | None = None) -> None:
    """Serve the application listing (of the given apps, default all 21)."""
    entries = [a for a in listing() if app_ids is None or a["id"] in app_ids]
    rsps.add_callback(stub_shs.GET, f"{API}/applications", callback=listing_callback(entries))


def listing_calls(rsps: stub_shs.StubShs) -> list[dict[str, str]]:
    """Query parameters of every listing request made."""
    return [
        dict(parse_qsl(urlsplit(c.request.url).query))
        for c in rsps.calls
        if urlsplit(c.request.url).path == "/api/v1/applications"
    ]
