"""Load Sparkscope's configuration: one YAML file plus environment overrides, parsed strictly.

This is the only module that reads configuration files or ``os.environ``. Everything else receives the
frozen :class:`Config` it returns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

#: The repository's own config folder, used for the bundled heuristics.yaml when none is configured.
BUNDLED_CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"

ENV_CONFIG = "SPARKSCOPE_CONFIG"
ENV_DATABASE_URL = "SPARKSCOPE_DATABASE_URL"
ENV_DATA_DIR = "SPARKSCOPE_DATA_DIR"
ENV_SECRET_KEY = "SPARKSCOPE_SECRET_KEY"
ENV_HEURISTICS = "SPARKSCOPE_HEURISTICS"

# Spark's own default for spark.redaction.regex, widened to a few more words that mark secrets.
DEFAULT_REDACTION_REGEX = (
    r"(?i)secret|password|passwd|token|access[.]?key|private[.]?key|credential"
)


class ConfigError(Exception):
    """A configuration file is missing, unreadable or holds a wrong key or value."""

    def __init__(self, file: str | Path | None, key: str | None, message: str) -> None:
        self.file = str(file) if file is not None else None
        self.key = key
        self.message = message
        where = ": ".join(p for p in (self.file, key) if p)
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class Setting:
    """One configuration key: dotted name, default, and the help shown in the README."""

    name: str
    default: Any
    help: str


@dataclass(frozen=True)
class ServerConfig:
    """One Spark History Server to fetch from."""

    name: str
    url: str
    verify_tls: bool = True
    ca_bundle: str | None = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0


@dataclass(frozen=True)
class FetcherConfig:
    """How the History Fetcher talks to the servers and what it stores."""

    threads: int = 4
    retries: int = 4
    backoff_factor_s: float = 0.5
    top_stages: int = 5
    tasks_per_stage: int = 20
    overlap_minutes: int = 120
    max_app_failures: int = 5
    listing_page_size: int = 500
    redaction_regex: str = DEFAULT_REDACTION_REGEX
    store_hadoop_properties: bool = False


@dataclass(frozen=True)
class WebConfig:
    """Settings of the web application."""

    secret_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    page_size: int = 50


@dataclass(frozen=True)
class PriceConfig:
    """Optional prices that turn resource hours into money."""

    currency: str = "USD"
    core_hour: float | None = None
    gb_hour: float | None = None


@dataclass(frozen=True)
class PredictionConfig:
    """Recurring-run predictions: how runs group into keys, and when a run is a regression."""

    key_patterns: tuple[str, ...] = ()
    min_history: int = 5
    margin: float = 0.1
    level: float = 0.8
    class_aware: bool = True


@dataclass(frozen=True)
class Config:
    """The whole, validated configuration."""

    database_url: str
    data_dir: str
    heuristics_path: str
    servers: tuple[ServerConfig, ...] = ()
    fetcher: FetcherConfig = field(default_factory=FetcherConfig)
    web: WebConfig = field(default_factory=WebConfig)
    prices: PriceConfig = field(default_factory=PriceConfig)
    predictions: PredictionConfig = field(default_factory=PredictionConfig)
    source: str | None = None

    def server(self, name: str) -> ServerConfig:
        """Return the configured server called ``name``."""
        for s in self.servers:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.servers) or "none configured"
        raise ConfigError(self.source, "servers", f"no server named {name!r} ({known})")


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
    Setting("servers[].verify_tls", True, "Verify the server's TLS certificate."),
    Setting("servers[].ca_bundle", None, "Path to a CA bundle used to verify TLS."),
    Setting("servers[].connect_timeout_s", 5.0, "Seconds to wait for a TCP connection."),
    Setting(
        "servers[].read_timeout_s",
        60.0,
        "Seconds to wait for a response (replaying a big app is slow).",
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


# ---------------------------------------------------------------------------------------------- parsing


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {value!r}")


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _pos_int(value: Any) -> int:
    n = _int(value)
    if n < 1:
        raise ValueError(f"expected an integer >= 1, got {value!r}")
    return n


def _nonneg_int(value: Any) -> int:
    n = _int(value)
    if n < 0:
        raise ValueError(f"expected an integer >= 0, got {value!r}")
    return n


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if value < 0:
        raise ValueError(f"expected a number >= 0, got {value!r}")
    return float(value)


def _opt_float(value: Any) -> float | None:
    return None if value is None else _float(value)


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _regex(value: Any) -> str:
    text = _str(value)
    try:
        re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return text


def _level(value: float) -> float:
    if not 0.5 <= value <= 0.99:
        raise ValueError(f"expected a level between 0.5 and 0.99, got {value}")
    return value


def _server_url(value: Any) -> str:
    text = _str(value).rstrip("/")
    scheme = urlsplit(text).scheme
    if scheme not in ("http", "https", "file", ""):
        raise ValueError(f"expected an http(s):// or file:// URL or a folder, got {value!r}")
    return text


_SECTIONS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "fetcher": {
        "threads": _pos_int,
        "retries": _nonneg_int,
        "backoff_factor_s": _float,
        "top_stages": _nonneg_int,
        "tasks_per_stage": _nonneg_int,
        "overlap_minutes": _nonneg_int,
        "max_app_failures": _pos_int,
        "listing_page_size": _pos_int,
        "redaction_regex": _regex,
        "store_hadoop_properties": _bool,
    },
    "web": {"secret_key": _opt_str, "host": _str, "port": _pos_int, "page_size": _pos_int},
    "prices": {"currency": _str, "core_hour": _opt_float, "gb_hour": _opt_float},
    "predictions": {
        "key_patterns": lambda v: tuple(_regex(x) for x in (v or [])),
        "min_history": _pos_int,
        "margin": _float,
        "level": lambda v: _level(_float(v)),
        "class_aware": _bool,
    },
}
_SERVER_KEYS: dict[str, Callable[[Any], Any]] = {
    "name": _str,
    "url": _server_url,
    "verify_tls": _bool,
    "ca_bundle": _opt_str,
    "connect_timeout_s": _float,
    "read_timeout_s": _float,
}
_TOP_KEYS = {"database_url", "data_dir", "heuristics_path", "servers", *_SECTIONS}


def _section(raw: Any, name: str, file: str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(file, name, "expected a mapping")
    return _parse_keys(raw, _SECTIONS[name], name, file)


def _parse_keys(
    raw: Mapping[str, Any], parsers: Mapping[str, Any], path: str, file: str | None
) -> dict[str, Any]:
    """Each key of ``raw`` through its parser; an unknown key or bad value names ``path.key``."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        parser = parsers.get(key)
        if parser is None:
            raise ConfigError(file, f"{path}.{key}", f"unknown key (known: {', '.join(parsers)})")
        try:
            out[key] = parser(value)
        except ValueError as exc:
            raise ConfigError(file, f"{path}.{key}", str(exc)) from None
    return out


def _servers(raw: Any, file: str | None) -> tuple[ServerConfig, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(file, "servers", "expected a list of servers")
    servers: list[ServerConfig] = []
    for i, item in enumerate(raw):
        path = f"servers[{i}]"
        if not isinstance(item, Mapping):
            raise ConfigError(file, path, "expected a mapping with name and url")
        values = _parse_keys(item, _SERVER_KEYS, path, file)
        for required in ("name", "url"):
            if required not in values:
                raise ConfigError(file, f"{path}.{required}", "missing")
        if any(s.name == values["name"] for s in servers):
            raise ConfigError(file, f"{path}.name", f"duplicate server name {values['name']!r}")
        servers.append(ServerConfig(**values))
    return tuple(servers)


def default_config_path(env: Mapping[str, str]) -> tuple[Path | None, bool]:
    """Return the config file to read and whether it must exist (it must when named explicitly)."""
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser(), True
    local = Path("config/sparkscope.yaml")
    return (local, False) if local.is_file() else (None, False)


def read_yaml(path: Path) -> Any:
    """Read a YAML file, turning every failure into a :class:`ConfigError` naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, None, "file not found") from None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {exc.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(path, where, f"invalid YAML: {problem}") from None


def parse_config(
    raw: Any,
    *,
    file: str | None = None,
    env: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> Config:
    """Validate a parsed YAML mapping (or ``None``) and apply environment overrides."""
    env = {} if env is None else env
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(file, None, "expected a mapping at the top level")
    for key in raw:
        if key not in _TOP_KEYS:
            raise ConfigError(
                file, str(key), f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})"
            )
    try:
        data_dir = _str(env.get(ENV_DATA_DIR) or raw.get("data_dir") or "~/.local/share/sparkscope")
        db_url = env.get(ENV_DATABASE_URL) or _opt_str(raw.get("database_url"))
        heur = env.get(ENV_HEURISTICS) or _opt_str(raw.get("heuristics_path"))
    except ValueError as exc:
        raise ConfigError(file, "database_url/data_dir/heuristics_path", str(exc)) from None
    data_path = Path(data_dir).expanduser()
    if not db_url:
        db_url = f"sqlite:///{data_path / 'sparkscope.db'}"
    if heur:
        heur_path = Path(heur).expanduser()
        if not heur_path.is_absolute() and base_dir is not None and not env.get(ENV_HEURISTICS):
            heur_path = base_dir / heur_path
    elif base_dir is not None and (base_dir / "heuristics.yaml").is_file():
        heur_path = base_dir / "heuristics.yaml"
    else:
        heur_path = BUNDLED_CONFIG_DIR / "heuristics.yaml"
    web = _section(raw.get("web"), "web", file)
    if env.get(ENV_SECRET_KEY):
        web["secret_key"] = env[ENV_SECRET_KEY]
    return Config(
        database_url=db_url,
        data_dir=str(data_path),
        heuristics_path=str(heur_path),
        servers=_servers(raw.get("servers"), file),
        fetcher=FetcherConfig(**_section(raw.get("fetcher"), "fetcher", file)),
        web=WebConfig(**web),
        prices=PriceConfig(**_section(raw.get("prices"), "prices", file)),
        predictions=PredictionConfig(**_section(raw.get("predictions"), "predictions", file)),
        source=file,
    )


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Load the configuration from ``path`` (or ``$SPARKSCOPE_CONFIG``, or ``config/sparkscope.yaml``)."""
    env = dict(os.environ) if env is None else env
    if path is not None:
        file: Path | None = Path(path).expanduser()
        required = True
    else:
        file, required = default_config_path(env)
    if file is None:
        return parse_config(None, env=env)
    if not file.is_file():
        if required:
            raise ConfigError(file, None, "file not found")
        return parse_config(None, env=env)
    return parse_config(read_yaml(file), file=str(file), env=env, base_dir=file.parent)


def load_heuristics_mapping(path: str | Path) -> dict[str, Any]:
    """Read the heuristics YAML as a mapping (validated by ``heuristics.build_registry``)."""
    p = Path(path)
    raw = read_yaml(p)
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(p, None, "expected a mapping of heuristic name to settings")
    return dict(raw)
