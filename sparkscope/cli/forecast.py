"""`sparkscope forecast`: the next run of a recurring application, at the size given or assumed."""

from __future__ import annotations

import json

import click

from sparkscope.cli.common import fail_usage, pass_config
from sparkscope.config.loader import Config


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:,.1f} s"


@click.command()
@click.option("--name", required=True, help="Application name (or its recurring key).")
@click.option("--input-bytes", type=int, default=None, help="The next run's input (bytes).")
@click.option("--executors", type=int, default=None, help="The next run's executor count.")
@click.option("--cores", type=int, default=None, help="Cores per executor (default: latest run's).")
@click.option("--server", default=None, help="Server name, when the name runs on several.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@pass_config
def forecast(
    config: Config,
    name: str,
    input_bytes: int | None,
    executors: int | None,
    cores: int | None,
    server: str | None,
    as_json: bool,
) -> None:
    """The next run's expected duration and interval. With --input-bytes or --executors: the
    key's stored line at that size (what is not given is the latest run's); without: the stored
    next-run forecast. Either way it says what it assumed."""
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.prediction.forecasts import NoForecast, next_run

    for label, value in (("--input-bytes", input_bytes), ("--executors", executors),
                         ("--cores", cores)):  # fmt: skip
        if value is not None and value <= 0:
            fail_usage(f"{label}: must be positive")
    factory = make_sessionmaker(make_engine(config.database_url))
    with factory() as session:
        try:
            body = next_run(
                session,
                name,
                config.predictions.key_patterns,
                server,
                input_bytes,
                executors,
                cores,
            )
        except NoForecast as exc:
            fail_usage(str(exc))
    if as_json:
        click.echo(json.dumps(body, indent=1))
        return
    if body.get("expected_ms") is None:
        click.echo(f"{body['key']}: no forecast yet ({body['n_runs']} run(s))")
        return
    text = (
        f"{body['key']}: next run expected {_seconds(body['expected_ms'])}"
        f" ({_seconds(body['low_ms'])}-{_seconds(body['high_ms'])}, {body['level']:.0%};"
        f" {body['model']})"
    )
    click.echo(text)
    if "regime" in body:
        click.echo(
            f"at input {body['input_bytes'] / 1e6:,.1f} MB on {body['task_slots']:.0f} task"
            f" slots: {body['regime']['text']}"
        )
    click.echo(f"assumes: {body['assumes']}")
