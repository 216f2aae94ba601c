"""`sparkscope schedule`: the crontab line (or the loop, in a container) that runs the periodic
work one step after another under one lock: `fetch`, then `notify` (alerts and digests), then
`prune` when a retention is given."""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click

from sparkscope.cli.common import fail_usage, pass_config
from sparkscope.config.loader import Config

log = logging.getLogger("sparkscope.schedule")

CRON_MARK = "# sparkscope-fetch"


@click.command()
@click.option("--every", default="10m", show_default=True, help="Interval: 5m, 10m, 1h ...")
@click.option("--install", is_flag=True, help="Add (or replace) the line in your crontab.")
@click.option(
    "--log-file",
    default=None,
    help="Where cron appends the output (default: data_dir/fetch.log).",
)
@click.option(
    "--foreground", is_flag=True, help="Run the steps in a loop instead (for containers)."
)
@click.option(
    "--prune-days",
    type=click.IntRange(1, 36_500),
    default=None,
    help="Also run `prune --keep-days N` after every fetch (default: keep everything).",
)
@pass_config(database="none")
def schedule(
    config: Config,
    every: str,
    install: bool,
    log_file: str | None,
    foreground: bool,
    prune_days: int | None,
) -> None:
    """Print (or install) the crontab line that runs `sparkscope fetch` and then `sparkscope
    notify` (and `prune`, with --prune-days) every interval."""
    try:
        minutes = parse_interval(every)
    except ValueError as exc:
        fail_usage(f"--every: {exc}")
    if foreground:
        _loop(minutes, prune_days)
        return
    line = crontab_line(minutes, config, log_file, prune_days)
    if not install:
        click.echo(line)
        return
    if shutil.which("crontab") is None:
        fail_usage("crontab is not installed; add the line printed without --install by hand")
    install_crontab(line)
    click.echo(f"installed: {line}")


def parse_interval(text: str) -> int:
    """'10m', '1h', '30' (minutes) -> minutes; must divide an hour or a day evenly for cron."""
    m = re.fullmatch(r"\s*(\d+)\s*([mh]?)\s*", text)
    if not m:
        raise ValueError(f"expected minutes like 10m or hours like 1h, got {text!r}")
    minutes = int(m.group(1)) * (60 if m.group(2) == "h" else 1)
    if (
        minutes < 1
        or (minutes < 60 and 60 % minutes)
        or (minutes >= 60 and (minutes % 60 or 24 % (minutes // 60)))
    ):
        raise ValueError(f"{text!r} does not divide an hour or a day evenly")
    return minutes


def cron_spec(minutes: int) -> str:
    """The five cron time fields for an interval."""
    if minutes < 60:
        return "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"
    hours = minutes // 60
    return "0 * * * *" if hours == 1 else f"0 */{hours} * * *"


def steps(prune_days: int | None) -> list[list[str]]:
    """The commands one scheduled run runs, in order. Each runs whatever the one before it
    returned: an unreachable History Server must not hold back the alerts and digests of what
    is already stored, nor their retries."""
    out = [["fetch"], ["notify"]]
    if prune_days is not None:
        out.append(["prune", "--keep-days", str(prune_days)])
    return out


def crontab_line(
    minutes: int, config: Config, log_file: str | None, prune_days: int | None = None
) -> str:
    """A crontab line with the environment, a lock and a log file."""
    # The script installed beside this interpreter (a virtualenv's bin/), else the one on PATH.
    beside = Path(sys.executable).parent / "sparkscope"
    found = shutil.which("sparkscope")
    if beside.is_file():
        exe = shlex.quote(str(beside))
    elif found:
        exe = shlex.quote(found)
    else:
        exe = f"{shlex.quote(sys.executable)} -m sparkscope"
    env = []
    if config.source:
        env.append(f"SPARKSCOPE_CONFIG={shlex.quote(str(Path(config.source).resolve()))}")
    if os.environ.get("SPARKSCOPE_DATABASE_URL"):
        env.append(f"SPARKSCOPE_DATABASE_URL={shlex.quote(os.environ['SPARKSCOPE_DATABASE_URL'])}")
    log_path = Path(log_file or Path(config.data_dir) / "fetch.log").expanduser()
    lock = Path(config.data_dir).expanduser() / "fetch.cron-lock"
    script = "; ".join(f"{exe} {shlex.join(step)}" for step in steps(prune_days))
    # flock -n: a run still going when the next one starts makes the new one exit at once; the
    # database lock inside `fetch` covers runs started from elsewhere.
    command = (
        f"flock -n {shlex.quote(str(lock))} sh -c {shlex.quote(script)} "
        f">> {shlex.quote(str(log_path))} 2>&1"
    )
    return f"{cron_spec(minutes)} {' '.join(env + [command])} {CRON_MARK}"


def install_crontab(line: str) -> None:
    """Replace our line in the user's crontab (idempotent)."""
    current = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    lines = current.stdout.splitlines() if current.returncode == 0 else []
    kept = [x for x in lines if not x.rstrip().endswith(CRON_MARK)]
    kept.append(line)
    subprocess.run(["crontab", "-"], input="\n".join(kept) + "\n", text=True, check=True)


def _loop(minutes: int, prune_days: int | None) -> None:
    while True:
        started = time.monotonic()
        for step in steps(prune_days):
            code = subprocess.call([sys.executable, "-m", "sparkscope", *step])
            log.info("%s exited with %d", step[0], code)
        log.info("next run in %d min", minutes)
        time.sleep(max(0.0, minutes * 60 - (time.monotonic() - started)))
