"""The server's prior: contention and start-up as the other recurring applications of the same
History Server show them, for an application without runs at other sizes of its own.

Contention and executor start-up belong to the cluster (shared machines, disks, network, the
resource manager) more than to one application. Each application whose history identifies them
(`calibrate.Overheads`) gives two terms: its relative contention c (work per input byte grows as
1 + c·slots) and its start-up per added executor. The prior is the median of each over those
applications. Its interval comes from how well it predicted those applications: each one's runs
predicted from its other runs at another size, corrected by the prior fitted without it (a pool
of the residuals of the latest refitted applications), split-conformal like the rest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkscope.advisor.whatif.calibrate import INTERVAL_LEVEL, Overheads, conformal_halfwidth

#: Applications whose residuals make the prior's interval (the latest refitted), and residuals
#: kept of each.
POOL_KEYS = 50
POOL_PER_KEY = 40
#: Base runs of one application its prior residuals are computed from (the latest).
MAX_BASES = 20


@dataclass(frozen=True)
class ClusterPrior:
    """Median contention and start-up per executor of a server's applications (see module)."""

    contention: float  # c: work per byte ∝ 1 + c·slots
    startup_per_executor_ms: float
    n_keys: int
    #: Relative half-width of its interval at `INTERVAL_LEVEL` (0: nothing measured yet).
    halfwidth: float = 0.0

    def task_scale(self, slots_to: float, slots_from: float) -> float:
        return (1.0 + self.contention * slots_to) / (1.0 + self.contention * slots_from)

    def startup_ms(self, executors: float, observed_ms: float, observed_executors: float) -> float:
        """The observed start-up moved by the per-executor start-up to ``executors``."""
        moved = observed_ms + self.startup_per_executor_ms * (executors - observed_executors)
        return max(0.0, moved)

    def to_dict(self) -> dict[str, Any]:
        return {
            "contention": self.contention,
            "startup_per_executor_ms": self.startup_per_executor_ms,
            "n_keys": self.n_keys,
            "halfwidth": self.halfwidth,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClusterPrior:
        return cls(
            contention=float(d["contention"]),
            startup_per_executor_ms=float(d["startup_per_executor_ms"]),
            n_keys=int(d["n_keys"]),
            halfwidth=float(d.get("halfwidth") or 0.0),
        )


def key_overheads_terms(overheads: Overheads) -> tuple[float | None, float | None]:
    """(relative contention c, start-up per executor in ms) of one application's fitted
    overheads; None where its history could not identify the line."""
    c = None
    if overheads.work is not None and overheads.work[0] > 0:
        c = overheads.work[1] / overheads.work[0]
    s = None if overheads.startup is None else overheads.startup[1]
    return c, s


def fit_cluster_prior(
    terms: Sequence[tuple[float | None, float | None]], halfwidth: float = 0.0
) -> ClusterPrior | None:
    """The server's prior from the (contention, start-up slope) of each application with a
    history at several sizes (`key_overheads_terms`); None when no application has one."""
    cs = sorted(c for c, _ in terms if c is not None and math.isfinite(c))
    ss = sorted(s for _, s in terms if s is not None and math.isfinite(s))
    if not cs:
        return None
    return ClusterPrior(
        contention=_median(cs),
        startup_per_executor_ms=_median(ss) if ss else 0.0,
        n_keys=len(cs),
        halfwidth=halfwidth,
    )


def _median(v: Sequence[float]) -> float:
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def update_pool(
    pool: Mapping[str, Sequence[float]], fresh: Mapping[str, Sequence[float]]
) -> dict[str, list[float]]:
    """The residual pool with the freshly refitted applications' residuals in place of their old
    ones, the latest `POOL_KEYS` applications kept, `POOL_PER_KEY` residuals each (evenly
    spaced through the application's residuals)."""
    out = {k: list(v) for k, v in pool.items() if k not in fresh}
    for k, v in fresh.items():
        if v:
            out[k] = _thin(list(v), POOL_PER_KEY)
    return dict(list(out.items())[-POOL_KEYS:])


def _thin(v: list[float], n: int) -> list[float]:
    if len(v) <= n:
        return v
    return [v[round(i * (len(v) - 1) / (n - 1))] for i in range(n)]


def pool_halfwidth(pool: Mapping[str, Sequence[float]], level: float = INTERVAL_LEVEL) -> float:
    """Conformal half-width of the pooled residuals (their largest |r| when too few)."""
    values = [r for v in pool.values() for r in v]
    q = conformal_halfwidth(values, level)
    if q is None:
        q = max((abs(r) for r in values), default=0.0)
    return q
