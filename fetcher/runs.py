"""The ``fetch_run`` rows: finished whatever happens, and closed when a killed run left them open."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from sparkscope.db import now_ms
from sparkscope.models.fetch import FetchRun

if TYPE_CHECKING:
    from fetcher.options import ServerResult


def finish_run(
    factory: sessionmaker[Session], run_id: int, result: ServerResult, crashed: str | None
) -> None:
    """Write the run's outcome and counts."""
    failed = crashed or result.unreachable
    status = "failed" if failed else ("partial" if result.failed or result.partial else "ok")
    with factory() as session, session.begin():
        session.execute(
            update(FetchRun)
            .where(FetchRun.id == run_id)
            .values(
                finished_at_ms=now_ms(),
                status=status,
                apps_seen=result.seen,
                apps_loaded=result.loaded,
                apps_skipped=result.skipped,
                apps_failed=len(result.failed),
                requests=result.requests,
                bytes=result.bytes,
                error=failed,
                failed_apps=[[a, e[:500]] for a, e in result.failed] or None,
            )
        )


def close_interrupted_runs(factory: sessionmaker[Session]) -> int:
    """Mark runs left ``running`` by a killed process as failed; call it holding the fetch lock."""
    with factory() as session, session.begin():
        done = session.execute(
            update(FetchRun)
            .where(FetchRun.status == "running")
            .values(
                status="failed",
                finished_at_ms=now_ms(),
                error="interrupted: the process ended before the run finished (killed?)",
            )
        )
    return int(getattr(done, "rowcount", 0) or 0)
