"""A new database on a throwaway PostgreSQL started by scripts/pg-start.sh, for the benchmarks."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent


def throwaway_database(datadir: str | None = None, port: int | None = None) -> str:
    """URL of a new, empty database; the server is scripts/pg-start.sh's default one unless a
    data folder and port are given (a server of the caller's own, stopped by the caller)."""
    args = [str(ROOT / "scripts" / "pg-start.sh")]
    if datadir is not None:
        args += [datadir, str(port or 54391)]
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return throwaway_database_on(out.stdout.strip().splitlines()[-1])


def throwaway_database_on(server_url: str) -> str:
    """URL of a new, empty database on the server of ``server_url`` (dropped with
    :func:`drop_database`, or with the server)."""
    name = f"sparkscope_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(_admin_url(server_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    """Drop a database :func:`throwaway_database_on` made."""
    name = make_url(url).database
    admin = create_engine(_admin_url(url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _admin_url(url: str) -> str:
    parsed = make_url(url).set(database="postgres")
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)
