"""The recorded applications (demo/*) read through the fetch code (replay, parse) into heuristic
inputs, without a database: what the fetcher's pipeline assembles for them."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from fetcher.listing import list_completed
from fetcher.shs.client import ShsClient
from fetcher.shs.request_plan import fetch_app
from heuristics.appdata import AppData
from sparkscope.config.loader import FetcherConfig
from sparkscope.pipeline.steps import app_data

ROOT = Path(__file__).resolve().parents[4]
DEMO = ROOT / "demo"
CORPORA = ("sql-events", "spark-events", "recurring-events", "scaling-events")


@functools.cache
def corpus(name: str) -> dict[str, AppData]:
    """app id -> inputs of every application of one recorded corpus."""
    client = ShsClient(str(DEMO / name))
    fcfg = FetcherConfig()
    entries = list_completed(client, None, None, fcfg.listing_page_size).entries
    redaction = re.compile(fcfg.redaction_regex)
    return {e.app_id: app_data(fetch_app(client, e, fcfg, redaction)) for e in entries}
