"""`sparkscope backtest`: the rolling-origin evaluation of the predictions on the stored runs."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Any

import click

from sparkscope.cli.common import fail_usage, pass_config
from sparkscope.config.loader import Config


@click.command()
@click.option("--name", "names", multiple=True, help="Only this recurring key (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option(
    "--min-history",
    type=click.IntRange(min=0),
    default=None,
    help="Score runs with at least "
    "this many earlier successful runs of their key (default: predictions.min_history).",
)
@click.option(
    "--whatif",
    is_flag=True,
    help="Instead: the what-if and sizing accuracy (single-run, leave-one-out, sizing).",
)
@pass_config
def backtest(
    config: Config,
    names: tuple[str, ...],
    as_json: bool,
    min_history: int | None,
    whatif: bool,
) -> None:
    """Predict every stored run from the runs before it; print the errors per key and overall.

    n, MAPE, median and P90 absolute percentage error, share off by 2x or more, interval
    coverage against its nominal level, skill against last-run and median-of-5, and the
    next-run forecast's MAPE; then MAPE, P90 and coverage per regime (inside the key's range,
    outside it by distance band, new key) and on the forward-in-size split (each key trained
    on its smaller half, scored on its larger half). With --whatif: the what-if figures of the recurring keys'
    runs, all out of sample (single-run what-if, history-calibrated leave one out, sizing).
    """
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.prediction.backtest import backtest_database

    if whatif:
        _whatif(config, names, as_json)
        return
    started = time.perf_counter()
    prediction_config = config.predictions
    factory = make_sessionmaker(make_engine(config.database_url))
    figures = backtest_database(
        factory,
        prediction_config,
        names,
        prediction_config.min_history if min_history is None else min_history,
    )
    if names and not figures.per_key and not figures.forward_keys:
        fail_usage(f"no stored runs for {', '.join(names)}")
    seconds = time.perf_counter() - started
    if as_json:
        click.echo(
            json.dumps(
                {
                    "overall": asdict(figures.overall),
                    "keys": {k: asdict(m) for k, m in figures.per_key.items()},
                    "regimes": {k: asdict(m) for k, m in figures.regimes.items()},
                    "extrapolation_bands": {k: asdict(m) for k, m in figures.bands.items()},
                    "forward_split": {
                        "overall": asdict(figures.forward),
                        "bands": {k: asdict(m) for k, m in figures.forward_bands.items()},
                        "keys": {k: asdict(m) for k, m in figures.forward_keys.items()},
                    },
                    "seconds": round(seconds, 2),
                },
                indent=2,
            )
        )
        return
    click.echo(
        f"{'key':40s} {'n':>5s} {'MAPE':>6s} {'med':>6s} {'P90':>6s} {'2x':>5s} "
        f"{'cover':>6s} {'skill_last':>10s} {'skill_med5':>10s} {'next MAPE':>9s}"
    )
    for key, m in [*sorted(figures.per_key.items()), ("OVERALL", figures.overall)]:
        click.echo(
            f"{key[:40]:40s} {m.n:5d} {_pct(m.mape)} {_pct(m.median_ape)} {_pct(m.p90_ape)} "
            f"{_pct(m.off_2x, 5)} {_pct(m.coverage)} {_pct(m.skill_last, 10)} "
            f"{_pct(m.skill_median5, 10)} {_pct(m.forecast_mape, 9)}"
        )
    click.echo("")
    click.echo(
        f"{'per regime (rolling origin)':40s} {'n':>5s} {'MAPE':>6s} {'P90':>6s} {'cover':>6s}"
    )
    rows = [(f"  {k}", m) for k, m in figures.regimes.items()]
    rows += [(f"    extrapolated {k}", m) for k, m in figures.bands.items()]
    rows += [("forward-in-size split (all extrapolated)", figures.forward)]
    rows += [(f"    extrapolated {k}", m) for k, m in figures.forward_bands.items()]
    rows += [(f"  {k}", m) for k, m in figures.forward_keys.items()]
    for label, m in rows:
        click.echo(f"{label[:40]:40s} {m.n:5d} {_pct(m.mape)} {_pct(m.p90_ape)} {_pct(m.coverage)}")
    click.echo(
        f"interval level {figures.overall.level:.0%}; new_key: runs with fewer than"
        f" {prediction_config.min_history if min_history is None else min_history} earlier runs of their key;"
        f" {seconds:.1f} s"
    )


def _pct(v: float | None, width: int = 6) -> str:
    return f"{'-' if v is None else f'{100 * v:.1f}%':>{width}s}"


def _whatif(config: Config, names: tuple[str, ...], as_json: bool) -> None:
    """`backtest --whatif`: sparkscope.advisor.whatif.evaluate on the stored runs of each key."""
    from sqlalchemy.orm import Session

    from sparkscope.advisor.whatif import evaluate
    from sparkscope.db import make_engine
    from sparkscope.whatif.calibration import key_histories, stored_prior_terms

    started = time.perf_counter()
    engine = make_engine(config.database_url)
    with Session(engine) as session:
        runs = key_histories(session, config.predictions.key_patterns, names)
        terms = stored_prior_terms(session)
    engine.dispose()
    if names and not runs:
        fail_usage(f"no stored run of {', '.join(names)} can be simulated")
    bare = evaluate.single_run(runs, "none")
    single = evaluate.single_run(runs, "cluster", prior_terms=terms)
    own = evaluate.single_run(runs, "history")
    loo, coverage = evaluate.leave_one_out(runs)
    sizing = evaluate.sizing(runs)
    seconds = time.perf_counter() - started
    figures = {
        "runs": len(runs),
        "keys": len({r["name"] for r in runs}),
        "bare_simulation": _errors(bare),
        "single_run": _errors(single),
        "single_run_own_history": _errors(own),
        "leave_one_out": {**_errors(loo), "coverage": coverage},
        "sizing": sizing,
        "seconds": round(seconds, 2),
    }
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    click.echo(f"what-if on {figures['runs']} runs of {figures['keys']} recurring keys")
    for label, e in (
        ("bare simulation (no correction)", bare),
        ("single-run, the server's prior (target 10% / 25%)", single),
        ("single-run, corrected by the key's other runs", own),
        ("history-calibrated, leave one out (target 6% / 15%)", loo),
    ):
        click.echo(f"  {label:52s} {e}")
    click.echo(f"  {'runs inside their leave-one-out interval':52s} {coverage:.0%}")
    click.echo(
        f"  {'sizing (targets 90% / 80%)':52s} real run meets the deadline {sizing['meets']:.0%},"
        f" is the cheapest that does {sizing['cheapest']:.0%} ({sizing['cases']:.0f} deadlines)"
    )
    click.echo(f"{seconds:.1f} s")


def _errors(e: Any) -> dict[str, Any]:
    """Median/P90 APE (None when nothing could be predicted) and the count."""
    n = len(e.values)
    out = {"n": n, "median_ape": e.median if n else None, "p90_ape": e.p90 if n else None}
    if e.coverage is not None:
        out["coverage"] = e.coverage
    return out
