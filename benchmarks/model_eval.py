"""The figures of docs/dev/models.md: every prediction form compared, per regime, per evaluation.

    python -m benchmarks.model_eval [--keys 60] [--seed 7] [--iter-keys 30] [--only adopted,...]
        [--no-corpora] [--keys-per-server K]

Evaluations: the synthetic fleet of ``benchmarks.synthetic_keys`` (``--keys`` keys drawn from
``--seed``; the forms are chosen on it), its iterative keys whose iteration count grows beyond
the range (``--iter-keys``, from seed ``--seed`` + 4; also chosen on) and the three recorded corpora (demo/recurring-events,
demo/scaling-events, demo/iterative-events, fetched into a throwaway SQLite file; reported, not
chosen on). Per evaluation: the rolling origin overall and per regime (interpolation,
extrapolation, new key) and the forward-in-size split, each as MAPE / coverage of the 80%
interval (runs). The forms are switches of ``sparkscope.advisor.predict.candidates.Options``.
``--keys-per-server K`` backtests the synthetic fleets as servers of K keys each (a fresh server
with few keys, whose intervals have few other keys' residuals to borrow) instead of one server.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from sparkscope.advisor.predict import candidates
from sparkscope.advisor.predict.backtest import (
    BANDS,
    Metrics,
    Run,
    band_metrics,
    metrics,
    regime_metrics,
    run_backtest,
    score,
    scored_runs,
)
from sparkscope.advisor.predict.forward import forward_split

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ("recurring-events", "scaling-events", "iterative-events")
LEVEL = 0.8
#: The forms compared (name -> the Options fields that differ from the adopted ones).
FORMS: dict[str, dict[str, Any]] = {
    "adopted": {},
    "no work line": {"work_default": ""},
    "work line on PRESS": {"work_default": "press"},
    "work line on nested LOO": {"work_default": "nested"},
    "continued: local": {"continuation": "local"},
    "continued: history": {"continuation": "history"},
    "continued: mean": {"continuation": "mean"},
    "continued: split": {"continuation": "split"},
    "no envelope": {"envelope": ""},
    "no envelope, not normalised": {"envelope": "", "normalise": False},
    "challengers on all regimes": {"regime_select": False},
    "no rounds' terms": {"rounds": ""},
    "rounds: prior and first": {"rounds": "both"},
    "rounds: first only": {"rounds": "first"},
    "class model serves keys of 1-3 runs": {"class_serves_new": True},
    "class model anchored on the key's runs": {"class_serves_new": True, "anchored": True},
    "own first-principle prior before the class model": {
        "class_serves_new": True,
        "own_prior": True,
    },
    "anchored and own prior": {"class_serves_new": True, "anchored": True, "own_prior": True},
    "no Amdahl scaling of new keys": {"amdahl": ""},
    "Amdahl scaling of new keys to their slots and size": {"amdahl": "size"},
    "no rounds timeline": {"rounds_timeline": ""},
    "rounds timeline: one sized": {"rounds_timeline_sized": True},
    "rounds timeline: few sized": {"rounds_timeline": "few", "rounds_timeline_sized": True},
    "rounds timeline: mean sized": {"rounds_timeline": "mean", "rounds_timeline_sized": True},
    "rounds timeline: few flat": {"rounds_timeline": "few"},
    "rounds timeline: mean flat": {"rounds_timeline": "mean"},
    "size elasticity of other keys for narrow keys": {"elasticity": "pooled"},
    "size elasticity of other keys for narrow keys and own for wide": {"elasticity": "own"},
    "size elasticity of the whole work of other keys for narrow keys": {"elasticity": "total"},
    "work line the default beyond the range": {"outside_work": 1.0},
    "no work line default beyond twice the range": {"outside_work": 0.0},
    "leave-one-out residuals before other keys'": {"jackknife": "before"},
    "leave-one-out residuals before other keys', inside the range only": {
        "jackknife": "before",
        "jackknife_outside": False,
    },
    "leave-one-out residuals after other keys'": {"jackknife": "after"},
    "the largest miss below the conformal rank": {"small_sample": ""},
    "Student-t below four residuals": {"small_sample": "student3"},
    "none of these": {
        "work_default": "",
        "envelope": "",
        "normalise": False,
        "regime_select": False,
        "rounds": "",
        "class_serves_new": True,
        "amdahl": "",
    },
}


def corpus_runs(folder: Path, workdir: Path, source: str = "--url") -> list[Run]:
    """The runs of a recorded corpus, fetched with `sparkscope fetch --url` (or ``source``,
    e.g. ``--event-logs`` for a folder of event logs) into SQLite."""
    from click.testing import CliRunner
    from sqlalchemy import select

    from sparkscope.cli.main import cli
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.models.application import Application
    from sparkscope.prediction.runs import load_runs

    url = f"sqlite:///{workdir / (folder.name + '.db')}"
    config = workdir / "none.yaml"
    config.write_text("predictions: {}\n")
    env = {"SPARKSCOPE_DATABASE_URL": url, "SPARKSCOPE_CONFIG": str(config)}
    result = CliRunner().invoke(cli, ["fetch", source, str(folder)], env=env)
    if result.exit_code != 0:
        raise SystemExit(result.output)
    with make_sessionmaker(make_engine(url))() as s:
        rows = load_runs(s, list(s.scalars(select(Application.id))))
    return [
        Run(r.name, r.start_time_ms, float(r.duration_ms or 0) or None, r.succeeded,
            r.features.vector())
        for r in rows
    ]  # fmt: skip


def servers(runs: list[Run], keys_per_server: int) -> list[list[Run]]:
    """The runs split into servers of ``keys_per_server`` keys each, in the order the keys first
    ran (0: one server); each is backtested on its own, as a fresh server with few keys is."""
    if keys_per_server <= 0:
        return [runs]
    first: dict[str, int] = {}
    for r in sorted(runs, key=lambda r: r.start_ms):
        first.setdefault(r.key, len(first))
    groups: dict[int, list[Run]] = {}
    for r in runs:
        groups.setdefault(first[r.key] // keys_per_server, []).append(r)
    return [groups[g] for g in sorted(groups)]


def figures(runs: list[Run], class_aware: bool, keys_per_server: int = 0) -> dict[str, Metrics]:
    results: dict[str, Any] = {}
    forward: list[Any] = []
    for server in servers(runs, keys_per_server):
        results.update(run_backtest(server, LEVEL, class_aware))
        forward += forward_split(server, LEVEL)
    out = {"overall": metrics(results.values(), LEVEL, 5)}
    out.update(regime_metrics(results.values(), LEVEL, 5))
    ahead = [(float(f.run.duration_ms or 0), f.point, None) for f in forward]
    out["forward"] = score(ahead, LEVEL)
    bands = band_metrics(scored_runs(results.values(), 5), LEVEL)
    out.update({f"outside {b}": m for b, m in bands.items()})
    out.update({f"forward {b}": m for b, m in band_metrics(ahead, LEVEL).items()})
    return out


def cell(m: Metrics) -> str:
    if not m.n or m.mape is None:
        return "-"
    return f"{100 * m.mape:.1f}% / {100 * (m.coverage or 0):.0f}% ({m.n})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--iter-keys", type=int, default=30)
    parser.add_argument("--only", default="", help="Comma-separated form names.")
    parser.add_argument("--no-corpora", action="store_true", help="The synthetic fleets only.")
    parser.add_argument(
        "--class-aware-synthetic",
        action="store_true",
        help="The synthetic fleets with the class-aware model (the new keys' forms need it).",
    )
    parser.add_argument(
        "--bands",
        action="store_true",
        help="Outside the range (and the forward split) per band of distance as well.",
    )
    parser.add_argument(
        "--keys-per-server",
        type=int,
        default=0,
        help="Backtest the synthetic fleets as servers of this many keys each (0: one server).",
    )
    args = parser.parse_args(argv)
    from benchmarks.synthetic_keys import iteration_fleet, keys

    wanted = [f for f in args.only.split(",") if f] or list(FORMS)
    evaluations: dict[str, tuple[list[Run], bool]] = {
        f"synthetic ({args.keys} keys)": (keys(args.keys, args.seed), args.class_aware_synthetic)
    }
    if args.iter_keys:
        rounds = [r for runs, _law in iteration_fleet(args.iter_keys, args.seed + 4) for r in runs]
        label = f"synthetic iterations ({args.iter_keys} keys)"
        evaluations[label] = (rounds, args.class_aware_synthetic)
    with tempfile.TemporaryDirectory() as tmp:
        for name in () if args.no_corpora else CORPORA:
            evaluations[name] = (corpus_runs(ROOT / "demo" / name, Path(tmp)), True)
    columns: tuple[str, ...] = ("overall", "interpolation", "extrapolation", "new_key", "forward")
    if args.bands:  # the rolling origin's runs outside the range, then the forward split's
        bands = tuple(f"{lo:g}-{hi:g}x" for lo, hi in BANDS[:-1]) + (f">{BANDS[-1][0]:g}x",)
        columns += tuple(f"{kind} {b}" for kind in ("outside", "forward") for b in bands)
    for form in wanted:
        print(f"## {form}  {FORMS[form] or ''}", flush=True)
        print("| evaluation | " + " | ".join(columns) + " |")
        old = candidates.OPTIONS
        candidates.OPTIONS = dataclasses.replace(old, **FORMS[form])
        try:
            for label, (runs, class_aware) in evaluations.items():
                per_server = args.keys_per_server if label.startswith("synthetic") else 0
                f = figures(runs, class_aware, per_server)
                print(f"| {label} | " + " | ".join(cell(f[c]) for c in columns) + " |", flush=True)
        finally:
            candidates.OPTIONS = old
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
