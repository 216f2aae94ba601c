"""`sparkscope ingest --spark LOGDIR`: read a folder of event logs with a Spark job."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from sparkscope.cli.common import EXIT_SOME_FAILED, EXIT_UNREACHABLE, fail_usage, pass_config
from sparkscope.config.loader import Config, ServerConfig

log = logging.getLogger("sparkscope.fetch")


def server_for_event_logs(location: str) -> ServerConfig:
    """An event-log source that is not in the config, named after its folder (or URL)."""
    parts = urlsplit(location)
    if len(parts.scheme) > 1 and parts.scheme != "file":
        name = location.rstrip("/")
    else:
        path = Path(parts.path if parts.scheme == "file" else location).expanduser().resolve()
        location = str(path)
        name = f"eventlogs:{path.name or path}"
    return ServerConfig(name=name, url=location, event_logs=location)


@click.command()
@click.option(
    "--spark",
    "location",
    required=True,
    help="Folder or fsspec URL of the event logs (as the executors see it too).",
)
@click.option("--master", help="Spark master (default: spark-submit's, else local[*]).")
@click.option(
    "--conf", "confs", multiple=True, help="A Spark setting KEY=VALUE for the job (repeatable)."
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Logs per Spark job; the driver holds at most two batches of results.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the newest N logs.")
@click.option("--no-analyze", is_flag=True, help="Load only; findings are computed at first view.")
@pass_config(database="setup")
def ingest(
    config: Config,
    location: str,
    master: str | None,
    confs: tuple[str, ...],
    batch: int,
    limit: int | None,
    no_analyze: bool,
) -> None:
    """Read the event logs of LOGDIR with Spark, one task per log, and load them like a fetch.

    Exit codes as `fetch`: 0 all loaded, 1 some failed, 2 usage/config error, 3 logs unreachable.
    """
    from fetcher.eventlog.read.fs import is_url
    from fetcher.ingest import ingest_spark
    from fetcher.lock import FetchLocked, fetch_lock
    from fetcher.options import FetchOptions
    from fetcher.runs import close_interrupted_runs
    from sparkscope import migrate
    from sparkscope.analysis.heuristics_config import load_heuristics
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.pipeline.steps import Pipeline

    server = server_for_event_logs(location)
    if not is_url(location) and not os.path.isdir(server.url):
        fail_usage(f"the event-log folder {server.url} does not exist")
    settings: dict[str, str] = {}
    for item in confs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail_usage(f"--conf: expected KEY=VALUE, got {item!r}")
        settings[key.strip()] = value
    registry = None if no_analyze else load_heuristics(config.heuristics_path)
    engine = make_engine(config.database_url)
    if engine.dialect.name == "sqlite":
        migrate.upgrade(config.database_url)
    factory = make_sessionmaker(engine)
    pipeline = Pipeline(registry=registry, predictions=config.predictions)
    started = time.perf_counter()
    spark = _session(master, settings)
    try:
        with fetch_lock(engine):
            close_interrupted_runs(factory)
            result = ingest_spark(
                factory,
                server,
                config.fetcher,
                FetchOptions(limit=limit),
                spark.sparkContext,
                pipeline,
                batch,
            )
            completed = pipeline.complete(factory)
    except FetchLocked as exc:
        click.echo(f"sparkscope ingest: another fetch is running ({exc}); exiting")
        return
    finally:
        spark.stop()
        engine.dispose()
    r = result
    click.echo(
        f"{r.server}: seen {r.seen}, loaded {r.loaded}, skipped {r.skipped}, "
        f"failed {len(r.failed)}; {r.requests} logs read on Spark, {r.bytes / 1e6:.1f} MB, "
        f"{r.seconds:.1f} s"
    )
    for app_id, error in r.failed:
        click.echo(f"  failed {app_id}: {error}")
    if r.gave_up:
        click.echo(
            f"  gave up after {config.fetcher.max_app_failures} failures: {', '.join(r.gave_up)}"
        )
    if r.unreachable:
        click.echo(f"  stopped: {r.unreachable}", err=True)
    click.echo(f"total: loaded {r.loaded} applications in {time.perf_counter() - started:.1f} s")
    for step, server_id, error in completed.failed:
        click.echo(f"  {step} of server {server_id} not updated (retried next run): {error}")
    if r.unreachable:
        sys.exit(EXIT_UNREACHABLE)
    if r.failed:
        sys.exit(EXIT_SOME_FAILED)


def _session(master: str | None, settings: dict[str, str]) -> Any:
    """The Spark session of the job (spark-submit's settings win where it set them)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        fail_usage("ingest --spark needs pyspark (pip install pyspark) and Java")
    builder = SparkSession.builder.appName("sparkscope-ingest")
    if master:
        builder = builder.master(master)
    if (master or "local").startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # local mode: the Python workers run this interpreter (and see its packages)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
