"""Run a real Spark History Server (from the pyspark wheel) for tests and manual exploration.

`running_shs(log_dir)` starts the SHS JVM as a foreground child process on a free loopback port,
waits until its REST listing is filled, yields the base URL and always stops the JVM again.
Manual use: `python -m tests.support.shs serve DIR [--port N]`.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

HISTORY_SERVER_CLASS = "org.apache.spark.deploy.history.HistoryServer"
MIN_JAVA_MAJOR = 17
_STOP_GRACE_S = 15.0
_POLL_INTERVAL_S = 0.5
_LOG_TAIL_LINES = 40
_PR_SET_PDEATHSIG = 1
_BIND_ATTEMPTS = 3


class ShsStartError(RuntimeError):
    """The History Server did not start or did not list the expected applications in time."""


def spark_home() -> Path:
    """Return the Spark installation to use: $SPARK_HOME if valid, else the pyspark wheel."""
    env_home = os.environ.get("SPARK_HOME")
    if env_home and (Path(env_home) / "bin" / "spark-class").is_file():
        return Path(env_home)
    # find_spec avoids importing pyspark (slow, and it needs nothing from it but the path)
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("pyspark is not installed and SPARK_HOME is not set")
    return Path(spec.origin).parent


def _java_binary() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    return shutil.which("java")


def have_java_and_pyspark() -> bool:
    """Tell whether Java 17+ and a Spark installation with spark-class are available."""
    try:
        home = spark_home()
    except FileNotFoundError:
        return False
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        return False
    java = _java_binary()
    if java is None:
        return False
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    match = re.search(r'version "(\d+)', out.stderr + out.stdout)
    return match is not None and int(match.group(1)) >= MIN_JAVA_MAJOR


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    # Runs in the child before exec: if the test process is killed outright, the kernel sends
    # SIGTERM to the JVM, so no orphaned History Server keeps a port and a GB of heap.
    # PDEATHSIG survives exec (spark-class execs java) but fires when the *thread* that
    # started the child exits, so start the SHS from a long-lived thread (pytest's main one).
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _write_properties(path: Path, log_dir: Path, port: int) -> None:
    props = {
        # Hadoop's Path escapes the string itself, so a URI from as_uri() would be escaped twice
        "spark.history.fs.logDirectory": f"file:{log_dir.resolve()}",
        "spark.history.ui.port": str(port),
        "spark.history.fs.update.interval": "1s",
        "spark.history.retainedApplications": "200",
        # fail instead of silently binding port+1, where we would never look for it
        "spark.port.maxRetries": "0",
        "spark.history.fs.cleaner.enabled": "false",
    }
    lines = [f"{key}={_escape_property(value)}" for key, value in props.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _escape_property(value: str) -> str:
    # java.util.Properties reads backslash as an escape and ':' or '=' as separators
    escaped = value.replace("\\", "\\\\")
    for char in ":= ":
        escaped = escaped.replace(char, "\\" + char)
    return escaped


def _log_tail(log_path: Path) -> str:
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no SHS log written)"
    return "\n".join(lines[-_LOG_TAIL_LINES:])


def _list_app_count(base_url: str) -> int | None:
    try:
        with urllib.request.urlopen(f"{base_url}/api/v1/applications", timeout=5) as resp:
            return len(json.load(resp))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=_STOP_GRACE_S)


def _wait_ready(
    proc: subprocess.Popen[bytes],
    base_url: str,
    min_apps: int,
    timeout_s: float,
    log_path: Path,
) -> None:
    deadline = time.monotonic() + timeout_s
    seen: int | None = None
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise ShsStartError(
                f"History Server exited with code {code} before serving {base_url}; "
                f"log tail ({log_path}):\n{_log_tail(log_path)}"
            )
        seen = _list_app_count(base_url)
        if seen is not None and seen >= min_apps:
            return
        time.sleep(_POLL_INTERVAL_S)
    state = "never answered" if seen is None else f"listed {seen} of {min_apps} apps"
    raise ShsStartError(
        f"History Server at {base_url} {state} within {timeout_s:.0f}s; "
        f"log tail ({log_path}):\n{_log_tail(log_path)}"
    )


@contextlib.contextmanager
def running_shs(
    log_dir: Path,
    port: int | None = None,
    expect_apps: int | None = None,
    timeout_s: float = 120,
) -> Iterator[str]:
    """Serve `log_dir` with a real History Server and yield its base URL (http://127.0.0.1:PORT).

    Waits until /api/v1/applications lists `expect_apps` apps (at least one when None, none
    needed when 0). The JVM is stopped on exit, and killed if it ignores SIGTERM.
    """
    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        raise FileNotFoundError(f"event-log directory not found: {log_dir}")
    home = spark_home()
    min_apps = 1 if expect_apps is None else expect_apps

    with tempfile.TemporaryDirectory(prefix="sparkscope-shs-") as tmp:
        work = Path(tmp)
        for attempt in range(1, _BIND_ATTEMPTS + 1):
            chosen_port = free_port() if port is None else port
            base_url = f"http://127.0.0.1:{chosen_port}"
            log_path = work / f"shs-{attempt}.log"
            proc = _launch(home, log_dir, chosen_port, work, log_path)
            try:
                _wait_ready(proc, base_url, min_apps, timeout_s, log_path)
                break
            except ShsStartError:
                _stop(proc)
                # a free port can be taken between free_port() and the JVM binding it
                lost_race = port is None and "BindException" in _log_tail(log_path)
                if not lost_race or attempt == _BIND_ATTEMPTS:
                    raise
            except BaseException:
                _stop(proc)
                raise
        try:
            yield base_url
        finally:
            _stop(proc)


def _launch(
    home: Path, log_dir: Path, port: int, work: Path, log_path: Path
) -> subprocess.Popen[bytes]:
    conf_dir = work / "conf"  # empty, so no spark-defaults.conf or spark-env.sh leaks in
    conf_dir.mkdir(exist_ok=True)
    props_path = work / "history.properties"
    _write_properties(props_path, log_dir, port)
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HISTORY_OPTS"}
    env.update(
        SPARK_HOME=str(home),
        SPARK_CONF_DIR=str(conf_dir),
        SPARK_PID_DIR=str(work),
        SPARK_LOG_DIR=str(work),
        # the web UI binds to SPARK_LOCAL_IP (default 0.0.0.0); keep it on loopback
        SPARK_LOCAL_IP="127.0.0.1",
    )
    cmd = [
        str(home / "bin" / "spark-class"),
        HISTORY_SERVER_CLASS,
        "--properties-file",
        str(props_path),
    ]
    with log_path.open("wb") as log_file:
        return subprocess.Popen(
            cmd,
            env=env,
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _serve(args: argparse.Namespace) -> int:
    # treat `kill`/`timeout` like Ctrl-C so the finally block stops the JVM cleanly
    signal.signal(signal.SIGTERM, _raise_interrupt)
    with running_shs(Path(args.dir), port=args.port, expect_apps=args.expect_apps) as url:
        print(f"Spark History Server serving {args.dir} at {url} (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: `python -m tests.support.shs serve DIR [--port N]`."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.shs")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve an event-log directory until Ctrl-C")
    serve.add_argument("dir", help="directory holding Spark event logs")
    serve.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    serve.add_argument(
        "--expect-apps", type=int, default=None, help="wait until this many apps are listed"
    )
    args = parser.parse_args(argv)
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
