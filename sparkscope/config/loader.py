"""Load Sparkscope's configuration: one YAML file plus environment overrides, parsed strictly.

This is the only module that reads configuration files or ``os.environ``. Everything else receives the
frozen :class:`Config` it returns.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparkscope import assets
from sparkscope.config.parsing import (
    ConfigError,
    boolean,
    event_log_location,
    non_negative_int,
    non_negative_number,
    optional_number,
    optional_string,
    parse_keys,
    positive_int,
    regex,
    server_url,
    string,
)

#: The bundled config folder (in the installed package), for heuristics.yaml when none is configured.
BUNDLED_CONFIG_DIR = assets.folder("config")

ENV_CONFIG = "SPARKSCOPE_CONFIG"
ENV_DATABASE_URL = "SPARKSCOPE_DATABASE_URL"
ENV_DATA_DIR = "SPARKSCOPE_DATA_DIR"
ENV_SECRET_KEY = "SPARKSCOPE_SECRET_KEY"
ENV_HEURISTICS = "SPARKSCOPE_HEURISTICS"

# Spark's own default for spark.redaction.regex, widened to a few more words that mark secrets.
DEFAULT_REDACTION_REGEX = (
    r"(?i)secret|password|passwd|token|access[.]?key|private[.]?key|credential"
)


@dataclass(frozen=True)
class ServerConfig:
    """One Spark History Server to fetch from."""

    name: str
    url: str
    verify_tls: bool = True
    ca_bundle: str | None = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    request_deadline_s: float = 300.0
    #: a folder or fsspec URL of Spark event logs read directly instead of a History Server
    #: (``url`` then names the same location)
    event_logs: str | None = None


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
    reconcile_days: int = 7
    reconcile_every_hours: int = 24


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


# ---------------------------------------------------------------------------------------------- parsing


def _level(value: Any) -> float:
    level = non_negative_number(value)
    if not 0.5 <= level <= 0.99:
        raise ValueError(f"expected a level between 0.5 and 0.99, got {value}")
    return level


_SECTIONS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "fetcher": {
        "threads": positive_int,
        "retries": non_negative_int,
        "backoff_factor_s": non_negative_number,
        "top_stages": non_negative_int,
        "tasks_per_stage": non_negative_int,
        "overlap_minutes": non_negative_int,
        "max_app_failures": positive_int,
        "listing_page_size": positive_int,
        "redaction_regex": regex,
        "store_hadoop_properties": boolean,
        "reconcile_days": positive_int,
        "reconcile_every_hours": non_negative_int,
    },
    "web": {
        "secret_key": optional_string,
        "host": string,
        "port": positive_int,
        "page_size": positive_int,
    },
    "prices": {"currency": string, "core_hour": optional_number, "gb_hour": optional_number},
    "predictions": {
        "key_patterns": lambda v: tuple(regex(x) for x in (v or [])),
        "min_history": positive_int,
        "margin": non_negative_number,
        "level": _level,
        "class_aware": boolean,
    },
}
_SERVER_KEYS: dict[str, Callable[[Any], Any]] = {
    "name": string,
    "url": server_url,
    "verify_tls": boolean,
    "ca_bundle": optional_string,
    "connect_timeout_s": non_negative_number,
    "read_timeout_s": non_negative_number,
    "request_deadline_s": non_negative_number,
    "event_logs": event_log_location,
}
_TOP_KEYS = {"database_url", "data_dir", "heuristics_path", "servers", *_SECTIONS}


def _section(raw: Any, name: str, file: str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(file, name, "expected a mapping")
    return parse_keys(raw, _SECTIONS[name], name, file)


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
        values = parse_keys(item, _SERVER_KEYS, path, file)
        if "event_logs" in values:
            if "url" in values:
                raise ConfigError(
                    file,
                    f"{path}.url",
                    "a server reads a History Server url or event_logs, not both",
                )
            values["url"] = values["event_logs"]
        for required in ("name", "url"):
            if required not in values:
                raise ConfigError(file, f"{path}.{required}", "missing (or event_logs)")
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
    except UnicodeDecodeError as exc:
        raise ConfigError(path, None, f"not valid UTF-8 text (byte {exc.start})") from None
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
        data_dir = string(
            env.get(ENV_DATA_DIR) or raw.get("data_dir") or "~/.local/share/sparkscope"
        )
        db_url = env.get(ENV_DATABASE_URL) or optional_string(raw.get("database_url"))
        heur = env.get(ENV_HEURISTICS) or optional_string(raw.get("heuristics_path"))
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
