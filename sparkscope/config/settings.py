"""Every configuration setting in one table: its name, default, validator and help.

The table is the one source of the configuration: the dataclasses of
:mod:`sparkscope.config.loader` take their defaults from it, the loader parses and validates each
value with its validator, and :mod:`sparkscope.config.reference` renders the configuration
reference (docs/configuration.md) from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkscope.config.parsing import (
    BOOLEAN,
    DATABASE_URL,
    EVENT_LOGS,
    HOST,
    SERVER_URL,
    Validator,
    integer,
    number,
    optional,
    regex,
    regex_list,
    string,
)

ENV_CONFIG = "SPARKSCOPE_CONFIG"
ENV_DATABASE_URL = "SPARKSCOPE_DATABASE_URL"
ENV_DATA_DIR = "SPARKSCOPE_DATA_DIR"
ENV_SECRET_KEY = "SPARKSCOPE_SECRET_KEY"
ENV_HEURISTICS = "SPARKSCOPE_HEURISTICS"

# Spark's own default for spark.redaction.regex, widened to a few more words that mark secrets.
DEFAULT_REDACTION_REGEX = (
    r"(?i)secret|password|passwd|token|access[.]?key|private[.]?key|credential|account[.]?key"
    r"|[.]sas[.]|sas[.]?token|signature"
)


class _Required:
    """The default of a setting that has none: it must be given."""

    def __repr__(self) -> str:
        return "required"


REQUIRED: Any = _Required()

#: A section's values are limited so that one config cannot make a run or a page unbounded.
SECONDS_MAX = 86_400.0


@dataclass(frozen=True)
class Setting:
    """One configuration key: dotted name (``servers[].url`` for each server), default,
    validator, help, and the environment variable that overrides it (if any)."""

    name: str
    default: Any
    validator: Validator
    help: str
    env: str | None = None
    #: How the reference shows a default that is computed rather than a value.
    shown_default: str | None = None

    @property
    def section(self) -> str:
        """``fetcher`` for ``fetcher.threads``, ``servers`` for ``servers[].url``, "" at the top."""
        head, dot, _key = self.name.partition(".")
        return head.removesuffix("[]") if dot else ""

    @property
    def key(self) -> str:
        """The key within its section: ``threads`` for ``fetcher.threads``."""
        return self.name.rpartition(".")[2]


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "database_url",
        None,
        DATABASE_URL,
        "SQLAlchemy URL of the database (PostgreSQL in production).",
        env=ENV_DATABASE_URL,
        shown_default="SQLite file `sparkscope.db` in `data_dir`",
    ),
    Setting(
        "data_dir",
        "~/.local/share/sparkscope",
        string(),
        "Folder for the embedded SQLite database.",
        env=ENV_DATA_DIR,
    ),
    Setting(
        "heuristics_path",
        None,
        string(),
        "Heuristic thresholds (re-read at every page load; a bad edit keeps the previous ones).",
        env=ENV_HEURISTICS,
        shown_default="`heuristics.yaml` beside the config file, else the bundled one",
    ),
    Setting(
        "servers[].name",
        REQUIRED,
        string(200),
        "Short name of a History Server, shown in the UI; unique.",
    ),
    Setting(
        "servers[].url",
        REQUIRED,
        SERVER_URL,
        "Base URL of the History Server (`http(s)://host:18080`), or a folder or `file://` URL "
        "recorded with `sparkscope dump`. Credentials in it (`http://user:password@host`) are "
        "sent as HTTP basic auth and never stored or shown.",
    ),
    Setting("servers[].verify_tls", True, BOOLEAN, "Verify the server's TLS certificate."),
    Setting(
        "servers[].ca_bundle", None, optional(string()), "Path to a CA bundle to verify TLS with."
    ),
    Setting(
        "servers[].connect_timeout_s",
        5.0,
        number(0, 600, above=True),
        "Seconds to wait for a TCP connection.",
    ),
    Setting(
        "servers[].event_logs",
        None,
        optional(EVENT_LOGS),
        "Instead of `url`: a folder or fsspec URL (`s3://`, `gs://`, `abfs://`, `hdfs://`) of "
        "Spark event logs, read directly (docs/eventlogs.md).",
    ),
    Setting(
        "servers[].read_timeout_s",
        60.0,
        number(0, SECONDS_MAX, above=True),
        "Seconds to wait for a response (replaying a big app is slow).",
    ),
    Setting(
        "servers[].request_deadline_s",
        300.0,
        number(0, SECONDS_MAX, above=True),
        "Seconds one request may take in all (connect, wait, read the body, retries), however "
        "slowly the server sends; past it the request fails as a timeout.",
    ),
    Setting(
        "fetcher.threads",
        4,
        integer(1, 64),
        "Worker threads, one HTTP session each; one application per thread at a time.",
    ),
    Setting(
        "fetcher.retries",
        4,
        integer(0, 20),
        "Retries on connection errors, 429 and 5xx, with exponential backoff and jitter.",
    ),
    Setting(
        "fetcher.backoff_factor_s",
        0.5,
        number(0, 60),
        "First backoff in seconds; doubles on every retry.",
    ),
    Setting(
        "fetcher.top_stages",
        5,
        integer(0, 1000),
        "K: the longest stages (by executor run time) whose slowest tasks are stored.",
    ),
    Setting(
        "fetcher.tasks_per_stage",
        20,
        integer(0, 10_000),
        "How many of the slowest (and of the failed) tasks to store per stage.",
    ),
    Setting(
        "fetcher.overlap_minutes",
        120,
        integer(0, 43_200),
        "The incremental watermark looks back this far for apps listed late.",
    ),
    Setting(
        "fetcher.max_app_failures",
        5,
        integer(1, 1000),
        "An app that failed this many times is reported and no longer retried.",
    ),
    Setting(
        "fetcher.listing_page_size",
        500,
        integer(1, 100_000),
        "Applications asked for per listing request.",
    ),
    Setting(
        "fetcher.reconcile_days",
        7,
        integer(1, 3650),
        "Reconciliation lists this many days below the watermark, for apps the SHS listed late.",
    ),
    Setting(
        "fetcher.reconcile_every_hours",
        24,
        integer(0, 8760),
        "A run reconciles when the last reconciliation is this old; 0: only `fetch --reconcile`.",
    ),
    Setting(
        "fetcher.store_hadoop_properties",
        False,
        BOOLEAN,
        "Also store the ~1,000 Hadoop properties per app (mostly cluster defaults; "
        "`spark.hadoop.*` settings are Spark properties and always stored).",
    ),
    Setting(
        "fetcher.one_cpu",
        True,
        BOOLEAN,
        "Keep a fetch's threads on one CPU (Linux) while it reads a History Server: they take "
        "turns on Python's lock, and spread over CPUs each hand-over costs more CPU time.",
    ),
    Setting(
        "fetcher.redaction_regex",
        DEFAULT_REDACTION_REGEX,
        regex(max_unbounded=1),
        "Spark properties whose key or value matches are stored masked (on top of the built-in "
        "secret shapes, see docs/security.md); the pages apply it again on display.",
    ),
    Setting(
        "web.secret_key",
        None,
        optional(string()),
        "Flask secret key.",
        env=ENV_SECRET_KEY,
        shown_default="random per process",
    ),
    Setting("web.host", "127.0.0.1", HOST, "Address `sparkscope serve` binds to."),
    Setting("web.port", 8080, integer(1, 65535), "Port `sparkscope serve` listens on."),
    Setting("web.page_size", 50, integer(1, 1000), "Results per search page."),
    Setting("prices.currency", "USD", string(16), "Currency label for costs."),
    Setting(
        "prices.core_hour",
        None,
        optional(number(0, 1e6)),
        "Price of one core-hour; unset hides money figures.",
    ),
    Setting(
        "prices.gb_hour",
        None,
        optional(number(0, 1e6)),
        "Price of one GB-hour of memory; unset hides money figures.",
    ),
    Setting(
        "predictions.key_patterns",
        (),
        regex_list(100, max_unbounded=2),
        "Regexes removed from application names to form the recurring key "
        "(e.g. `'\\d{4}-\\d{2}-\\d{2}'` for dates); run `sparkscope analyze --force` after a change.",
    ),
    Setting(
        "predictions.min_history",
        5,
        integer(1, 1000),
        "Earlier successful runs needed for a verdict.",
    ),
    Setting(
        "predictions.margin",
        0.1,
        number(0, 10),
        "A regression is slower than the interval's top by more than this share.",
    ),
    Setting(
        "predictions.level",
        0.8,
        number(0.5, 0.99),
        "Nominal level of the prediction intervals.",
    ),
    Setting(
        "predictions.class_aware",
        True,
        BOOLEAN,
        "Fit the class-aware model across the keys of a server.",
    ),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def default(name: str) -> Any:
    """The default of a setting, for the dataclass field of the same name."""
    return BY_NAME[name].default


def section_validators(section: str) -> dict[str, Validator]:
    """The validators of one section's keys (``servers`` for each server's), in table order."""
    return {s.key: s.validator for s in SETTINGS if s.section == section}
