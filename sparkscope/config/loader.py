"""Load Sparkscope's configuration: one YAML file plus environment overrides, parsed strictly.

This is the only module that reads configuration files or ``os.environ``. Everything else receives the
frozen :class:`Config` it returns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparkscope import assets
from sparkscope.config.notifications.model import NotificationSettings
from sparkscope.config.notifications.section import parse_notifications
from sparkscope.config.parsing import ConfigError, parse_keys
from sparkscope.config.settings import (
    BY_NAME,
    ENV_CONFIG,
    ENV_HEURISTICS,
    ENV_SECRET_KEY,
    REQUIRED,
    SETTINGS,
    default,
    section_validators,
)
from sparkscope.redaction import split_credentials

#: The bundled config folder (in the installed package), for heuristics.yaml when none is configured.
BUNDLED_CONFIG_DIR = assets.folder("config")


@dataclass(frozen=True)
class ServerConfig:
    """One Spark History Server to fetch from.

    ``url`` never holds credentials: those given in the configured URL
    (``http://user:password@host``) are kept apart, in ``username`` and ``password``, and sent
    as HTTP basic auth."""

    name: str
    url: str
    verify_tls: bool = default("servers[].verify_tls")
    ca_bundle: str | None = default("servers[].ca_bundle")
    connect_timeout_s: float = default("servers[].connect_timeout_s")
    read_timeout_s: float = default("servers[].read_timeout_s")
    request_deadline_s: float = default("servers[].request_deadline_s")
    #: a folder or fsspec URL of Spark event logs read directly instead of a History Server
    #: (``url`` then names the same location)
    event_logs: str | None = default("servers[].event_logs")
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def from_url(cls, name: str, url: str, **settings: Any) -> ServerConfig:
        """A server whose URL may carry credentials: they move to username and password."""
        bare, username, password = split_credentials(url)
        return cls(name=name, url=bare, username=username, password=password, **settings)


@dataclass(frozen=True)
class FetcherConfig:
    """How the History Fetcher talks to the servers and what it stores."""

    threads: int = default("fetcher.threads")
    retries: int = default("fetcher.retries")
    backoff_factor_s: float = default("fetcher.backoff_factor_s")
    top_stages: int = default("fetcher.top_stages")
    tasks_per_stage: int = default("fetcher.tasks_per_stage")
    overlap_minutes: int = default("fetcher.overlap_minutes")
    max_app_failures: int = default("fetcher.max_app_failures")
    listing_page_size: int = default("fetcher.listing_page_size")
    redaction_regex: str = default("fetcher.redaction_regex")
    store_hadoop_properties: bool = default("fetcher.store_hadoop_properties")
    reconcile_days: int = default("fetcher.reconcile_days")
    reconcile_every_hours: int = default("fetcher.reconcile_every_hours")
    one_cpu: bool = default("fetcher.one_cpu")


@dataclass(frozen=True)
class WebConfig:
    """Settings of the web application."""

    secret_key: str | None = field(default=default("web.secret_key"), repr=False)
    host: str = default("web.host")
    port: int = default("web.port")
    page_size: int = default("web.page_size")


@dataclass(frozen=True)
class PriceConfig:
    """Optional prices that turn resource hours into money."""

    currency: str = default("prices.currency")
    core_hour: float | None = default("prices.core_hour")
    gb_hour: float | None = default("prices.gb_hour")


@dataclass(frozen=True)
class PredictionConfig:
    """Recurring-run predictions: how runs group into keys, and when a run is a regression."""

    key_patterns: tuple[str, ...] = default("predictions.key_patterns")
    min_history: int = default("predictions.min_history")
    margin: float = default("predictions.margin")
    level: float = default("predictions.level")
    class_aware: bool = default("predictions.class_aware")


@dataclass(frozen=True)
class Config:
    """The whole, validated configuration."""

    database_url: str = field(repr=False)  # may hold a password
    data_dir: str
    heuristics_path: str
    servers: tuple[ServerConfig, ...] = ()
    fetcher: FetcherConfig = field(default_factory=FetcherConfig)
    web: WebConfig = field(default_factory=WebConfig)
    prices: PriceConfig = field(default_factory=PriceConfig)
    predictions: PredictionConfig = field(default_factory=PredictionConfig)
    #: alerts and digests (None: the section is absent, nothing is sent)
    notifications: NotificationSettings | None = None
    source: str | None = None

    def server(self, name: str) -> ServerConfig:
        """Return the configured server called ``name``."""
        for s in self.servers:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.servers) or "none configured"
        raise ConfigError(self.source, "servers", f"no server named {name!r} ({known})")


# ---------------------------------------------------------------------------------------------- parsing

#: The sections of the file, each a mapping of keys (``servers`` is a list of them).
SECTIONS = ("fetcher", "web", "prices", "predictions")
_TOP_KEYS = {s.name for s in SETTINGS if not s.section} | {"servers", "notifications", *SECTIONS}


def _section(raw: Any, name: str, file: str | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(file, name, "expected a mapping")
    return parse_keys(raw, section_validators(name), name, file)


def _servers(raw: Any, file: str | None) -> tuple[ServerConfig, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(file, "servers", "expected a list of servers")
    validators = section_validators("servers")
    required = [s.key for s in SETTINGS if s.section == "servers" and s.default is REQUIRED]
    servers: list[ServerConfig] = []
    for i, item in enumerate(raw):
        path = f"servers[{i}]"
        if not isinstance(item, Mapping):
            raise ConfigError(file, path, "expected a mapping with name and url")
        values = parse_keys(item, validators, path, file)
        if values.get("event_logs") is not None:
            if "url" in values:
                raise ConfigError(
                    file,
                    f"{path}.url",
                    "a server reads a History Server url or event_logs, not both",
                )
            values["url"] = values["event_logs"]
        for key in required:
            if key not in values:
                raise ConfigError(file, f"{path}.{key}", "missing (or event_logs)")
        if any(s.name == values["name"] for s in servers):
            raise ConfigError(file, f"{path}.name", f"duplicate server name {values['name']!r}")
        servers.append(ServerConfig.from_url(**values))
    return tuple(servers)


def _top(raw: Mapping[str, Any], name: str, env: Mapping[str, str], file: str | None) -> Any:
    """A top-level setting: its environment variable wins over the file; both are validated."""
    setting = BY_NAME[name]
    where, value, source = name, raw.get(name), file
    if setting.env and env.get(setting.env):
        where, value, source = f"${setting.env}", env[setting.env], None
    if value is None:
        return setting.default
    try:
        return setting.validator(value)
    except ValueError as exc:
        raise ConfigError(source, where, str(exc)) from None


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
    data_path = Path(_top(raw, "data_dir", env, file)).expanduser()
    db_url = _top(raw, "database_url", env, file) or f"sqlite:///{data_path / 'sparkscope.db'}"
    heur = _top(raw, "heuristics_path", env, file)
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
        try:
            web["secret_key"] = BY_NAME["web.secret_key"].validator(env[ENV_SECRET_KEY])
        except ValueError as exc:
            raise ConfigError(None, f"${ENV_SECRET_KEY}", str(exc)) from None
    return Config(
        database_url=db_url,
        data_dir=str(data_path),
        heuristics_path=str(heur_path),
        servers=_servers(raw.get("servers"), file),
        fetcher=FetcherConfig(**_section(raw.get("fetcher"), "fetcher", file)),
        web=WebConfig(**web),
        prices=PriceConfig(**_section(raw.get("prices"), "prices", file)),
        predictions=PredictionConfig(**_section(raw.get("predictions"), "predictions", file)),
        notifications=parse_notifications(raw.get("notifications"), file=file),
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
