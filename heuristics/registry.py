"""Discovery of heuristics, and the registry that runs them.

A heuristic satisfies the contract of :mod:`heuristics.contract` (usually as a module, which
:func:`~heuristics.contract.from_module` checks and adapts). Built-ins are the modules of this
package that define ``evaluate``; third-party ones are named by the ``sparkscope.heuristics``
entry-point group.

The registry, not the heuristic, fills in the result's name and thresholds and applies the
severity rules: the pattern's severity capped by the finding's cost (:mod:`heuristics.costcap`,
for any heuristic whose outcome has an impact with numbers), and advice, settings and impact
only above NONE.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any

from heuristics.appdata import AppData
from heuristics.contract import (
    ContractError,
    Heuristic,
    ModuleHeuristic,
    as_heuristic,
    from_module,
)
from heuristics.costcap import (
    COST_CAP_DOCS,
    COST_CAPS_KEY,
    DEFAULT_COST_CAPS,
    CostCaps,
    cost_caps_from_mapping,
)
from heuristics.params import (
    HeuristicsConfigError,
    param_docs,
    params_from_mapping,
    params_to_dict,
    params_view,
)
from heuristics.result import HeuristicResult, Outcome, Severity, stored_form

#: Entry-point group under which other distributions register heuristics (a module or an
#: object satisfying :class:`Heuristic`).
ENTRY_POINT_GROUP = "sparkscope.heuristics"


@functools.cache
def builtin_heuristics() -> tuple[Heuristic[Any], ...]:
    """The built-in heuristics: the modules of :mod:`heuristics.builtin` (and of its folders)
    that define ``evaluate``, by name."""
    import heuristics.builtin as package

    found = []
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        if hasattr(module, "evaluate"):
            found.append(from_module(module))
    return tuple(sorted(found, key=lambda h: h.name))


def plugin_heuristics(group: str = ENTRY_POINT_GROUP) -> tuple[Heuristic[Any], ...]:
    """Heuristics registered by installed distributions under the entry-point group, by name.

    One that cannot be loaded or breaks the contract is a HeuristicsConfigError naming the entry point.
    """
    found = []
    for ep in metadata.entry_points(group=group):
        path = f"{group}:{ep.name}"
        try:
            found.append(as_heuristic(ep.load()))
        except ContractError as exc:
            raise HeuristicsConfigError(path, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any import failure of a plugin is reported
            raise HeuristicsConfigError(
                path, f"cannot load {ep.value}: {type(exc).__name__}: {exc}"
            ) from None
    return tuple(sorted(found, key=lambda h: h.name))


def available_heuristics() -> tuple[Heuristic[Any], ...]:
    """Built-in then third-party heuristics; a name used twice is a HeuristicsConfigError."""
    found = (*builtin_heuristics(), *plugin_heuristics())
    seen: set[str] = set()
    for h in found:
        if h.name in seen:
            raise HeuristicsConfigError(h.name, "two heuristics have this name (a plugin clashes)")
        seen.add(h.name)
    return found


@dataclass(frozen=True)
class Entry:
    """One configured heuristic: the heuristic, whether it runs, its params and its cost caps."""

    heuristic: Heuristic[Any]
    enabled: bool
    params: Any
    caps: CostCaps = DEFAULT_COST_CAPS

    @property
    def name(self) -> str:
        """The heuristic's config key."""
        return self.heuristic.name

    @property
    def title(self) -> str:
        """The heuristic's human title."""
        return self.heuristic.title

    @functools.cached_property
    def evaluate(self) -> Callable[[AppData, Any], Outcome]:
        """The heuristic's ``evaluate``: a module's own function, called without the adapter's
        method in between (every heuristic runs on every fetched application)."""
        h = self.heuristic
        return h.evaluate_fn if type(h) is ModuleHeuristic else h.evaluate


@dataclass(frozen=True)
class Registry:
    """The effective heuristic configuration; runs the enabled heuristics on an application."""

    entries: tuple[Entry, ...]

    @functools.cached_property
    def enabled(self) -> tuple[Entry, ...]:
        """Entries that run, in catalog order (listed once: scoring asks for every application)."""
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
        """The normalized config: every heuristic with `enabled`, all of its params and its cost
        caps (``build_registry`` of this mapping gives the same registry)."""
        return {
            e.name: {
                "enabled": e.enabled,
                **params_to_dict(e.params),
                COST_CAPS_KEY: e.caps.to_dict(),
            }
            for e in self.entries
        }

    @functools.cached_property
    def fingerprint(self) -> str:
        """Stable sha256 hex of the effective config and each heuristic's version."""
        versions = {e.name: e.heuristic.version for e in self.entries}
        return _sha256_json({"heuristics": self.effective_config(), "versions": versions})

    @functools.cached_property
    def digests(self) -> dict[str, str]:
        """Per heuristic, a short digest of its name, version, params and cost caps (not of
        whether it is enabled, which does not change its result).

        Heuristics are pure functions of (application, params): a result stored with the digest
        a heuristic has now is the result running it again would give. Bumping one heuristic's
        version changes its digest only.
        """
        return {
            e.name: _sha256_json(
                {
                    "name": e.name,
                    "version": e.heuristic.version,
                    **params_to_dict(e.params),
                    COST_CAPS_KEY: e.caps.to_dict(),
                }
            )[:16]
            for e in self.entries
        }

    def run_one(self, entry: Entry, app: AppData) -> HeuristicResult:
        """Run one heuristic and cap its severity by its cost; one that raises (or returns no
        Outcome) yields a NONE internal-error result."""
        thresholds = params_view(entry.params)
        try:
            outcome = _evaluate(entry, app)
            return outcome.to_result(entry.name, thresholds, entry.caps.allowed(outcome.impact))
        except Exception as exc:  # noqa: BLE001 - one broken heuristic must not hide the rest
            return _failed(entry, exc)

    def run_stored(self, entry: Entry, app: AppData) -> dict[str, object]:
        """``run_one(entry, app).to_dict(thresholds=False)``, the form results are stored in,
        built straight from the outcome: this runs for every heuristic on every fetched
        application, and the HeuristicResult in between would be thrown away."""
        try:
            outcome = _evaluate(entry, app)
            severity, pattern, cap, conf, stages = outcome.rate(entry.caps.allowed(outcome.impact))
        except Exception as exc:  # noqa: BLE001 - one broken heuristic must not hide the rest
            return _failed(entry, exc).to_dict(thresholds=False)
        # Outside the try, as to_dict is outside run_one's: a value or details table that cannot
        # be stored is an error of the caller's, not an internal-error result.
        return stored_form(
            entry.name,
            severity,
            pattern,
            cap,
            outcome.value,
            outcome.title,
            outcome.details,
            outcome.advice if severity else "",
            outcome.impact if severity else None,
            conf,
            stages,
        )

    def run(self, app: AppData) -> list[HeuristicResult]:
        """Run every enabled heuristic, in catalog order."""
        return [self.run_one(entry, app) for entry in self.enabled]

    def describe(self) -> list[dict[str, object]]:
        """Help-page data per heuristic: name, title, doc, version, inputs, enabled, the params in
        force and each param's doc; the cost caps in force are listed with the params (as
        ``cost_caps.wall_seconds`` and ``cost_caps.core_hours``) and on their own."""
        out = []
        for e in self.entries:
            caps = e.caps.to_dict()
            out.append(
                {
                    "name": e.name,
                    "title": e.heuristic.title,
                    "doc": e.heuristic.doc,
                    "version": e.heuristic.version,
                    "inputs": sorted(e.heuristic.inputs),
                    "enabled": e.enabled,
                    "params": {
                        **params_to_dict(e.params),
                        **{f"{COST_CAPS_KEY}.{k}": v for k, v in caps.items()},
                    },
                    "param_docs": {
                        **param_docs(e.heuristic.params_type),
                        **{f"{COST_CAPS_KEY}.{k}": doc for k, doc in COST_CAP_DOCS.items()},
                    },
                    COST_CAPS_KEY: caps,
                }
            )
        return out


def _evaluate(entry: Entry, app: AppData) -> Outcome:
    """The heuristic's outcome; a TypeError when it returns something else."""
    outcome = entry.evaluate(app, entry.params)
    if not isinstance(outcome, Outcome):
        raise TypeError(f"evaluate returned {type(outcome).__name__}, not Outcome")
    return outcome


def _failed(entry: Entry, exc: Exception) -> HeuristicResult:
    """The NONE result of a heuristic that raised."""
    title = f"internal error: {type(exc).__name__}: {exc}"
    return Outcome(severity=Severity.NONE, value=None, title=title).to_result(
        entry.name, params_view(entry.params)
    )


def _sha256_json(payload: Mapping[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_registry(
    config_mapping: Mapping[str, Any] | None = None,
    heuristics: Iterable[Heuristic[Any] | ModuleType] | None = None,
) -> Registry:
    """Build a Registry from the parsed heuristics config (overrides only: missing keys keep
    their defaults) over the given heuristics, by default :func:`available_heuristics`.

    The top-level ``cost_caps`` section changes the cost caps of every heuristic; a
    ``cost_caps`` key inside a heuristic's section changes some of its levels for that one.
    """
    overrides = config_mapping or {}
    if not isinstance(overrides, Mapping):
        raise HeuristicsConfigError("<root>", f"expected a mapping, got {type(overrides).__name__}")
    catalog = available_heuristics() if heuristics is None else tuple(map(as_heuristic, heuristics))
    by_name = {h.name: h for h in catalog}
    if COST_CAPS_KEY in by_name:
        raise HeuristicsConfigError(
            COST_CAPS_KEY, "a heuristic cannot take this name (it is a config key)"
        )
    for key in overrides:
        if key not in by_name and key != COST_CAPS_KEY:
            raise HeuristicsConfigError(
                str(key), f"unknown heuristic (known: {', '.join(by_name)})"
            )
    shared = cost_caps_from_mapping(DEFAULT_COST_CAPS, overrides.get(COST_CAPS_KEY), COST_CAPS_KEY)
    entries = []
    for heuristic in catalog:
        section = overrides.get(heuristic.name)
        if section is None:
            section = {}
        if not isinstance(section, Mapping):
            raise HeuristicsConfigError(
                heuristic.name, f"expected a mapping, got {type(section).__name__}"
            )
        section = dict(section)
        enabled = section.pop("enabled", True)
        if not isinstance(enabled, bool):
            raise HeuristicsConfigError(
                f"{heuristic.name}.enabled", f"expected true/false, got {enabled!r}"
            )
        caps = cost_caps_from_mapping(
            shared, section.pop(COST_CAPS_KEY, None), f"{heuristic.name}.{COST_CAPS_KEY}"
        )
        params = params_from_mapping(heuristic.params_type, section, heuristic.name)
        entries.append(Entry(heuristic=heuristic, enabled=enabled, params=params, caps=caps))
    return Registry(entries=tuple(entries))
