"""Real storage faults for tests: files and folders a process may not write, a SQLite database
that cannot grow (``PRAGMA max_page_count``: SQLite's own SQLITE_FULL), and a PostgreSQL
tablespace on a filesystem a few megabytes large (the server's own "No space left on device").

Root ignores file permissions, so a process that must meet them is started without the
capabilities that let it (:func:`unprivileged`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from sparkscope.db import make_engine
from tests.conftest import drop_pg_database

#: The environment variable the child's sitecustomize reads (pages the database may hold).
MAX_PAGES_ENV = "SPARKSCOPE_TEST_SQLITE_MAX_PAGES"


def unprivileged() -> tuple[str, ...]:
    """A command prefix under which file permissions apply (for root: without the capabilities
    that override them)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be made to apply")
    return (
        "setpriv",
        "--inh-caps=-all",
        "--bounding-set=-dac_override,-dac_read_search,-fowner,-linux_immutable",
        "--",
    )


def sqlite_page_limit(folder: Path) -> dict[str, str]:
    """Environment for a child Python in which every SQLite connection may hold at most
    ``$SPARKSCOPE_TEST_SQLITE_MAX_PAGES`` pages (set it next to what this returns): a
    sitecustomize module that sets SQLite's own limit through SQLAlchemy's connect event."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        textwrap.dedent(
            f"""\
            import os

            from sqlalchemy import event
            from sqlalchemy.engine import Engine

            _PAGES = os.environ.get("{MAX_PAGES_ENV}")
            if _PAGES:

                @event.listens_for(Engine, "connect")
                def _limit(dbapi_connection, _record):
                    if type(dbapi_connection).__module__.startswith("sqlite3"):
                        cursor = dbapi_connection.cursor()
                        cursor.execute("PRAGMA max_page_count = %d" % int(_PAGES))
                        cursor.close()
            """
        )
    )
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": f"{folder}{os.pathsep}{path}" if path else str(folder)}


def sqlite_pages(db_path: Path) -> int:
    """Pages the SQLite database holds now."""
    import sqlite3

    with sqlite3.connect(db_path) as conn:
        return int(conn.execute("PRAGMA page_count").fetchone()[0])


@contextmanager
def tiny_pg_database(
    server_url: str, template: str, size_mb: int
) -> Iterator[tuple[str, Callable[[int], None]]]:
    """A PostgreSQL database (copied from ``template``) in a tablespace on a tmpfs of
    ``size_mb`` megabytes, owned by the server's OS user, and ``leave(mb)``, which resizes that
    filesystem to what it holds now plus ``mb`` megabytes; skipped where this process cannot
    mount one or the server is not on this machine."""
    admin = make_engine(server_url, isolation_level="AUTOCOMMIT")
    mount = Path(f"/tmp/sparkscope-tiny-{uuid.uuid4().hex[:8]}")
    name = f"sparkscope_test_tiny_{uuid.uuid4().hex[:8]}"
    space = f"tiny_{uuid.uuid4().hex[:8]}"
    try:
        with admin.connect() as c:
            data_dir = Path(str(c.scalar(text("SHOW data_directory"))))
        if os.geteuid() != 0 or not data_dir.is_dir():
            pytest.skip("needs root (to mount a small tmpfs) and the PostgreSQL server's folder")
        owner = data_dir.stat()
        mount.mkdir()
        subprocess.run(
            [
                "mount",
                "-t",
                "tmpfs",
                "-o",
                f"size={size_mb}m,uid={owner.st_uid},gid={owner.st_gid},mode=700",
                "tmpfs",
                str(mount),
            ],
            check=True,
            capture_output=True,
        )
        with admin.connect() as c:
            c.execute(text(f"CREATE TABLESPACE {space} LOCATION '{mount}'"))
            c.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}" TABLESPACE {space}'))
        url = make_url(server_url).set(database=name).render_as_string(hide_password=False)

        def leave(mb: float) -> None:
            st = os.statvfs(mount)
            used_kb = (st.f_blocks - st.f_bfree) * st.f_frsize // 1024
            size_kb = used_kb + int(mb * 1024)
            subprocess.run(
                ["mount", "-o", f"remount,size={size_kb}k", str(mount)],
                check=True,
                capture_output=True,
            )

        yield url, leave
    finally:
        drop_pg_database(server_url, make_url(server_url).set(database=name).render_as_string())
        with admin.connect() as c:
            c.execute(text(f"DROP TABLESPACE IF EXISTS {space}"))
        admin.dispose()
        if mount.is_dir():
            subprocess.run(["umount", str(mount)], capture_output=True)
            mount.rmdir()
