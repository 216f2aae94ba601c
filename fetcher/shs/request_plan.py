"""The requests for one application, back to back in one worker, parsed into a bundle of rows.

The plan (docs/fetcher.md, "Request plan"): environment, every executor, jobs, stage attempts with their
21-point task distributions in one call (Spark >= 3.4; each stage's task summary on older
servers), the SQL executions in pages of :data:`SQL_PAGE_LENGTH`, the slowest tasks of the longest
stages and of every big stage whose quantiles cannot pin its tasks, and the failed tasks of each
stage that had some.

The SQL part fails alone (docs/sql.md): an error answer to ``/sql`` is recorded in the bundle's
``sql_fetch`` row and the rest of the application is loaded; only an unreachable server stops it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from fetcher.parse.app import AppBundle, parse_environment, parse_executors, parse_jobs
from fetcher.parse.entry import AppEntry
from fetcher.parse.sql.graph import as_int
from fetcher.parse.sql.rows import FAILED, UNAVAILABLE, parse_pages, sql_rows, status_row
from fetcher.parse.stages import (
    parse_stage_executors,
    parse_stage_failed_tasks,
    parse_stages,
    parse_task_list,
    parse_task_summary,
)
from fetcher.shs import endpoints
from fetcher.shs.client import ShsClient, ShsError, ShsNotFound, ShsUnreachable
from sparkscope.config.loader import FetcherConfig

FAILED_TASKS_KEPT_FACTOR = 5
#: With 21 quantiles on the 0.05 grid every task of a stage of at most 20 tasks is known exactly.
TAIL_MIN_TASKS = 20
TAIL_MIN_SHARE = 0.01
TAIL_MAX_STAGES = 50
#: Executions per /sql page: the default of Spark 3.x/4.0 servers, so an application with fewer
#: than 20 queries costs one request; the largest recorded page (26 plans) was 0.6 MB.
SQL_PAGE_LENGTH = 20
#: Executions fetched per application at most (a streaming query runs one per micro-batch).
SQL_MAX_EXECUTIONS = 1000


#: Members of ``/environment`` never stored, with the Hadoop properties unless
#: ``fetcher.store_hadoop_properties`` (together nine tenths of its body): left undecoded.
ENVIRONMENT_UNREAD = ("classpathEntries",)


class JsonSource(Protocol):
    """What the plan needs of its client: :class:`ShsClient`, or another source answering the
    same requests (an event log replayed, :mod:`fetcher.eventlog.client`)."""

    def get_json(
        self, request: endpoints.Request, mark_hostile: bool = False, unread: Sequence[str] = ()
    ) -> Any:
        """The decoded body of one request; ShsError (ShsNotFound for a 404) when it fails.
        ``unread``: top-level members the caller does not read (a source may leave them out)."""
        ...


def fetch_app(
    client: ShsClient | JsonSource,
    entry: AppEntry,
    fetcher_config: FetcherConfig,
    redaction: re.Pattern[str],
) -> AppBundle:
    """All requests for one application, back to back; parsed into an AppBundle."""
    app, attempt_id = entry.app_id, entry.attempt_id
    bundle = AppBundle(entry=entry)
    hadoop = fetcher_config.store_hadoop_properties
    bundle.environment = parse_environment(
        client.get_json(
            endpoints.environment(app, attempt_id),
            unread=ENVIRONMENT_UNREAD if hadoop else ("hadoopProperties", *ENVIRONMENT_UNREAD),
        ),
        redaction,
        hadoop,
    )
    bundle.executors = parse_executors(client.get_json(endpoints.all_executors(app, attempt_id)))
    bundle.jobs = parse_jobs(client.get_json(endpoints.jobs(app, attempt_id)))
    bundle.stages, bundle.distributions = parse_stages(
        client.get_json(endpoints.stages_with_summaries(app, attempt_id))
    )
    # Servers before Spark 3.4 ignore withSummaries: ask for each stage's summary instead.
    have = {(d["stage_id"], d["attempt_id"]) for d in bundle.distributions}
    for s in bundle.stages:
        key = (s["stage_id"], s["attempt_id"])
        if key not in have and s["num_tasks"] > 0 and s["status"] != "SKIPPED":
            try:
                summary = client.get_json(endpoints.task_summary(app, attempt_id, *key))
            except ShsNotFound:
                continue  # a stage with no finished task has no summary
            dist = parse_task_summary(summary)
            if dist is not None:
                bundle.distributions.append({"stage_id": key[0], "attempt_id": key[1], **dist})
    fetch_sql(client, entry, bundle)
    if fetcher_config.tasks_per_stage > 0:
        for s in stages_for_slowest_tasks(bundle.stages, fetcher_config.top_stages):
            data = client.get_json(
                endpoints.slowest_tasks(
                    app, attempt_id, s["stage_id"], s["attempt_id"], fetcher_config.tasks_per_stage
                )
            )
            bundle.merge_tasks(parse_task_list(s["stage_id"], s["attempt_id"], data, "slowest"))
    for s in bundle.stages:
        if s["num_failed_tasks"] <= 0:
            continue
        data = client.get_json(
            endpoints.failed_tasks_with_executors(app, attempt_id, s["stage_id"], s["attempt_id"])
        )
        failed = parse_stage_failed_tasks(s["stage_id"], s["attempt_id"], data)
        failed.sort(key=lambda t: t["task_id"])
        bundle.merge_tasks(
            failed[: max(1, fetcher_config.tasks_per_stage) * FAILED_TASKS_KEPT_FACTOR]
        )
        bundle.stage_executors.extend(parse_stage_executors(s["stage_id"], s["attempt_id"], data))
    bundle.redact(redaction)
    return bundle


def fetch_sql(client: ShsClient | JsonSource, entry: AppEntry, bundle: AppBundle) -> None:
    """Page through the application's SQL executions into the bundle's SQL rows.

    A page shorter than :data:`SQL_PAGE_LENGTH` is the last one; a page that brings no new
    execution id (a server ignoring ``offset``) ends the paging too. 404 means the server has no
    ``/sql`` (before Spark 3.0): nothing to store, nothing to retry. Any other error fails the SQL
    part only; an unreachable server fails the whole application as usual.
    """
    pages: list[Any] = []
    seen: set[Any] = set()
    truncated: int | None = None
    try:
        while True:
            offset = sum(len(p) for p in pages if isinstance(p, list))
            page = client.get_json(
                endpoints.sql_executions(entry.app_id, entry.attempt_id, offset, SQL_PAGE_LENGTH)
            )
            pages.append(page)
            if not isinstance(page, list):
                break
            ids = {as_int(e.get("id")) for e in page if isinstance(e, dict)} - {None}
            if len(page) < SQL_PAGE_LENGTH or not ids - seen:
                break
            seen |= ids
            if offset + len(page) >= SQL_MAX_EXECUTIONS:
                truncated = offset + len(page)
                break
    except ShsUnreachable:
        raise
    except ShsNotFound as exc:
        if not pages:
            bundle.sql_fetch = [status_row(UNAVAILABLE, 0, [f"no /sql on this server: {exc}"])]
            return
        bundle.sql_fetch = [status_row(FAILED, len(pages), None, str(exc))]
        return
    except ShsError as exc:
        bundle.sql_fetch = [status_row(FAILED, len(pages), None, str(exc))]
        return
    try:
        rows = sql_rows(parse_pages(pages), bundle.jobs, bundle.stages, truncated)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not lose the rest of the app
        error = f"SQL executions unreadable: internal error: {type(exc).__name__}: {exc}"
        bundle.sql_fetch = [status_row(FAILED, len(pages), None, error)]
        return
    bundle.sql_fetch = [rows.status]
    bundle.sql_executions, bundle.sql_nodes, bundle.sql_stages = (
        rows.executions,
        rows.nodes,
        rows.stages,
    )


def stages_for_slowest_tasks(stages: list[dict[str, Any]], top_k: int) -> list[dict[str, Any]]:
    """Stage attempts whose slowest tasks are asked for: the ``top_k`` longest by executor run time
    (for the heuristics), plus every stage whose 21-point quantiles cannot pin each task (more than
    `TAIL_MIN_TASKS` tasks) and that holds at least `TAIL_MIN_SHARE` of the run time, up to
    `TAIL_MAX_STAGES` of them, longest first (for the what-if simulation: a heavy tail beyond the
    95th percentile is what quantiles miss)."""
    ran = sorted(
        (s for s in stages if s["num_tasks"] > 0),
        key=lambda s: s["executor_run_time_ms"],
        reverse=True,
    )
    total = sum(s["executor_run_time_ms"] for s in ran)
    tail = [
        s
        for s in ran
        if s["num_tasks"] > TAIL_MIN_TASKS and s["executor_run_time_ms"] >= TAIL_MIN_SHARE * total
    ][:TAIL_MAX_STAGES]
    chosen = {id(s) for s in ran[:top_k]} | {id(s) for s in tail}
    return [s for s in ran if id(s) in chosen]
