"""How close the duration model comes, on the held-out draws, to a line that has seen every run.

Per key of each draw of :mod:`benchmarks.heldout_spark`, a least-squares line on the logs of the
size read, the task slots and the iterations (those that vary in the key's runs) is fitted on all
of the key's successful runs, the later and larger ones included, and scored on the runs the
backtest's "overall" cell scores (those with at least ``NEW_KEY_RUNS`` earlier runs). No model
that predicts a run from the runs before it sees that much, so the line's error is what the
runs' own noise leaves: a floor for lines of these features, not a bound for every model. Beside
it the model's rolling-origin MAPE on the same runs and the error of its ``last_run`` baseline.

    python -m benchmarks.heldout_floor [--draws 1,2,3] [--root DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.model_eval import LEVEL, Run, corpus_runs
from sparkscope.advisor.predict.features import NUMERIC
from sparkscope.advisor.predict.rolling import NEW_KEY_RUNS

LINE_FEATURES = ("input_bytes", "cores", "iterations")


def floor_errors(runs: Sequence[Run], skip: int = NEW_KEY_RUNS) -> dict[str, list[float]]:
    """Per key: the absolute percentage errors of the in-sample line on its runs after the first
    ``skip`` successful ones (start order)."""
    import numpy as np

    by_key: dict[str, list[Run]] = {}
    for r in sorted(runs, key=lambda r: r.start_ms):
        if r.ok and r.duration_ms:
            by_key.setdefault(r.key, []).append(r)
    cols = [NUMERIC.index(n) for n in LINE_FEATURES]
    out: dict[str, list[float]] = {}
    for key, rs in by_key.items():
        if len(rs) <= skip:
            continue
        X = np.array([r.vector for r in rs], dtype=float)
        y = np.log([float(r.duration_ms or 0) for r in rs])
        use = [c for c in cols if X[:, c].min() > 0 and X[:, c].max() > 1.0001 * X[:, c].min()]
        A = np.column_stack([np.ones(len(y)), *(np.log(X[:, c]) for c in use)])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        out[key] = [float(e) for e in np.abs(np.exp(A @ coef - y) - 1.0)[skip:]]
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    from benchmarks.heldout_spark import DRAWS
    from sparkscope.advisor.predict.backtest import run_backtest, score, scored_runs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", default=",".join(str(d) for d in sorted(DRAWS)))
    ap.add_argument("--root", type=Path, default=Path.home() / ".cache" / "sparkscope-heldout")
    args = ap.parse_args(argv)
    draws = [int(x) for x in args.draws.split(",") if x]
    if unknown := sorted(set(draws) - set(DRAWS)):
        ap.error(f"no draw {unknown[0]}: the draws are {', '.join(str(d) for d in sorted(DRAWS))}")
    cells: list[tuple[float, int]] = []  # the model's MAPE and runs, per draw
    floors: list[float] = []
    lasts: list[float] = []
    print("| draw | runs | model (rolling origin) | in-sample line | last run |")
    print("|---|---:|---:|---:|---:|")
    for d in draws:
        logs = args.root / f"draw-{d}" / "logs"
        if not logs.is_dir():
            print(f"| {d} | no logs in {logs}: python -m benchmarks.heldout_spark --draw {d} |")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            runs = corpus_runs(logs, Path(tmp), "--event-logs")
        scored = scored_runs(run_backtest(runs, LEVEL, True).values(), NEW_KEY_RUNS)
        m = score(scored, LEVEL)
        floor = [e for es in floor_errors(runs).values() for e in es]
        last = [abs(p.predictions["last_run"] / y - 1.0) for y, p, _f in scored]
        cells.append((m.mape or 0.0, m.n))
        floors += floor
        lasts += last
        print(f"| {d} | {m.n} | {100 * (m.mape or 0):.1f}% | {100 * _mean(floor):.1f}% | "
              f"{100 * _mean(last):.1f}% |", flush=True)  # fmt: skip
    n = sum(k for _, k in cells)
    if n:
        model = sum(v * k for v, k in cells) / n
        print(f"| pooled | {n} | {100 * model:.1f}% | {100 * _mean(floors):.1f}% | "
              f"{100 * _mean(lasts):.1f}% |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
