"""`sparkscope dump`: record a History Server's responses into a folder, through the fetch code."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fetcher.listing import list_completed
from fetcher.parse.entry import parse_app_entry
from fetcher.shs import endpoints
from fetcher.shs.client import make_client
from fetcher.shs.replay import DumpWriter
from fetcher.shs.request_plan import fetch_app
from sparkscope.config.loader import FetcherConfig, ServerConfig


def dump_server(
    server: ServerConfig,
    fetcher_config: FetcherConfig,
    out_dir: Path,
    limit: int | None = None,
    app_ids: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Fetch the newest ``limit`` (or the named) completed apps, recording every response."""
    writer = DumpWriter(out_dir, server.url)
    client = make_client(server, fetcher_config, recorder=writer.record)
    redaction = re.compile(fetcher_config.redaction_regex)
    if app_ids:
        raw = {a: client.get_json(endpoints.application(a)) for a in app_ids}
        entries = [parse_app_entry(item) for item in raw.values()]
    else:
        listing = list_completed(client, None, limit, fetcher_config.listing_page_size)
        entries, raw = listing.entries, listing.raw
    entries = [e for e in entries if e.completed]
    with ThreadPoolExecutor(max_workers=fetcher_config.threads) as pool:
        list(pool.map(lambda e: fetch_app(client, e, fetcher_config, redaction), entries))
    # The replay filters the listing itself, so it needs every recorded app's listing entry.
    previous = _previous_listing(out_dir)
    merged = {**previous, **{e.app_id: raw[e.app_id] for e in entries if e.app_id in raw}}
    writer.record_listing(list(merged.values()))
    writer.close()
    return {"apps": len(entries), "requests": client.requests, "bytes": client.bytes}


def _previous_listing(out_dir: Path) -> dict[str, Any]:
    import json

    from fetcher.shs.replay import INDEX, LISTING_KEY

    index = out_dir / INDEX
    if not index.is_file():
        return {}
    rel = json.loads(index.read_text())["requests"].get(LISTING_KEY)
    if rel is None:
        return {}
    return {a["id"]: a for a in json.loads((out_dir / rel).read_text())}
