"""Sizing for a deadline: the cheapest size whose predicted upper bound meets it.

Pure: parsing of the user's parameters (a clear ValueError naming the problem) and the choice
among predicted points.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.whatif.limits import MAX_DEADLINE_MS

#: Most executor counts one request may ask for.
MAX_SIZES = 64
#: Largest executor count accepted.
MAX_EXECUTORS = 100_000

#: The largest integer every JSON client holds exactly (2^53 - 1): no answer goes beyond it.
MAX_JSON_INT = 2**53 - 1

# ASCII digits only: str.isdigit(), int() and float() also take '²', '①', '٣' or '1_000', which
# no URL means. At most 16 digits before the point: more cannot be a meaningful count or size.
_WHOLE = re.compile(r"[0-9]{1,16}")
_DECIMAL = re.compile(r"[0-9]{1,16}(?:\.[0-9]{1,16})?|\.[0-9]{1,16}")
_DURATION = re.compile(r"\s*([0-9]{1,16}(?:\.[0-9]{1,16})?)\s*(ms|s|m|h)\s*", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def _shown(text: str) -> str:
    return repr(text[:20] + ("…" if len(text) > 20 else ""))


def parse_deadline(text: str | None) -> int:
    """``90s``, ``30m``, ``2h``, ``45000ms`` -> milliseconds (at most :data:`MAX_JSON_INT`)."""
    if text is None or not text.strip():
        raise ValueError("a duration is required, e.g. 90s, 30m, 2h or 45000ms")
    m = _DURATION.fullmatch(text)
    if not m:
        raise ValueError(
            f"{_shown(text)} is not a duration: use digits 0-9 and a unit, e.g. 90s, 30m, 2h "
            "or 45000ms"
        )
    ms = float(m.group(1)) * _UNIT_MS[m.group(2).lower()]
    if ms <= 0:
        raise ValueError("the duration must be positive")
    if not ms <= MAX_DEADLINE_MS:  # also a number of digits no float holds (inf)
        raise ValueError(f"at most {MAX_DEADLINE_MS // 86_400_000} days")
    return int(ms)


def parse_counts(text: str | None, what: str = "executor count") -> list[int]:
    """``1,2,4,8`` -> [1, 2, 4, 8] (sorted, unique); each a positive integer, at most
    `MAX_SIZES` of them."""
    if text is None or not text.strip():
        raise ValueError(f"give at least one {what}, e.g. 1,2,4,8")
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > MAX_SIZES:
        raise ValueError(f"at most {MAX_SIZES} values, got {len(parts)}")
    out = set()
    for p in parts:
        if not _WHOLE.fullmatch(p):
            raise ValueError(f"{_shown(p)} is not a positive whole {what} (digits 0-9)")
        n = int(p)
        if n < 1 or n > MAX_EXECUTORS:
            raise ValueError(f"each {what} must be between 1 and {MAX_EXECUTORS}, got {n}")
        out.add(n)
    return sorted(out)


def parse_positive(text: str | None, what: str, integer: bool = False) -> float | None:
    """An optional positive number: digits 0-9 (and one decimal point unless ``integer``), at
    most :data:`MAX_JSON_INT`."""
    if text is None or text == "":
        return None
    if not (_WHOLE if integer else _DECIMAL).fullmatch(text.strip()):
        kind = "whole number" if integer else "number"
        raise ValueError(f"{_shown(text)} is not a positive {kind} (digits 0-9)")
    value = int(text) if integer else float(text)
    if not value > 0:
        raise ValueError(f"{what} must be positive, got {text[:20]}")
    if value > MAX_JSON_INT:
        raise ValueError(f"{what} may be at most {MAX_JSON_INT}")
    return value


def default_sizes(history_sizes: Sequence[int], observed: int) -> list[int]:
    """1 to twice the largest count seen."""
    top = max([observed, *history_sizes, 1]) * 2
    return list(range(1, min(top, MAX_SIZES) + 1))


#: Largest core count per executor considered by default (executors of more cores are rare
#: and the simulation's no-contention assumption weakens with them).
MAX_DEFAULT_CORES = 8


def default_cores(seen: Sequence[int]) -> list[int]:
    """The core counts the history has seen, and 1, 2, 4, ... up to the larger of
    `MAX_DEFAULT_CORES` and the largest seen."""
    top = max([MAX_DEFAULT_CORES, *seen])
    out = set(seen)
    c = 1
    while c <= top:
        out.add(c)
        c *= 2
    return sorted(out)


@dataclass(frozen=True)
class Prices:
    """Prices per core-hour and GB-hour; both None means core-hours are the cost."""

    core_hour: float | None = None
    gb_hour: float | None = None
    currency: str = "USD"

    @property
    def priced(self) -> bool:
        return self.core_hour is not None or self.gb_hour is not None


def costs(
    point_ms: float,
    slot_ms: float,
    cores: int,
    executor_gb: float,
    driver_cores: int,
    driver_gb: float,
    prices: Prices,
) -> tuple[float, float, float | None]:
    """(core-hours, GB-hours, money or None) of a predicted run, the driver included."""
    hour = 3_600_000.0
    executor_ms = slot_ms / max(1, cores)
    core_hours = (slot_ms + driver_cores * point_ms) / hour
    gb_hours = (executor_ms * executor_gb + driver_gb * point_ms) / hour
    money = None
    if prices.priced:
        money = core_hours * (prices.core_hour or 0.0) + gb_hours * (prices.gb_hour or 0.0)
    return core_hours, gb_hours, money


def recommend(points: Sequence[dict[str, Any]], deadline_ms: float) -> dict[str, Any] | None:
    """The cheapest point (money when priced, else core-hours) whose ``high_ms`` meets the
    deadline; ties go to the faster one. None when no point does."""
    ok = [p for p in points if p["high_ms"] <= deadline_ms]
    if not ok:
        return None

    def key(p: dict[str, Any]) -> tuple[float, float]:
        price = p["cost"] if p.get("cost") is not None else p["core_hours"]
        return round(price, 9), p["predicted_ms"]

    return min(ok, key=key)
