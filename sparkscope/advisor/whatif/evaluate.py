"""Accuracy of the what-if and of sizing on recorded runs (the figures docs/dev/models.md quotes).

Input: runs as `sparkscope.whatif.calibration.history_runs` gives them (size, input, duration, work,
start-up, plan), for one or more application names. Every figure is out of sample: the run
being predicted is never in what the prediction was fitted on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sparkscope.advisor.whatif.calibrate import fit_overheads
from sparkscope.advisor.whatif.combine import (
    Calibration,
    fit_calibration,
    nearest,
    predict,
    prior_residuals,
)
from sparkscope.advisor.whatif.prior import (
    POOL_KEYS,
    fit_cluster_prior,
    key_overheads_terms,
    pool_halfwidth,
    update_pool,
)


@dataclass(frozen=True)
class Errors:
    """Absolute percentage errors."""

    values: tuple[float, ...]
    #: Share of the actual runs inside their predicted interval (None: no interval measured).
    coverage: float | None = None

    @property
    def median(self) -> float:
        return _quantile(self.values, 0.5)

    @property
    def p90(self) -> float:
        return _quantile(self.values, 0.9)

    def __str__(self) -> str:
        text = f"median {self.median:.1%}, P90 {self.p90:.1%} over {len(self.values)} predictions"
        if self.coverage is not None:
            text += f", {self.coverage:.0%} inside their interval"
        return text


def _quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _ape(predicted: float, actual: float) -> float:
    return abs(predicted - actual) / actual


def _by_name(runs: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        groups[r["name"]].append(r)
    return groups


#: How a single-run what-if is corrected for what the simulation assumes away (contention,
#: start-up): not at all, by the other applications of the server (`ClusterPrior`, what an
#: application without history of its own gets), or by the application's own other runs.
CORRECTIONS = ("none", "cluster", "history")


def single_run(
    runs: Sequence[dict[str, Any]],
    correction: str = "history",
    prior_terms: Mapping[Any, tuple[float | None, float | None]] | None = None,
) -> Errors:
    """From each run predict every other run of the same name and input, the simulation
    corrected as `CORRECTIONS` says. ``cluster`` uses the prior of the *other* names only (their
    `key_overheads_terms`: ``prior_terms`` by name, e.g. from the stored models, else fitted on
    ``runs``; names that are (server, key) pairs take only their own server's) and ``history``
    the name's other runs but never the one predicted: all out of sample."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}")
    groups = _by_name(runs)
    terms = dict(prior_terms or {})
    if prior_terms is None and correction == "cluster":
        terms = {name: key_overheads_terms(fit_overheads(g)) for name, g in groups.items()}
    errors = []
    inside = 0
    cache: dict[Any, tuple[float, ...]] = {}
    for name, group in groups.items():
        prior = None
        if correction == "cluster":
            peers = [n for n in terms if n != name and _same_server(n, name)]
            prior = fit_cluster_prior([terms[n] for n in peers])
            if prior is not None:
                pool = _prior_pool(groups, terms, name, [n for n in peers if n in groups], cache)
                prior = replace(prior, halfwidth=pool_halfwidth(pool))
        for target in group:
            others = [r for r in group if r is not target]
            if correction == "history":
                cal = Calibration(overheads=fit_overheads(others))
            else:
                cal = Calibration(prior=prior)
            for base in others:
                if base["input_bytes"] != target["input_bytes"]:
                    continue
                p = predict(base["plan"], cal, target["executors"], target["cores"])
                errors.append(_ape(p.predicted_ms, target["duration_ms"]))
                inside += p.low_ms <= target["duration_ms"] <= p.high_ms
    coverage = inside / len(errors) if correction == "cluster" and errors else None
    return Errors(tuple(errors), coverage)


#: Up to this many other applications, the prior's interval for one application is measured
#: exactly as the server would have it if that application had no history (each other one's
#: residuals from a prior fitted without both); beyond, each one's residuals come from a prior
#: fitted without it alone (computed once), as the server's stored pool holds them.
EXACT_POOL = 5


def _prior_pool(
    groups: Mapping[Any, list[dict[str, Any]]],
    terms: Mapping[Any, tuple[float | None, float | None]],
    name: Any,
    peers: list[Any],
    cache: dict[Any, tuple[float, ...]],
) -> dict[str, list[float]]:
    """The residual pool behind the prior's interval when ``name`` is predicted."""
    fresh: dict[str, tuple[float, ...]] = {}
    for peer in peers[-POOL_KEYS:]:
        if terms[peer][0] is None:
            continue
        left_out = (name, peer) if len(peers) <= EXACT_POOL else (peer,)
        key = (peer, left_out)
        if key not in cache:
            prior = fit_cluster_prior(
                [t for n, t in terms.items() if n not in left_out and _same_server(n, peer)]
            )
            cache[key] = () if prior is None else prior_residuals(groups[peer], prior)
        fresh[str(peer)] = cache[key]
    return update_pool({}, fresh)


def _same_server(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return bool(a[0] == b[0])
    return True


def leave_one_out(runs: Sequence[dict[str, Any]]) -> tuple[Errors, float]:
    """History-calibrated: each run predicted from a model fitted on the other runs of its
    name (every size and input), simulated from the nearest of them. Also returns the share of
    runs inside their predicted interval."""
    errors = []
    inside = 0
    for group in _by_name(runs).values():
        for target in group:
            others = [r for r in group if r is not target]
            if not others:
                continue
            cal = fit_calibration(others)
            p = _predict_for(
                others, cal, target["executors"], target["cores"], target["input_bytes"]
            )
            errors.append(_ape(p.predicted_ms, target["duration_ms"]))
            inside += p.low_ms <= target["duration_ms"] <= p.high_ms
    return Errors(tuple(errors)), inside / max(1, len(errors))


def _predict_for(
    runs: Sequence[dict[str, Any]], cal: Calibration, executors: int, cores: int, input_bytes: int
) -> Any:
    base = runs[nearest(runs, executors * cores, input_bytes)]
    return predict(
        base["plan"], cal, executors, cores, input_bytes or None, base["input_bytes"] or None
    )


def sizing(runs: Sequence[dict[str, Any]], deadlines_per_input: int = 10) -> dict[str, float]:
    """For deadlines spread between the fastest and slowest real run of each name and input,
    recommend the cheapest size (core-hours) whose upper bound meets the deadline, with the
    model fitted leaving that input's run at the recommended size out (so the run that judges
    the recommendation was not seen). Returns the share of recommendations whose real run meets
    the deadline and the share that are the cheapest real run that does."""
    meets = cheapest = total = 0
    for group in _by_name(runs).values():
        for inp in sorted({r["input_bytes"] for r in group}):
            real = {r["executors"]: r for r in group if r["input_bytes"] == inp}
            fast = min(r["duration_ms"] for r in real.values())
            slow = max(r["duration_ms"] for r in real.values())
            preds = _predictions_loo(group, real, inp)
            for k in range(deadlines_per_input):
                deadline = fast + (slow - fast) * (k + 0.5) / deadlines_per_input
                ok = [(cost, n) for cost, high, n in preds if high <= deadline]
                choice = min(ok)[1] if ok else None
                total += 1
                if choice is None:
                    continue
                run = real[choice]
                met = run["duration_ms"] <= deadline
                meets += met
                candidates = [r for r in real.values() if r["duration_ms"] <= deadline]
                best = min(candidates, key=lambda r: r["duration_ms"] * r["executors"] * r["cores"])
                cheapest += met and best is run
    return {"meets": meets / max(1, total), "cheapest": cheapest / max(1, total), "cases": total}


def _predictions_loo(
    group: list[dict[str, Any]], real: dict[int, dict[str, Any]], inp: int
) -> list[tuple[float, float, int]]:
    """(predicted core-hours, upper bound, executors) of each real size, each predicted by a
    model fitted without that run."""
    preds = []
    for n, run in real.items():
        others = [r for r in group if r is not run]
        cal = fit_calibration(others)
        p = _predict_for(others, cal, n, run["cores"], inp)
        preds.append((p.predicted_ms * n * run["cores"], p.high_ms, n))
    return preds
