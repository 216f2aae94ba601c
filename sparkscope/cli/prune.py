"""`sparkscope prune --keep-days N`: delete the applications that ended more than N days ago, with
everything stored for them, in bounded batches (from cron, or by `schedule --prune-days N`)."""

from __future__ import annotations

import click

from sparkscope.cli.common import pass_config
from sparkscope.config.loader import Config


@click.command()
@click.option(
    "--keep-days", type=click.IntRange(1, 36_500), required=True,
    help="Keep the applications that ended within this many days.",
)  # fmt: skip
@click.option(
    "--batch", type=click.IntRange(1, 100_000), default=1000, show_default=True,
    help="Applications deleted per transaction.",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@pass_config
def prune(config: Config, keep_days: int, batch: int, dry_run: bool) -> None:
    """Delete old applications with their rows, findings, predictions and summary counts."""
    from sparkscope.db import make_engine, make_sessionmaker, now_ms
    from sparkscope.pipeline.retention import count_old, cutoff_ms
    from sparkscope.pipeline.retention import prune as run_prune

    engine = make_engine(config.database_url)
    factory = make_sessionmaker(engine)
    try:
        if dry_run:
            with factory() as session:
                n = count_old(session, cutoff_ms(now_ms(), keep_days))
            click.echo(f"prune --dry-run: {n} application(s) ended more than {keep_days} days ago")
            return
        done = run_prune(factory, now_ms(), keep_days, batch)
    finally:
        engine.dispose()
    click.echo(
        f"prune: deleted {done.applications} application(s) that ended more than {keep_days} "
        f"days ago and {done.messages} old notification(s), in {done.seconds:.1f} s"
    )
