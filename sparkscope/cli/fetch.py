"""`sparkscope fetch` and `dump`: reading History Servers (cron runs fetch through `schedule`)."""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from sparkscope.cli.common import (
    EXIT_OK,
    EXIT_SOME_FAILED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    fail_usage,
    pass_config,
)
from sparkscope.config.loader import Config, ServerConfig
from sparkscope.config.parsing import SERVER_URL, ConfigError
from sparkscope.printable import printable

log = logging.getLogger("sparkscope.fetch")


def server_for_url(url: str) -> ServerConfig:
    """A server that is not in the config, named after its host and port (or folder name).

    The URL is validated as ``servers[].url`` is (ConfigError naming ``--url``); credentials in
    it are kept apart and sent as basic auth."""
    try:
        url = SERVER_URL(url)
    except ValueError as exc:
        raise ConfigError(None, "--url", str(exc)) from None
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        port = parts.port or (443 if parts.scheme == "https" else 80)
        name = f"{parts.hostname}:{port}"
    else:
        path = Path(parts.path if parts.scheme == "file" else url).expanduser().resolve()
        name = path.name or str(path)
        url = str(path)
    return ServerConfig.from_url(name=name, url=url.rstrip("/"))


def parse_since(text: str) -> int:
    """An ISO date or date-time (UTC unless it says otherwise) -> epoch ms."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"not an ISO date or date-time: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def _servers(
    config: Config, names: tuple[str, ...], url: str | None, event_logs: str | None = None
) -> list[ServerConfig]:
    if url and event_logs:
        raise ConfigError(None, "--url/--event-logs", "pass one of them, not both")
    if event_logs:
        from sparkscope.cli.ingest import server_for_event_logs

        return [server_for_event_logs(event_logs)]
    if url:
        return [server_for_url(url)]
    if names:
        return [config.server(n) for n in names]
    if not config.servers:
        raise ConfigError(
            config.source, "servers", "no History Server configured; pass --url or add servers"
        )
    return list(config.servers)


def _progress(enabled: bool) -> Any:
    """A progress callback: a bar on a terminal, a log line every 25 apps otherwise."""
    state: dict[str, Any] = {}

    def report(done: int, total: int, app_id: str) -> None:
        if enabled:
            bar = state.get("bar")
            if bar is None:
                bar = click.progressbar(length=total, label="fetching", file=sys.stderr)
                bar.__enter__()
                state["bar"] = bar
            bar.update(1)
            if done == total:
                bar.__exit__(None, None, None)
                state.pop("bar")
        elif done % 25 == 0 or done == total:
            log.info("progress: %d/%d applications", done, total)

    return report


@click.command()
@click.option(
    "--server",
    "server_names",
    multiple=True,
    help="Configured server name (repeatable; default: all).",
)
@click.option("--url", help="Fetch from a server not in the config (URL, folder or file:// URL).")
@click.option(
    "--event-logs",
    "event_logs",
    help="Read the Spark event logs of this folder (or fsspec URL) instead of a History Server.",
)
@click.option("--since", help="Backfill: apps that ended at or after this ISO time (UTC).")
@click.option(
    "--backfill", is_flag=True, help="List the whole history and load every app still missing."
)
@click.option(
    "--reconcile",
    is_flag=True,
    help="Reconcile now: list fetcher.reconcile_days below the watermark for apps listed late.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the newest N completed apps.")
@click.option("--app-id", "app_ids", multiple=True, help="Re-fetch this application (repeatable).")
@click.option("--truncate", is_flag=True, help="Empty the database first.")
@click.option("--yes", is_flag=True, help="Do not ask before --truncate.")
@click.option(
    "--threads", type=click.IntRange(1, 64), help="Worker threads (default: fetcher.threads)."
)
@click.option("--no-analyze", is_flag=True, help="Load only; findings are computed at first view.")
@pass_config(database="setup")
def fetch(
    config: Config,
    server_names: tuple[str, ...],
    url: str | None,
    event_logs: str | None,
    since: str | None,
    backfill: bool,
    reconcile: bool,
    limit: int | None,
    app_ids: tuple[str, ...],
    truncate: bool,
    yes: bool,
    threads: int | None,
    no_analyze: bool,
) -> None:
    """Fetch completed applications from the History Server(s) into the database.

    Exit codes: 0 all loaded, 1 some apps failed (or loaded without a part, such as their SQL
    executions), 2 usage/config error, 3 server unreachable.
    """
    from fetcher.eventlog.read.fs import is_url
    from fetcher.job import run_server
    from fetcher.lock import FetchLocked, fetch_lock
    from fetcher.options import FetchOptions
    from fetcher.runs import close_interrupted_runs
    from fetcher.shs.client import is_local_source, local_source_path
    from sparkscope import migrate
    from sparkscope.analysis.heuristics_config import load_heuristics
    from sparkscope.db import make_engine, make_sessionmaker
    from sparkscope.pipeline.steps import Pipeline

    try:
        servers = _servers(config, server_names, url, event_logs)
    except ConfigError as exc:
        fail_usage(f"config error: {exc}")
    for s in servers:
        if s.event_logs and not is_url(s.event_logs) and not Path(s.url).is_dir():
            where = "" if event_logs else f"server {s.name}: "
            fail_usage(f"{where}the event-log folder {s.url} does not exist")
        if s.event_logs:
            continue
        if is_local_source(s.url) and not local_source_path(s.url).is_dir():
            where = "" if url else f"server {s.name}: "
            fail_usage(f"{where}the folder {local_source_path(s.url)} does not exist")
        if s.verify_tls and s.ca_bundle and not Path(s.ca_bundle).expanduser().is_file():
            fail_usage(f"server {s.name}: servers[].ca_bundle {s.ca_bundle} is not a file")
    try:
        since_ms = parse_since(since) if since else None
    except click.BadParameter as exc:
        fail_usage(f"--since: {exc.message}")
    if backfill and since:
        fail_usage("--backfill lists the whole history; --since lists from a date: pick one")
    registry = None
    if not no_analyze:
        try:
            registry = load_heuristics(config.heuristics_path)
        except ConfigError as exc:
            log.warning("not analysing (fix the heuristics config): %s", exc)
    engine = make_engine(config.database_url)
    factory = make_sessionmaker(engine)
    opts = FetchOptions(
        since_ms=since_ms,
        limit=limit,
        app_ids=app_ids,
        threads=threads,
        backfill=backfill,
        reconcile=reconcile,
    )
    pipeline = Pipeline(
        registry=registry,
        predictions=config.predictions,
        notifications=config.notifications,
        prices=config.prices,
    )
    started = time.perf_counter()
    try:
        with fetch_lock(engine):
            # The embedded default sets itself up, holding the lock: a second first-ever fetch
            # started meanwhile finds the lock taken, never a schema half made.
            if engine.dialect.name == "sqlite":
                migrate.upgrade(config.database_url)
            if truncate:
                if not yes and not click.confirm("Delete every stored application?", default=False):
                    click.echo("not truncated; nothing fetched")
                    sys.exit(EXIT_USAGE)
                _truncate(factory)
            if close_interrupted_runs(factory):
                log.info("an earlier fetch was interrupted; this run carries on from its watermark")
            results = [
                run_server(
                    factory,
                    s,
                    config.fetcher,
                    opts,
                    pipeline=pipeline,
                    progress=_progress(sys.stderr.isatty()),
                )
                for s in servers
            ]
            # What is derived beyond each application (predictions, what-if models), from the
            # ledger: this run's work and whatever an earlier run left undone.
            completed = pipeline.complete(factory)
    except FetchLocked as exc:
        click.echo(f"sparkscope fetch: another fetch is running ({exc}); exiting")
        sys.exit(EXIT_OK)
    finally:
        engine.dispose()
    seconds = time.perf_counter() - started
    for r in results:
        click.echo(
            f"{r.server}: seen {r.seen}, loaded {r.loaded}, skipped {r.skipped}, "
            f"failed {len(r.failed)}; {r.requests} requests, {r.bytes / 1e6:.1f} MB, {r.seconds:.1f} s"
        )
        for app_id, error in r.failed:
            click.echo(f"  failed {printable(app_id)}: {printable(error)}")
        for app_id, error in r.partial:
            click.echo(
                f"  loaded {printable(app_id)} in part (retried next run): {printable(error)}"
            )
        if r.gave_up:
            click.echo(
                f"  gave up after {config.fetcher.max_app_failures} failures: "
                f"{printable(', '.join(r.gave_up))}"
            )
        if r.unreachable:
            click.echo(f"  stopped: {printable(r.unreachable)}", err=True)
    total_loaded = sum(r.loaded for r in results)
    click.echo(f"total: loaded {total_loaded} applications in {seconds:.1f} s")
    for step, server_id, error in completed.failed:
        click.echo(
            f"  {step} of server {server_id} not updated (retried next run): {printable(error)}"
        )
    if any(r.unreachable for r in results):
        sys.exit(EXIT_UNREACHABLE)
    if any(r.failed or r.partial for r in results):
        sys.exit(EXIT_SOME_FAILED)


@click.command()
@click.option("--server", "server_url", required=True, help="History Server URL to record from.")
@click.option(
    "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write."
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the newest N completed apps.")
@click.option("--app-id", "app_ids", multiple=True, help="Only this application (repeatable).")
@pass_config(database="none")
def dump(
    config: Config, server_url: str, out_dir: str, limit: int | None, app_ids: tuple[str, ...]
) -> None:
    """Record a server's responses into a folder that `fetch --url DIR` replays."""
    from fetcher.dump import dump_server
    from fetcher.shs.client import ShsError

    try:
        server = server_for_url(server_url)
    except ConfigError as exc:
        fail_usage(f"config error: {exc}")
    try:
        stats = dump_server(server, config.fetcher, Path(out_dir), limit, app_ids)
    except ShsError as exc:
        click.echo(f"sparkscope dump: {exc}", err=True)
        sys.exit(EXIT_UNREACHABLE)
    click.echo(
        f"recorded {stats['apps']} applications, {stats['requests']} requests into {out_dir}"
    )


def _truncate(factory: Any) -> None:
    from sparkscope.models.application import Application
    from sparkscope.models.fetch import FetchFailure, FetchRun, FetchWatermark, HistoryServer
    from sparkscope.models.summary import ApplicationName, DaySummary

    with factory() as session, session.begin():
        for model in (
            FetchWatermark,
            FetchFailure,
            FetchRun,
            Application,
            HistoryServer,
            DaySummary,
            ApplicationName,
        ):
            session.query(model).delete()
