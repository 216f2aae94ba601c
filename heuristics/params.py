"""Heuristic params: their defaults and docs (in each module's Params dataclass), and parsing
of the overrides in config/heuristics.yaml."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from heuristics.thresholds import ASCENDING, LEVELS, Thresholds

P = TypeVar("P")
T = TypeVar("T")

#: Integers the database and JSON documents hold (signed 64-bit).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class HeuristicsConfigError(ValueError):
    """A bad heuristics config; `path` is the dotted key path, e.g. stage_skew.ratio.moderate."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def params_to_dict(params: object) -> dict[str, object]:
    """JSON-able dict of a Params dataclass (thresholds become dicts with their direction)."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(params):  # type: ignore[arg-type]
        value = getattr(params, f.name)
        out[f.name] = value.to_dict() if isinstance(value, Thresholds) else value
    return out


_VIEWS: dict[int, tuple[object, Mapping[str, object]]] = {}


def params_view(params: object) -> Mapping[str, object]:
    """Read-only :func:`params_to_dict` of a Params object, computed once per params object.

    Keyed by identity (hashing a frozen params dataclass costs more than the lookup saves); the
    entry holds the object, so its id cannot be reused while cached.
    """
    hit = _VIEWS.get(id(params))
    if hit is not None and hit[0] is params:
        return hit[1]
    if len(_VIEWS) > 4096:  # configs reloaded many times in one process
        _VIEWS.clear()
    view = MappingProxyType(params_to_dict(params))
    _VIEWS[id(params)] = (params, view)
    return view


def params_from_mapping(params_cls: type[P], mapping: Mapping[str, Any] | None, path: str) -> P:
    """Build `params_cls` from a config mapping; missing keys keep defaults, bad ones raise."""
    default = params_cls()
    if mapping is None:
        return default
    if not isinstance(mapping, Mapping):
        raise HeuristicsConfigError(path, f"expected a mapping, got {type(mapping).__name__}")
    fields = {f.name: f for f in dataclasses.fields(default)}  # type: ignore[arg-type]
    changes: dict[str, object] = {}
    for key, raw in mapping.items():
        key_path = f"{path}.{key}"
        if key not in fields:
            raise HeuristicsConfigError(
                key_path, f"unknown parameter (known: {', '.join(sorted(fields))})"
            )
        value = _coerce(getattr(default, key), raw, key_path)
        _check_bounds(value, fields[key].metadata, key_path)
        changes[key] = value
    return dataclasses.replace(default, **changes)  # type: ignore[type-var]


def param(
    default: T,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> T:
    """A Params field with its default and a one-line doc (unit, direction) for the help page.

    A configured number (or each level of configured thresholds) is always >= 0; ``minimum`` and
    ``maximum`` narrow that (a throughput of 0, a weight above 1)."""
    return dataclasses.field(  # type: ignore[no-any-return]
        default=default, metadata={"doc": doc, "minimum": minimum, "maximum": maximum}
    )


def param_docs(params_cls: type) -> dict[str, str]:
    """The doc of each field of a Params dataclass ("" where none is given)."""
    return {f.name: str(f.metadata.get("doc", "")) for f in dataclasses.fields(params_cls)}


def _number(raw: object, path: str, minimum: float | None = 0.0) -> float | int:
    """A finite number a JSON document and the database can hold, at least ``minimum`` (every
    parameter of the built-ins is a count, size, time or ratio), or a HeuristicsConfigError."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise HeuristicsConfigError(path, f"expected a number, got {raw!r}")
    if isinstance(raw, int):
        if not INT_MIN <= raw <= INT_MAX:
            raise HeuristicsConfigError(path, f"out of range: {raw} does not fit in 64 bits")
    elif not math.isfinite(raw):
        raise HeuristicsConfigError(path, f"expected a finite number, got {raw!r}")
    if minimum is not None and raw < minimum:
        raise HeuristicsConfigError(path, f"must be ≥ {minimum:g}, got {raw!r}")
    return raw


def _coerce(default: object, raw: object, path: str) -> object:
    if isinstance(default, Thresholds):
        return coerce_thresholds(default, raw, path)
    if isinstance(default, bool):
        if not isinstance(raw, bool):
            raise HeuristicsConfigError(path, f"expected true/false, got {raw!r}")
        return raw
    if isinstance(default, int):
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise HeuristicsConfigError(path, f"expected an integer, got {raw!r}")
        return _number(raw, path)
    if isinstance(default, float):
        return float(_number(raw, path))
    if isinstance(default, str):
        if not isinstance(raw, str):
            raise HeuristicsConfigError(path, f"expected a string, got {raw!r}")
        return raw
    raise HeuristicsConfigError(
        path, f"parameter of type {type(default).__name__} cannot be configured"
    )


def _bounds(metadata: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The bounds ``param()`` gave a field (every number is also >= 0, see ``_number``)."""
    return metadata.get("minimum"), metadata.get("maximum")


def _shown(number: float) -> str:
    """A bound or value as an error shows it: 1000000, not 1e+06."""
    if float(number).is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(float(number))


def _check_bounds(value: object, metadata: Mapping[str, Any], path: str) -> None:
    low, high = _bounds(metadata)
    if isinstance(value, Thresholds):
        items = list(zip(LEVELS, value.values(), strict=True))
        where = [f"{path}.{level}" for level in LEVELS]
    elif isinstance(value, int | float) and not isinstance(value, bool):
        items, where = [("", value)], [path]
    else:
        return
    for (_level, number), key_path in zip(items, where, strict=True):
        if low is not None and number < low:
            raise HeuristicsConfigError(key_path, f"must be ≥ {_shown(low)}, got {_shown(number)}")
        if high is not None and number > high:
            raise HeuristicsConfigError(key_path, f"must be ≤ {_shown(high)}, got {_shown(number)}")


def coerce_thresholds(
    default: Thresholds, raw: object, path: str, minimum: float | None = 0.0
) -> Thresholds:
    """``default`` with the levels given in ``raw`` changed, each a finite number ≥ ``minimum``,
    in order for the (fixed) direction; or a HeuristicsConfigError naming the level."""
    if not isinstance(raw, Mapping):
        raise HeuristicsConfigError(path, f"expected a mapping of {', '.join(LEVELS)}, got {raw!r}")
    values = dict(zip(LEVELS, default.values(), strict=True))
    for level, value in raw.items():
        if level == "direction":
            # The direction is part of what the heuristic measures, so config may only restate it.
            if value != default.direction:
                raise HeuristicsConfigError(
                    f"{path}.direction", f"is fixed to {default.direction!r}"
                )
            continue
        if level not in values:
            raise HeuristicsConfigError(
                f"{path}.{level}", f"unknown level (known: {', '.join(LEVELS)})"
            )
        values[level] = float(_number(value, f"{path}.{level}", minimum))
    candidate = Thresholds.__new__(Thresholds)
    object.__setattr__(candidate, "direction", default.direction)
    for level in LEVELS:
        object.__setattr__(candidate, level, values[level])
    bad = candidate.first_out_of_order()
    if bad is not None:
        word = "at least" if default.direction == ASCENDING else "at most"
        raise HeuristicsConfigError(
            f"{path}.{bad}",
            f"thresholds out of order: {bad} must be {word} the previous level "
            f"({default.direction}), got {values}",
        )
    return Thresholds(**values, direction=default.direction)
