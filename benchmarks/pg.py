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
    server_url = out.stdout.strip().splitlines()[-1]
    name = f"sparkscope_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)
