"""Browsing every page and API route leaves the database unchanged, on PostgreSQL and on SQLite.

The fleet mixes the web fixtures with the 21 recorded applications in every analysis state: scored
under the config in force, scored under an older config (stale), never scored, and with an
unreadable results document. Stale pages are scored in memory; only `fetch`/`analyze` store.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from click.testing import CliRunner
from flask import Flask
from sqlalchemy import Engine, create_engine, inspect, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from heuristics.registry import build_registry
from sparkscope.analysis.heuristics_config import load_heuristics
from sparkscope.analysis.scoring import analyze_apps
from sparkscope.cli.main import cli
from sparkscope.config.loader import BUNDLED_CONFIG_DIR
from sparkscope.db import make_engine
from sparkscope.models.analysis import Analysis
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.present.catalogs import HISTORY_METRICS, SORT_KEYS
from sparkscope.present.display import SEVERITY_NAMES
from tests.fetcher.recorded import RECORDING
from tests.sparkscope.web.conftest import make_app, populate

CURRENT = load_heuristics(str(BUNDLED_CONFIG_DIR / "heuristics.yaml"))
#: An older config: its results are stale under the bundled one.
OLDER = build_registry({"task_granularity": {"tiny_min_tasks_per_slot": 5000}})


def _load_fleet(url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Fill ``url``; return the application pks of each analysis state."""
    engine = make_engine(url)
    with Session(engine) as session:
        populate(session, CURRENT.fingerprint)
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", url)
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--no-analyze"])
    assert result.exit_code == 0, result.output
    with Session(engine) as session:
        pks = list(
            session.scalars(
                select(Application.id)
                .where(Application.analysis_fingerprint.is_(None))
                .order_by(Application.app_id)
            )
        )
        assert len(pks) == 21
        groups = {"current": pks[0:7], "stale": pks[7:14], "never": pks[14:20], "garbage": pks[20:]}
        analyze_apps(session, groups["current"] + groups["garbage"], CURRENT)
        analyze_apps(session, groups["stale"], OLDER)
        session.execute(
            update(Analysis)
            .where(Analysis.application_id.in_(groups["garbage"]))
            .values(results='[{"severity": 3}]')
        )
        session.commit()
    engine.dispose()
    return groups


def _snapshot(engine: Engine) -> dict[str, tuple[int, str]]:
    """Per table: its row count and a digest of every row's values, in key order."""
    out = {}
    with engine.connect() as conn:
        for table in sorted(inspect(conn).get_table_names()):
            cols = ", ".join(f'"{c["name"]}"' for c in inspect(conn).get_columns(table))
            digest = hashlib.sha256()
            count = 0
            for row in conn.execute(text(f'SELECT {cols} FROM "{table}" ORDER BY {cols}')):
                values = tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                digest.update(repr(values).encode())
                count += 1
            out[table] = (count, digest.hexdigest())
    return out


def _urls(app: Flask, engine: Engine) -> list[str]:
    """Every GET route with the arguments that reach its branches, for every application."""
    with Session(engine) as session:
        apps = session.execute(
            select(Application.app_id, Application.attempt_id, HistoryServer.name, Application.name)
            .join(HistoryServer, HistoryServer.id == Application.server_id)
            .order_by(Application.id)
        ).all()
    heuristics = [e.name for e in CURRENT.entries]
    urls = ["/", "/?days=90", "/search", "/api/apps", "/help", "/help/", "/compare", "/history"]
    urls += ["/whatif", "/advise", "/whatif?app_id=nope", "/advise?name=nope"]
    urls += [f"/help/{h}" for h in heuristics] + ["/help/no_such_heuristic"]
    for query in (
        *({"sort": s, "order": o} for s in SORT_KEYS for o in ("asc", "desc")),
        *({"severity": s} for s in SEVERITY_NAMES),
        *({"severity": s, "severity_mode": "exactly"} for s in (*SEVERITY_NAMES, "unknown")),
        {"verdict": "regression", "sort": "impact"},
        *({"heuristic": h} for h in heuristics),
        {"since": "7d", "user": "alice", "queue": "etl", "server": "prod", "page": "2"},
        {"name": "job", "start_from": "2020-01-01", "end_to": "2100-01-01"},
        {"severity": "bogus"},
    ):
        urls += [f"/search?{urlencode(query)}", f"/api/apps?{urlencode(query)}"]
    pairs = list(zip(apps, apps[1:], strict=False))
    for app_id, attempt, server, name in apps:
        pinned = urlencode({"server": server, "attempt": attempt or ""})
        urls += [f"/apps/{app_id}?{pinned}", f"/api/apps/{app_id}?{pinned}"]
        urls += [f"/apps/{app_id}?{pinned}&stages=all&findings_sort=impact"]
        urls += [f"/api/apps/{app_id}/whatif?{pinned}&executors=1,2,4&input_scale=2"]
        urls += [f"/api/apps/{app_id}/sql?{pinned}", f"/apps/{app_id}?{pinned}&query=0"]
        urls += [f"/api/advise?{urlencode({'name': name, 'deadline': '30m', 'server': server})}"]
        urls += [f"/apps/{app_id}/whatif?{pinned}&executors=1,2,4&deadline=10m"]
        urls += [f"/apps/{app_id}/stages/{s}/0?{pinned}" for s in (0, 1, 9999)]
        urls += [f"/apps/{app_id}/timeline?{pinned}"]
        urls += [f"/advise?{urlencode({'name': name, 'server': server})}"]
        urls += [
            f"/history?{urlencode({'name': name})}",
            f"/api/history?{urlencode({'name': name})}",
        ]
    for metric in HISTORY_METRICS:
        query = urlencode({"name": apps[-1].name, "metric": metric})
        urls += [f"/history?{query}", f"/api/history?{query}"]
    for left, right in pairs:
        query = urlencode(
            {"left": left[0], "right": right[0], "left_server": left[2], "right_server": right[2]}
        )
        urls += [f"/compare?{query}", f"/api/compare?{query}"]
        picker = urlencode({"left": left[0], "left_server": left[2]})
        urls += [f"/compare?{picker}"]
    for x in ("start", "input", "executors"):
        urls += [f"/history?{urlencode({'name': apps[-1].name, 'x': x})}"]
    urls += [f"/history?{urlencode({'name': apps[-1].name[:-2] + 'zz'})}"]
    # Errors: unknown, ambiguous (two servers), missing parameters.
    urls += ["/apps/nope", "/api/apps/nope", "/apps/app-dup", "/api/apps/app-dup"]
    urls += ["/api/compare?left=app-001", "/api/history", "/compare?left=nope&right=app-001"]
    urls += ["/api/apps/nope/whatif", "/api/advise?name=nope&deadline=1h", "/api/advise?name=x"]
    urls += ["/api/apps/nope/sql"]
    urls += ["/apps/nope/stages/0/0", "/apps/app-dup/stages/0/0", "/apps/?app_id=..&stage=0"]
    urls += ["/apps/nope/timeline", "/apps/app-dup/timeline", "/apps/?app_id=..&timeline=1"]
    urls += ["/notifications", "/notifications?limit=5", "/api/notifications"]
    for _app_id, _attempt, server, name in apps[:3]:
        urls += [f"/api/forecast?{urlencode({'name': name, 'server': server})}"]
        urls += [
            f"/api/forecast?{urlencode({'name': name, 'server': server, 'input_bytes': 10**9})}"
        ]
    urls += ["/api/forecast?name=nope", "/api/forecast"]
    return urls


def _browse(app: Flask, engine: Engine) -> set[int]:
    """GET every URL; return the status codes seen (and check every GET route was reached)."""
    client = app.test_client()
    adapter = app.url_map.bind("localhost")
    reached, statuses = set(), set()
    for url in _urls(app, engine):
        response = client.get(url)
        assert response.status_code < 500, url
        statuses.add(response.status_code)
        parts = urlsplit(url)
        reached.add(adapter.match(parts.path, "GET")[0])
    routes = {r.endpoint for r in app.url_map.iter_rules() if "GET" in (r.methods or ())}
    assert reached == routes - {"static", "plotly_js"}  # files, no database
    return statuses


def _check_stale_pages_show_fresh_findings(app: Flask, engine: Engine, groups: Any) -> None:
    """Stale and never-scored applications show findings of the config in force."""
    client = app.test_client()
    with Session(engine) as session:
        for pk in groups["stale"] + groups["never"] + groups["garbage"]:
            row = session.get(Application, pk)
            assert row is not None
            body = client.get(f"/api/apps/{row.app_id}").get_json()
            assert len(body["findings"]) == len(CURRENT.enabled)
            assert body["worst_severity"] != "unknown"


@pytest.fixture
def pg_fleet(
    fresh_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, dict[str, list[int]]]]:
    groups = _load_fleet(fresh_pg_url, monkeypatch)
    yield fresh_pg_url, groups


#: Our tables, their indexes and TOAST: the relations a write by the application would touch.
OUR_FILENODES = (
    "SELECT pg_relation_filenode(c.oid) FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace"
    " OR c.oid IN (SELECT t.reltoastrelid FROM pg_class t"
    "  WHERE t.relnamespace = 'public'::regnamespace)"
    " OR c.oid IN (SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.reltoastrelid = i.indrelid"
    "  WHERE t.relnamespace = 'public'::regnamespace)"
)


#: Page housekeeping that changes no row: on-access pruning (a read that meets dead row versions
#: tidies the page) and (auto)vacuum's marks. The row digests check the contents themselves.
HOUSEKEEPING = frozenset({"PRUNE", "VACUUM", "VISIBLE", "FREEZE_PAGE"})


def _wal_records_on_our_tables(local: Engine, admin: Engine, start: str, end: str) -> list[Any]:
    """WAL records between two LSNs that change a table (or index) of the application's database.

    The LSN is the whole server's: records of other databases, and the server's housekeeping of
    system catalogs (autovacuum's statistics, pruning of pg_statistic), are not our writes.
    """
    with local.connect() as conn:
        oid = conn.execute(text("SELECT oid FROM pg_database WHERE datname = current_database()"))
        db_oid = int(oid.scalar_one())
        ours = {int(n) for (n,) in conn.execute(text(OUR_FILENODES)) if n is not None}
    with admin.connect() as conn:
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS pg_walinspect"))
        # pg_walinspect reads only WAL already flushed; on a busy shared server the WAL writer
        # may not have flushed up to ``end`` yet (other databases' asynchronous commits).
        flushed = text("SELECT pg_current_wal_flush_lsn() >= CAST(:b AS pg_lsn)")
        deadline = time.monotonic() + 60
        while not conn.execute(flushed, {"b": end}).scalar_one() and time.monotonic() < deadline:
            time.sleep(0.2)
        rows = conn.execute(
            text(
                "SELECT resource_manager, record_type, block_ref "
                "FROM pg_get_wal_records_info(CAST(:a AS pg_lsn), CAST(:b AS pg_lsn))"
            ),
            {"a": start, "b": end},
        ).all()
    touched = []
    for row in rows:
        if row.resource_manager == "Heap2" and row.record_type in HOUSEKEEPING:
            continue
        for db, node in re.findall(r"rel \d+/(\d+)/(\d+)", row.block_ref or ""):
            if int(db) == db_oid and int(node) in ours:
                touched.append(row)
    return touched


def test_browsing_every_route_leaves_postgresql_unchanged(
    pg_fleet: tuple[str, dict[str, list[int]]], pg_server_url: str
) -> None:
    url, groups = pg_fleet
    admin = create_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    local = create_engine(url, isolation_level="AUTOCOMMIT")
    with local.connect() as conn:
        # Prune dead rows now, so that reads find nothing to tidy up (on-access pruning logs WAL).
        conn.execute(text("ANALYZE"))
        conn.execute(text("VACUUM"))
        # Autovacuum passes during the browse would log WAL on our tables that no request wrote
        # (e.g. autoanalyze merging a GIN pending list): keep it off these tables for the test.
        tables = inspect(conn).get_table_names()
        for table in tables:
            conn.execute(text(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)'))
    engine = make_engine(url)
    app = make_app(url)
    try:
        before = _snapshot(engine)
        with admin.connect() as conn:
            lsn_before = conn.execute(text("SELECT pg_current_wal_lsn()::text")).scalar_one()
        statuses = _browse(app, engine)
        with admin.connect() as conn:
            lsn_after = conn.execute(text("SELECT pg_current_wal_lsn()::text")).scalar_one()
        if lsn_after != lsn_before:
            assert _wal_records_on_our_tables(local, admin, lsn_before, lsn_after) == []
        assert _snapshot(engine) == before
        assert {200, 400, 404, 409} <= statuses
        _check_stale_pages_show_fresh_findings(app, engine, groups)
        assert _snapshot(engine) == before
    finally:
        app.extensions["sparkscope.engine"].dispose()
        engine.dispose()
        local.dispose()
        admin.dispose()


def _files(path: Path) -> dict[str, tuple[int, str]]:
    """Size and digest of the database file and its write-ahead log."""
    out = {}
    for p in (path, Path(f"{path}-wal")):
        data = p.read_bytes() if p.exists() else b""
        out[p.name] = (len(data), hashlib.sha256(data).hexdigest())
    return out


def test_browsing_every_route_leaves_sqlite_unchanged(
    fresh_sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups = _load_fleet(fresh_sqlite_url, monkeypatch)
    path = Path(make_url(fresh_sqlite_url).database or "")
    # A connection of its own sees `data_version` change whenever another connection commits.
    watcher = sqlite3.connect(path)
    version = watcher.execute("PRAGMA data_version").fetchone()[0]
    engine = make_engine(fresh_sqlite_url)
    app = make_app(fresh_sqlite_url)
    try:
        before, files = _snapshot(engine), _files(path)
        statuses = _browse(app, engine)
        _check_stale_pages_show_fresh_findings(app, engine, groups)
        assert watcher.execute("PRAGMA data_version").fetchone()[0] == version
        assert _files(path) == files
        assert _snapshot(engine) == before
        assert {200, 400, 404, 409} <= statuses
    finally:
        app.extensions["sparkscope.engine"].dispose()
        engine.dispose()
        watcher.close()
