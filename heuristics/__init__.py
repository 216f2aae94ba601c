"""Sparkscope's diagnosis engine: pure heuristics over typed application data.

Build a registry from the parsed `config/heuristics.yaml` mapping with `build_registry(config)`,
then call `registry.run(app)`. Importing this package has no side effects.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from heuristics import (
    config,
    data_skew_groups,
    disk_spill,
    driver_gc,
    executor_gc,
    executor_load_imbalance,
    executor_memory,
    job_failures,
    shuffle_fetch_wait,
    stage_failures,
    stage_skew,
    task_failures,
    task_granularity,
)
from heuristics.base import (
    AppData,
    ConfigError,
    HeuristicResult,
    Severity,
    app_severity,
    params_from_mapping,
    params_to_dict,
)

__all__ = [
    "BUILTIN_MODULES",
    "ConfigError",
    "Entry",
    "Registry",
    "app_severity",
    "build_registry",
]

# Display order of the catalog.
BUILTIN_MODULES: tuple[ModuleType, ...] = (
    stage_skew,
    data_skew_groups,
    disk_spill,
    executor_gc,
    driver_gc,
    job_failures,
    stage_failures,
    task_failures,
    executor_load_imbalance,
    executor_memory,
    task_granularity,
    shuffle_fetch_wait,
    config,
)

# Bump when a heuristic's logic changes, so cached results keyed by the fingerprint are redone.
ENGINE_VERSION = 3  # 3: whole failure messages, clearer NONE titles (issue 12)


@dataclass(frozen=True)
class Entry:
    """One configured heuristic: its module, whether it runs, and its params."""

    module: ModuleType
    enabled: bool
    params: Any

    @property
    def name(self) -> str:
        """The heuristic's config key."""
        return str(self.module.NAME)


@dataclass(frozen=True)
class Registry:
    """The effective heuristic configuration; runs the enabled heuristics on an application."""

    entries: tuple[Entry, ...]

    @property
    def enabled(self) -> tuple[Entry, ...]:
        """Entries that run, in catalog order."""
        return tuple(e for e in self.entries if e.enabled)

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the enabled heuristics."""
        return tuple(e.name for e in self.enabled)

    def params(self, name: str) -> Any:
        """The effective params of one heuristic (enabled or not)."""
        for entry in self.entries:
            if entry.name == name:
                return entry.params
        raise KeyError(name)

    def effective_config(self) -> dict[str, dict[str, object]]:
        """The normalized config: every heuristic with `enabled` and all of its params."""
        return {e.name: {"enabled": e.enabled, **params_to_dict(e.params)} for e in self.entries}

    @functools.cached_property
    def fingerprint(self) -> str:
        """Stable sha256 hex of the effective config and the engine version."""
        return _sha256_json(
            {"engine_version": ENGINE_VERSION, "heuristics": self.effective_config()}
        )

    @functools.cached_property
    def digests(self) -> dict[str, str]:
        """Per heuristic, a short digest of its params and the engine version (not of whether it
        is enabled, which does not change its result).

        Heuristics are pure functions of (application, params): a result stored with the digest
        a heuristic has now is the result running it again would give.
        """
        return {
            e.name: _sha256_json(
                {"engine_version": ENGINE_VERSION, "name": e.name, **params_to_dict(e.params)}
            )[:16]
            for e in self.entries
        }

    def run_one(self, entry: Entry, app: AppData) -> HeuristicResult:
        """Run one heuristic; one that raises yields a NONE internal-error result."""
        try:
            return entry.module.evaluate(app, entry.params)  # type: ignore[no-any-return]
        except Exception as exc:  # noqa: BLE001 - one broken heuristic must not hide the rest
            return HeuristicResult(
                name=entry.name,
                severity=Severity.NONE,
                value=None,
                title=f"internal error: {type(exc).__name__}: {exc}",
                thresholds=params_to_dict(entry.params),
                details=None,
                advice="",
                impact=None,
            )

    def run(self, app: AppData) -> list[HeuristicResult]:
        """Run every enabled heuristic, in catalog order."""
        return [self.run_one(entry, app) for entry in self.enabled]

    def describe(self) -> list[dict[str, object]]:
        """Help-page data per heuristic: name, title, doc, enabled and current params."""
        return [
            {
                "name": e.name,
                "title": e.module.TITLE,
                "doc": (e.module.__doc__ or "").strip(),
                "enabled": e.enabled,
                "params": params_to_dict(e.params),
            }
            for e in self.entries
        ]


def _sha256_json(payload: Mapping[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_registry(
    config_mapping: Mapping[str, Any] | None = None,
    modules: tuple[ModuleType, ...] = BUILTIN_MODULES,
) -> Registry:
    """Build a Registry from the parsed heuristics config; missing keys keep their defaults."""
    cfg = config_mapping or {}
    if not isinstance(cfg, Mapping):
        raise ConfigError("<root>", f"expected a mapping, got {type(cfg).__name__}")
    by_name = {m.NAME: m for m in modules}
    for key in cfg:
        if key not in by_name:
            raise ConfigError(str(key), f"unknown heuristic (known: {', '.join(by_name)})")
    entries = []
    for module in modules:
        section = cfg.get(module.NAME)
        if section is None:
            section = {}
        if not isinstance(section, Mapping):
            raise ConfigError(module.NAME, f"expected a mapping, got {type(section).__name__}")
        section = dict(section)
        enabled = section.pop("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(f"{module.NAME}.enabled", f"expected true/false, got {enabled!r}")
        params = params_from_mapping(module.Params, section, module.NAME)
        entries.append(Entry(module=module, enabled=enabled, params=params))
    return Registry(entries=tuple(entries))
