"""The `sparkscope` command group: db, serve and analyze here; the other commands from their modules.

Every command is defined at module level and added to the one group below; the helpers they share
(config loading, one-line usage errors) live in sparkscope.cli.common, so no command module imports this one.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click

from sparkscope.cli import whatif as whatif_cli
from sparkscope.cli.backtest import backtest
from sparkscope.cli.common import EXIT_SOME_FAILED, CliState, fail_usage, pass_config
from sparkscope.cli.fetch import dump, fetch
from sparkscope.cli.forecast import forecast
from sparkscope.cli.ingest import ingest
from sparkscope.cli.notify import notify
from sparkscope.cli.prune import prune
from sparkscope.cli.schedule import schedule
from sparkscope.config.loader import Config
from sparkscope.config.parsing import ConfigError
from sparkscope.db import safe_url
from sparkscope.printable import PrintableFormatter, printable


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    envvar="SPARKSCOPE_CONFIG",
    metavar="FILE",
    help="Config file (default: $SPARKSCOPE_CONFIG, else config/sparkscope.yaml if present).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages.")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, verbose: bool) -> None:
    """Sparkscope: which Spark applications ran badly, why, and what to change."""
    # One record, one line: ids and names from the History Server have their control characters
    # escaped, so none can forge a log line.
    handler = logging.StreamHandler()
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
    # Alembic logs every migration step at INFO; keep cron logs to what matters.
    logging.getLogger("alembic").setLevel(logging.DEBUG if verbose else logging.WARNING)
    # psycopg warns of the statement pipeline it drops after a failed statement: the failure
    # itself is reported, in one line.
    logging.getLogger("psycopg").setLevel(logging.DEBUG if verbose else logging.ERROR)
    ctx.obj = CliState(config_path)


# --------------------------------------------------------------------------------------------- db


@cli.group()
def db() -> None:
    """Create, upgrade or downgrade the database schema."""


@db.command("upgrade")
@click.argument("revision", default="head")
@pass_config(database="reachable")
def db_upgrade(config: Config, revision: str) -> None:
    """Upgrade the schema to REVISION (default: head)."""
    from sparkscope import migrate

    migrate.upgrade(config.database_url, revision)
    click.echo(f"database at {revision}: {safe_url(config.database_url)}")


@db.command("downgrade")
@click.argument("revision")
@pass_config(database="reachable")
def db_downgrade(config: Config, revision: str) -> None:
    """Downgrade the schema to REVISION ('base' drops every table)."""
    from sparkscope import migrate

    migrate.downgrade(config.database_url, revision)
    click.echo(f"database at {revision}: {safe_url(config.database_url)}")


@db.command("current")
@pass_config(database="reachable")
def db_current(config: Config) -> None:
    """Show the schema revision of the database."""
    from sparkscope import migrate

    migrate.current(config.database_url)


@db.command("check")
@pass_config(database="reachable")
def db_check(config: Config) -> None:
    """Fail when the models and the migrations disagree."""
    from alembic.util.exc import CommandError

    from sparkscope import migrate

    try:
        migrate.check(config.database_url)
    except CommandError as exc:
        click.echo(f"sparkscope: {exc}", err=True)
        sys.exit(1)


# ------------------------------------------------------------------------------------------ serve


@cli.command()
@click.option("--host", default=None, help="Address to bind (default: web.host, 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=None, help="Port (default: web.port, 8080)."
)
@click.option("--debug", is_flag=True, help="Flask debug mode with reloader; never in production.")
@pass_config
def serve(config: Config, host: str | None, port: int | None, debug: bool) -> None:
    """Run the development web server (production: gunicorn 'sparkscope.web.app:create_app()')."""
    from sparkscope.web.app import create_app

    app = create_app(config=config)
    click.echo(f"sparkscope: serving the database {safe_url(config.database_url)}")
    app.run(host=host or config.web.host, port=port or config.web.port, debug=debug)


# ---------------------------------------------------------------------------------------- analyze


@cli.command()
@click.option("--app-id", "app_ids", multiple=True, help="Only this application id (repeatable).")
@click.option(
    "--force",
    is_flag=True,
    help="Re-score every application, running every heuristic again (by default only those "
    "scored under another config, and only the heuristics whose params changed).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=lambda: os.cpu_count() or 1,
    show_default="number of CPUs",
    help="Processes to score with.",
)
@pass_config
def analyze(config: Config, app_ids: tuple[str, ...], force: bool, workers: int) -> None:
    """Re-score stored applications with the current heuristics config, then bring everything
    derived from them up to date: the predictions of their recurring applications, and whatever
    an interrupted or failed run left undone (with --force, every prediction and what-if model
    again)."""
    from sparkscope.analysis import scoring as analysis
    from sparkscope.analysis.heuristics_config import load_heuristics
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.pipeline.steps import Pipeline

    try:
        registry = load_heuristics(config.heuristics_path)
    except ConfigError as exc:
        fail_usage(f"config error: {exc}")
    engine = make_engine(config.database_url)
    factory = make_sessionmaker(engine)
    try:
        stats = analysis.analyze_all(
            factory, registry, app_ids=app_ids or None, force=force, workers=workers
        )
        click.echo(
            f"analysed {stats.analysed} applications ({stats.skipped} already current) "
            f"in {stats.seconds:.1f} s"
        )
        pipeline = Pipeline(
            registry=registry,
            predictions=config.predictions,
            notifications=config.notifications,
            prices=config.prices,
        )
        # Through the ledger: an analyze killed half-way leaves the rest to the next run.
        if force:
            pipeline.queue_all(factory, full=True)
        else:
            pipeline.queue_all(factory, steps=("predictions",))
        completed = pipeline.complete(factory)
        if force:
            click.echo(f"predicted {completed.computed.get('predictions', 0)} runs")
        click.echo(
            "brought up to date: "
            + (", ".join(f"{n} {step}" for step, n in completed.done.items()) or "nothing to do")
        )
        for step, server_id, error in completed.failed:
            click.echo(f"  {step} of server {server_id} not updated: {printable(error)}", err=True)
        unknown = _unknown_app_ids(factory, app_ids) if app_ids else []
    finally:
        engine.dispose()
    if unknown:
        click.echo(
            f"sparkscope analyze: no stored application {printable(', '.join(unknown))}", err=True
        )
        sys.exit(EXIT_SOME_FAILED)


def _unknown_app_ids(factory: Any, app_ids: tuple[str, ...]) -> list[str]:
    """The ids among ``app_ids`` that no stored application has."""
    from sqlalchemy import select

    from sparkscope.models.application import Application

    with factory() as session:
        known = set(
            session.scalars(select(Application.app_id).where(Application.app_id.in_(app_ids)))
        )
    return [a for a in dict.fromkeys(app_ids) if a not in known]


for _command in (fetch, dump, schedule, notify, prune):
    cli.add_command(_command)
cli.add_command(backtest)
cli.add_command(forecast)
cli.add_command(ingest)
cli.add_command(whatif_cli.whatif)
cli.add_command(whatif_cli.advise)
cli.add_command(whatif_cli.whatif_fit)


def main() -> None:
    """Entry point used by ``python -m sparkscope``."""
    cli()
