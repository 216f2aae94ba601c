"""`sparkscope whatif`, `sparkscope advise` and `sparkscope whatif-fit`."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from sparkscope.cli.common import EXIT_SOME_FAILED, fail_usage, pass_config
from sparkscope.config.loader import Config

if TYPE_CHECKING:
    from sparkscope.advisor.whatif.sizing import Prices


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:,.1f} s"


def _curve_table(points: list[dict[str, Any]], currency: str | None) -> None:
    head = f"{'executors':>9} {'cores':>5} {'predicted':>11} {'low':>11} {'high':>11} {'core-h':>8}"
    click.echo(head + (f" {'cost ' + currency:>10}" if currency else ""))
    for p in points:
        line = (
            f"{p['executors']:>9} {p['cores']:>5} {_seconds(p['predicted_ms']):>11}"
            f" {_seconds(p['low_ms']):>11} {_seconds(p['high_ms']):>11} {p['core_hours']:>8.4f}"
        )
        if currency:
            line += f" {p['cost']:>10.4f}"
        click.echo(line)


def _currency(prices: Prices) -> str | None:
    """Currency of the cost column; None (no column) when no price is set."""
    return prices.currency if prices.priced else None


def _session(config: Config) -> Any:
    from sparkscope.db import make_engine, make_sessionmaker

    return make_sessionmaker(make_engine(config.database_url))()


@click.command()
@click.argument("app_id")
@click.option(
    "--executors", default="1,2,3,4,6,8,12,16", show_default=True, help="Counts, 1,2,4,8."
)
@click.option("--cores", type=int, default=None, help="Cores per executor (default: observed).")
@click.option("--input-scale", type=float, default=None, help="Input size relative to this run.")
@click.option("--server", default=None, help="Server name when the id exists on several.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@pass_config
def whatif(
    config: Config,
    app_id: str,
    executors: str,
    cores: int | None,
    input_scale: float | None,
    server: str | None,
    as_json: bool,
) -> None:
    """Predicted duration and cost of APP_ID at other executor counts."""
    from sparkscope.advisor.whatif.limits import LimitExceeded
    from sparkscope.advisor.whatif.sizing import parse_counts
    from sparkscope.queries.detail import find_app
    from sparkscope.queries.errors import AmbiguousAppError, NotFoundError
    from sparkscope.whatif.answers import app_whatif, prices_of
    from sparkscope.whatif.inputs import WhatIfUnavailable

    try:
        sizes = parse_counts(executors)
    except ValueError as exc:
        fail_usage(f"--executors: {exc}")
    if cores is not None and cores < 1:
        fail_usage("--cores: must be at least 1")
    if input_scale is not None and not input_scale > 0:
        fail_usage("--input-scale: must be positive")
    prices = prices_of(config.prices)
    with _session(config) as session:
        try:
            app = find_app(session, app_id, server)
            body = app_whatif(
                session,
                app,
                sizes,
                cores,
                input_scale,
                prices,
                config.predictions.key_patterns,
            )
        except (NotFoundError, AmbiguousAppError) as exc:
            fail_usage(str(exc))
        except LimitExceeded as exc:
            fail_usage(f"--{exc.param.replace('_', '-')}: {exc}")
        except WhatIfUnavailable as exc:
            click.echo(f"sparkscope: no what-if for {app_id}: {exc}", err=True)
            sys.exit(EXIT_SOME_FAILED)
    if as_json:
        click.echo(json.dumps(body, indent=1))
        return
    obs = body["observed"]
    click.echo(
        f"{app_id}: observed {obs['executors']} executors x {obs['cores']} cores,"
        f" {_seconds(obs['duration_ms'])}; floor {_seconds(body['floor_ms'])}"
    )
    click.echo(f"model: {body['model']}")
    _curve_table(body["points"], _currency(prices))


@click.command()
@click.option("--name", required=True, help="Application name (the recurring key).")
@click.option("--deadline", required=True, help="e.g. 90s, 30m, 2h, 45000ms.")
@click.option("--input-bytes", type=int, default=None, help="Input size (default: latest run's).")
@click.option("--executors", default=None, help="Counts to consider (default 1..2x largest seen).")
@click.option("--server", default=None, help="Server name.")
@click.option(
    "--cores", default=None, help="Cores per executor to consider (default: seen, 1,2,4,8)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@pass_config
def advise(
    config: Config,
    name: str,
    deadline: str,
    input_bytes: int | None,
    executors: str | None,
    server: str | None,
    cores: str | None,
    as_json: bool,
) -> None:
    """The cheapest executor count whose predicted upper bound meets a deadline."""
    from sparkscope.advisor.whatif.limits import LimitExceeded
    from sparkscope.advisor.whatif.sizing import parse_counts, parse_deadline
    from sparkscope.whatif.answers import NoHistory, prices_of
    from sparkscope.whatif.answers import advise as run_advise
    from sparkscope.whatif.inputs import WhatIfUnavailable

    try:
        deadline_ms = parse_deadline(deadline)
    except ValueError as exc:
        fail_usage(f"--deadline: {exc}")
    sizes = None
    if executors:
        try:
            sizes = parse_counts(executors)
        except ValueError as exc:
            fail_usage(f"--executors: {exc}")
    core_counts = None
    if cores:
        try:
            core_counts = parse_counts(cores, "core count")
        except ValueError as exc:
            fail_usage(f"--cores: {exc}")
    if input_bytes is not None and input_bytes <= 0:
        fail_usage("--input-bytes: must be positive")
    prices = prices_of(config.prices)
    with _session(config) as session:
        try:
            body = run_advise(
                session,
                name,
                deadline_ms,
                input_bytes,
                sizes,
                server,
                prices,
                core_counts,
                config.predictions.key_patterns,
            )
        except NoHistory as exc:
            fail_usage(str(exc))
        except LimitExceeded as exc:
            fail_usage(f"--{exc.param.replace('_', '-')}: {exc}")
        except WhatIfUnavailable as exc:
            click.echo(f"sparkscope: cannot size {name}: {exc}", err=True)
            sys.exit(EXIT_SOME_FAILED)
    if as_json:
        click.echo(json.dumps(body, indent=1))
        return
    rec = body["recommended"]
    if rec is None:
        click.echo(
            f"nothing meets {_seconds(deadline_ms)}: no size asked finishes in time with its upper"
            f" bound; the floor (longest chain of stages + driver-only time) is"
            f" {_seconds(body['floor_ms'])}"
        )
    else:
        money = f", {rec['cost']:.4f} {_currency(prices)}" if rec["cost"] is not None else ""
        click.echo(
            f"recommended: {rec['executors']} executors x {rec['cores']} cores, predicted"
            f" {_seconds(rec['predicted_ms'])} (at most {_seconds(rec['high_ms'])}),"
            f" {rec['core_hours']:.4f} core-hours{money}"
            + ("" if rec["basis"] == "history" else " (simulation only: cores not in the history)")
        )
    click.echo(f"model: {body['model']} ({body['n_train']} runs)")
    click.echo(
        "cores per executor seen in the history: "
        + ", ".join(str(c) for c in body["cores_seen"])
        + "; considered: "
        + ", ".join(str(c) for c in body["cores_considered"])
    )
    _curve_table(body["curve"] + body["other_cores"], _currency(prices))
    if rec is None:
        sys.exit(EXIT_SOME_FAILED)


@click.command("whatif-fit")
@click.option(
    "--name", "names", multiple=True, help="Only this name or recurring key (repeatable)."
)
@pass_config
def whatif_fit(config: Config, names: tuple[str, ...]) -> None:
    """Fit the history-calibrated what-if models of stored applications (a fetch does it for
    the names it loads; run this once after upgrading)."""
    from sqlalchemy import select

    from sparkscope.advisor.predict.features import recurring_key
    from sparkscope.models.application import Application
    from sparkscope.whatif.calibration import refit_models

    patterns = config.predictions.key_patterns
    with _session(config) as session, session.begin():
        pairs = session.execute(select(Application.server_id, Application.name).distinct()).all()
        by_server: dict[int, list[str]] = {}
        for server_id, name in pairs:
            if not names or name in names or recurring_key(name, patterns) in names:
                by_server.setdefault(server_id, []).append(name)
        fitted = sum(refit_models(session, sid, ns, patterns) for sid, ns in by_server.items())
    click.echo(f"fitted {fitted} what-if models")
