"""`sparkscope backtest`: the rolling-origin evaluation of the predictions on the stored runs."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import click

from sparkscope.clikit import fail_usage, pass_config
from sparkscope.config import Config


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
@pass_config
def backtest(
    config: Config, names: tuple[str, ...], as_json: bool, min_history: int | None
) -> None:
    """Predict every stored run from the runs before it; print the errors per key and overall.

    n, MAPE, median and P90 absolute percentage error, share off by 2x or more, interval
    coverage against its nominal level, skill against last-run and median-of-5, and the
    next-run forecast's MAPE.
    """
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.prediction_backtest import backtest_database

    started = time.perf_counter()
    cfg = config.predictions
    factory = make_sessionmaker(make_engine(config.database_url))
    per_key, overall = backtest_database(
        factory, cfg, names, cfg.min_history if min_history is None else min_history
    )
    if names and not per_key:
        fail_usage(f"no stored runs for {', '.join(names)}")
    seconds = time.perf_counter() - started
    if as_json:
        click.echo(
            json.dumps(
                {
                    "overall": asdict(overall),
                    "keys": {k: asdict(m) for k, m in per_key.items()},
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
    for key, m in [*sorted(per_key.items()), ("OVERALL", overall)]:
        click.echo(
            f"{key[:40]:40s} {m.n:5d} {_pct(m.mape)} {_pct(m.median_ape)} {_pct(m.p90_ape)} "
            f"{_pct(m.off_2x, 5)} {_pct(m.coverage)} {_pct(m.skill_last, 10)} "
            f"{_pct(m.skill_median5, 10)} {_pct(m.forecast_mape, 9)}"
        )
    click.echo(f"interval level {overall.level:.0%}; {seconds:.1f} s")


def _pct(v: float | None, width: int = 6) -> str:
    return f"{'-' if v is None else f'{100 * v:.1f}%':>{width}s}"
