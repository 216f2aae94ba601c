"""The executor side of ``sparkscope ingest --spark``: one Spark task reads one event log.

:func:`read_remote` runs on an executor: it opens the log where the executor sees it (a shared
folder, or the same fsspec URL), replays it and runs the fetcher's request plan over it exactly
as a fetch does (:func:`fetcher.eventlog.bundle.read_bundle`), and sends back the bundle,
pickled and compressed; a log that cannot be stored sends back the reason instead. The driver
loads the bundles through the loader (:mod:`fetcher.ingest`).
"""

from __future__ import annotations

import pickle
import re
import zlib
from dataclasses import asdict
from typing import Any

from fetcher.eventlog.bundle import LogBundle, read_bundle
from fetcher.eventlog.read.files import EventLogError, source_of
from fetcher.eventlog.read.fs import LogStoreError, open_store
from fetcher.parse.fields import ParseError
from fetcher.shs.client import ShsError
from sparkscope.config.loader import FetcherConfig


def read_remote(task: tuple[str, str, dict[str, Any]]) -> tuple[str, bytes]:
    """``(location, path, fetcher settings)`` -> ``(path, blob)``: the blob is a compressed
    pickle of ``("ok", LogBundle)`` or ``("failed", reason)``."""
    location, path, settings = task
    fetcher_config = FetcherConfig(**settings)
    try:
        fs, _root = open_store(location)
        source = source_of(fs.stat(path), fs)
        outcome: tuple[str, Any] = (
            "ok",
            read_bundle(source, fetcher_config, re.compile(fetcher_config.redaction_regex)),
        )
    except (ShsError, ParseError, EventLogError, LogStoreError, OSError) as exc:
        outcome = ("failed", str(exc.message if isinstance(exc, ShsError) else exc)[:2000])
    return path, zlib.compress(pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack(blob: bytes) -> tuple[str, LogBundle | str]:
    """The driver's side of :func:`read_remote`'s blob."""
    kind, value = pickle.loads(zlib.decompress(blob))
    return kind, value


def settings_of(fetcher_config: FetcherConfig) -> dict[str, Any]:
    """Fetcher settings as plain values for the executors."""
    return asdict(fetcher_config)
