"""The SQLite settings every connection gets: a new database is made with Sparkscope's page size
and the write-ahead log; a database made with other pages keeps them and works as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text

from sparkscope import migrate
from sparkscope.db import SQLITE_PAGE_SIZE, make_engine


def _pragma(url: str, name: str) -> object:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(f"PRAGMA {name}")).scalar()
    finally:
        engine.dispose()


def test_a_new_database_gets_the_page_size_and_the_log(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    migrate.upgrade(url)
    assert SQLITE_PAGE_SIZE != 4096  # SQLite's own default: the setting must change something
    assert _pragma(url, "page_size") == SQLITE_PAGE_SIZE
    assert _pragma(url, "journal_mode") == "wal"


def test_a_database_made_with_other_pages_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # made by another SQLite: 4 KiB pages, a rollback journal
        conn.execute("PRAGMA page_size=4096")
        conn.execute("CREATE TABLE kept (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO kept (name) VALUES ('first')")
    conn.close()
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO kept (name) VALUES ('second')"))
        with engine.connect() as conn:
            names = conn.execute(text("SELECT name FROM kept ORDER BY id")).scalars().all()
    finally:
        engine.dispose()
    assert names == ["first", "second"]
    assert _pragma(url, "page_size") == 4096
    assert _pragma(url, "journal_mode") == "wal"
