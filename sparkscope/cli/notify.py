"""`sparkscope notify`: send the alerts and digests that are due (run by `schedule` after each
fetch, or alone from cron), print what would be sent, or check the configuration.

Exit codes: 0 nothing failing, 1 a channel is failing (its messages wait and are retried by later
runs), 2 a configuration problem (with --check: a secret's variable not set, an unknown heuristic).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys

import click

from sparkscope.cli.common import EXIT_SOME_FAILED, EXIT_USAGE, fail_usage, pass_config
from sparkscope.config.loader import Config
from sparkscope.config.notifications.model import NotificationSettings

log = logging.getLogger("sparkscope.cli.notify")


def _check(config: Config, settings: NotificationSettings) -> None:
    from heuristics.registry import available_heuristics
    from sparkscope.config.notifications.section import check
    from sparkscope.notify.periods import next_boundary
    from sparkscope.notify.runner import blocked
    from sparkscope.notify.status import channel_target, schedule_text, triggers_text

    names = [h.name for h in available_heuristics()]
    problems = check(settings, os.environ, names)
    now = dt.datetime.now(dt.UTC)
    for c in settings.channels:
        state = blocked(c, os.environ) or "ready"
        click.echo(f"channel {c.name} ({c.type}): {channel_target(c)}: {state}")
    for r in settings.rules:
        click.echo(f"rule {r.name}: {triggers_text(r)} -> {', '.join(r.channels)}")
    for d in settings.digests:
        at = next_boundary(d, now).isoformat().replace("+00:00", "Z")
        click.echo(f"digest {d.name}: {schedule_text(d)}, next at {at} -> {', '.join(d.channels)}")
    for m in settings.mutes:
        state = "in force" if m.until > now else "expired"
        click.echo(f"mute {m.label}: until {m.until.isoformat()} ({state})")
    if problems:
        for p in problems:
            click.echo(f"problem: {p}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo("notifications: configuration and secrets OK")


@click.command()
@click.option("--dry-run", is_flag=True, help="Print what would be sent; change and send nothing.")
@click.option("--check", "check_only", is_flag=True, help="Check the configuration and secrets.")
@click.option("--retry-dead", is_flag=True, help="Give messages that were given up on new tries.")
@click.option(
    "--limit", type=click.IntRange(1, 100_000), default=500, show_default=True,
    help="Send at most this many messages in this run.",
)  # fmt: skip
@pass_config(database="none")
def notify(config: Config, dry_run: bool, check_only: bool, retry_dead: bool, limit: int) -> None:
    """Send the alerts and digests that are due, each once; retry failed ones with backoff."""
    settings = config.notifications
    if settings is None:
        if check_only:
            fail_usage("no notifications: section in the configuration")
        return
    if check_only:
        _check(config, settings)
        return
    from sqlalchemy.exc import DBAPIError

    from sparkscope import migrate
    from sparkscope.db import describe_error, error_reason, make_engine, make_sessionmaker
    from sparkscope.notify.digests import DigestContext
    from sparkscope.notify.runner import run
    from sparkscope.notify.store import OutboxStore

    problem = migrate.database_problem(config.database_url)
    if problem:
        fail_usage(problem)
    engine = make_engine(config.database_url)
    factory = make_sessionmaker(engine)
    ctx = DigestContext(settings.base_url, config.prices.core_hour, config.prices.currency)
    try:
        if retry_dead:
            n = OutboxStore(factory).retry_dead(dt.datetime.now(dt.UTC))
            click.echo(f"notify: {n} message(s) given up on are due again")
        report = run(factory, settings, os.environ, ctx, dry_run=dry_run, limit=limit)
    except DBAPIError as exc:
        fail_usage(describe_error(config.database_url, exc) or f"database: {error_reason(exc)}")
    finally:
        engine.dispose()
    if dry_run:
        for line in report.would_send:
            click.echo(f"would send {line}")
        click.echo(f"notify --dry-run: {len(report.would_send)} message(s) due; nothing sent")
        return
    click.echo(
        f"notify: sent {report.sent}, failed {report.failed}, given up {report.dead}, "
        f"digests written {report.digests}, recovered {report.recovered}"
    )
    for channel, why in sorted(report.failing.items()):
        click.echo(f"  channel {channel} failing: {why}")
    if report.failing:
        sys.exit(EXIT_SOME_FAILED)
