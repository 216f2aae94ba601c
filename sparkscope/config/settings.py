"""Every configuration key with its default and help: the table docs/configuration.md documents
(tests/test_docs.py checks that each key appears there). Parsing lives in sparkscope.config.loader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkscope.config.loader import (
    DEFAULT_REDACTION_REGEX,
    ENV_DATA_DIR,
    ENV_DATABASE_URL,
    ENV_HEURISTICS,
    ENV_SECRET_KEY,
)


@dataclass(frozen=True)
class Setting:
    """One configuration key: dotted name, default, and the help shown in docs/configuration.md."""

    name: str
    default: Any
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "database_url",
        None,
        "SQLAlchemy URL. Unset: SQLite file `sparkscope.db` in `data_dir`. "
        f"Env `{ENV_DATABASE_URL}` overrides.",
    ),
    Setting(
        "data_dir",
        "~/.local/share/sparkscope",
        f"Folder for the embedded SQLite database. Env `{ENV_DATA_DIR}`.",
    ),
    Setting(
        "heuristics_path",
        "heuristics.yaml beside this file, else the bundled one",
        f"Heuristic thresholds (re-read at every page load). Env `{ENV_HEURISTICS}`.",
    ),
    Setting("servers[].name", None, "Short name of a History Server, shown in the UI; unique."),
    Setting(
        "servers[].url",
        None,
        "Base URL of the History Server (`http(s)://host:18080`), a folder or "
        "`file://` URL recorded with `sparkscope dump`.",
    ),
    Setting(
        "servers[].event_logs",
        None,
        "Instead of `url`: a folder or fsspec URL (`s3://`, `gs://`, `abfs://`, `hdfs://`) of "
        "Spark event logs, read directly (docs/eventlogs.md).",
    ),
    Setting("servers[].verify_tls", True, "Verify the server's TLS certificate."),
    Setting("servers[].ca_bundle", None, "Path to a CA bundle used to verify TLS."),
    Setting("servers[].connect_timeout_s", 5.0, "Seconds to wait for a TCP connection."),
    Setting(
        "servers[].read_timeout_s",
        60.0,
        "Seconds to wait for a response (replaying a big app is slow).",
    ),
    Setting(
        "servers[].request_deadline_s",
        300.0,
        "Seconds one request may take in all (connect, wait, read the body, retries), however "
        "slowly the server sends; past it the request fails as a timeout.",
    ),
    Setting(
        "fetcher.threads",
        4,
        "Worker threads, one HTTP session each; one application per thread at a time.",
    ),
    Setting(
        "fetcher.retries",
        4,
        "Retries on connection errors, 429 and 5xx, with exponential backoff and jitter.",
    ),
    Setting("fetcher.backoff_factor_s", 0.5, "First backoff in seconds; doubles on every retry."),
    Setting(
        "fetcher.top_stages",
        5,
        "K: the longest stages (by executor run time) whose slowest tasks are stored.",
    ),
    Setting(
        "fetcher.tasks_per_stage",
        20,
        "How many of the slowest (and of the failed) tasks to store per stage.",
    ),
    Setting(
        "fetcher.overlap_minutes",
        120,
        "The incremental watermark looks back this far for apps listed late.",
    ),
    Setting(
        "fetcher.max_app_failures",
        5,
        "An app that failed this many times is reported and no longer retried.",
    ),
    Setting("fetcher.listing_page_size", 500, "Applications asked for per listing request."),
    Setting(
        "fetcher.reconcile_days",
        7,
        "Reconciliation lists this many days below the watermark, for apps the SHS listed late.",
    ),
    Setting(
        "fetcher.reconcile_every_hours",
        24,
        "A run reconciles when the last reconciliation is this old; 0: only `fetch --reconcile`.",
    ),
    Setting(
        "fetcher.store_hadoop_properties",
        False,
        "Also store the ~1,000 Hadoop properties per app (mostly cluster defaults; "
        "`spark.hadoop.*` settings are Spark properties and always stored).",
    ),
    Setting(
        "fetcher.redaction_regex",
        DEFAULT_REDACTION_REGEX,
        "Spark properties whose key or value matches are stored redacted.",
    ),
    Setting(
        "web.secret_key",
        None,
        f"Flask secret key. Env `{ENV_SECRET_KEY}`. Unset: random per process.",
    ),
    Setting("web.host", "127.0.0.1", "Address `sparkscope serve` binds to."),
    Setting("web.port", 8080, "Port `sparkscope serve` listens on."),
    Setting("web.page_size", 50, "Results per search page."),
    Setting("prices.currency", "USD", "Currency label for costs."),
    Setting("prices.core_hour", None, "Price of one core-hour; unset hides money figures."),
    Setting("prices.gb_hour", None, "Price of one GB-hour of memory; unset hides money figures."),
    Setting(
        "predictions.key_patterns",
        [],
        "Regexes removed from application names to form the recurring key "
        "(e.g. `'\\d{4}-\\d{2}-\\d{2}'` for dates); run `sparkscope analyze` after a change.",
    ),
    Setting("predictions.min_history", 5, "Earlier successful runs needed for a verdict."),
    Setting("predictions.margin", 0.1, "A regression is slower than the interval top by more."),
    Setting("predictions.level", 0.8, "Nominal level of the prediction intervals (0.5-0.99)."),
    Setting("predictions.class_aware", True, "Fit the class-aware GBDT across keys."),
)
