"""``/sql`` pages -> the rows Sparkscope stores: one status row, executions, plan nodes with
parsed metrics, and the execution/node <-> stage links.

Bounds (docs/sql.md): the plan text kept per execution is its first :data:`PLAN_TEXT_KEEP_CHARS`
characters (the whole text is parsed; its length is stored); descriptions and error messages are
cut at 4,000 characters, operator detail values at 4,000.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fetcher.parse.sql.graph import ParsedExecution, parse_execution
from fetcher.parse.sql.link import StageLinks, link_stages

PLAN_TEXT_KEEP_CHARS = 64 * 1024

#: Status of an application's SQL part: executions stored; executions stored, but something of
#: them could not be read (the notes say what); the server answered with none; it has no /sql
#: endpoint (before Spark 3.0); the answer failed (the rest of the application is stored).
OK, PARTIAL, NONE, UNAVAILABLE, FAILED = "ok", "partial", "none", "unavailable", "failed"


@dataclass
class ParsedSql:
    """Every execution of one application's ``/sql`` pages, by id, with what could not be read."""

    executions: list[ParsedExecution] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pages: int = 0


def parse_pages(pages: Iterable[Any]) -> ParsedSql:
    """Decoded ``/sql`` pages -> executions sorted by id (a repeated id keeps its first copy)."""
    out = ParsedSql()
    by_id: dict[int, ParsedExecution] = {}
    for k, page in enumerate(pages):
        out.pages += 1
        if not isinstance(page, list):
            out.notes.append(f"page {k + 1}: not a list ({type(page).__name__}); skipped")
            continue
        skipped = 0
        for raw in page:
            ex = parse_execution(raw)
            if ex is None:
                skipped += 1
            elif ex.execution_id not in by_id:
                by_id[ex.execution_id] = ex
        if skipped:
            out.notes.append(f"page {k + 1}: {skipped} element(s) without an execution id skipped")
    out.executions = [by_id[i] for i in sorted(by_id)]
    return out


def parse_bodies(bodies: Iterable[bytes | str]) -> ParsedSql:
    """Raw page bodies (as recorded) -> :class:`ParsedSql`; a body that is not JSON is noted."""
    pages: list[Any] = []
    notes: list[str] = []
    for k, body in enumerate(bodies):
        try:
            pages.append(json.loads(body))
        except ValueError as exc:
            notes.append(f"page {k + 1}: not JSON ({type(exc).__name__}); skipped")
    out = parse_pages(pages)
    out.notes[:0] = notes
    return out


def _execution_row(ex: ParsedExecution) -> dict[str, Any]:
    text = ex.plan_text or ""
    return {
        "execution_id": ex.execution_id,
        "status": ex.status,
        "description": ex.description,
        "submission_time_ms": ex.submission_time_ms,
        "duration_ms": ex.duration_ms,
        "success_job_ids": ex.success_job_ids,
        "failed_job_ids": ex.failed_job_ids,
        "running_job_ids": ex.running_job_ids,
        "edges": ex.edges,  # ((from, to) pairs: JSON lists as stored)
        "plan_text": text[:PLAN_TEXT_KEEP_CHARS] if ex.plan_text is not None else None,
        "plan_chars": len(text),
        "adaptive": bool(ex.plan and ex.plan.adaptive),
        "error_message": ex.error_message,
        "notes": ex.notes or None,
    }


def _node_rows(ex: ParsedExecution) -> list[dict[str, Any]]:
    return [
        {
            "execution_id": ex.execution_id,
            "node_id": n.node_id,
            "name": n.name,
            "codegen_id": n.codegen_id,
            "op_id": n.op_id,
            # (the node's own dicts, not copies: the execution is dropped once its rows are made)
            "metrics": n.metrics,
            "detail": (n.detail.fields or None) if n.detail is not None else None,
            "in_cached_plan": n.in_cached_plan,
        }
        for _, n in sorted(ex.nodes.items())
    ]


def _stage_rows(ex: ParsedExecution, links: StageLinks) -> list[dict[str, Any]]:
    per_node = links.node_stages.get(ex.execution_id, {})
    stages = set(links.execution_stages.get(ex.execution_id, set()))
    for ids in per_node.values():
        stages |= ids
    by_stage: dict[int, list[int]] = {s: [] for s in stages}
    for nid, ids in per_node.items():
        for s in ids:
            by_stage[s].append(nid)
    return [
        {"execution_id": ex.execution_id, "stage_id": s, "node_ids": sorted(nids)}
        for s, nids in sorted(by_stage.items())
    ]


@dataclass
class SqlRows:
    """The rows of one application's SQL part, ready to load."""

    status: dict[str, Any]
    executions: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)


def sql_rows(
    parsed: ParsedSql,
    jobs: Iterable[Mapping[str, Any]],
    stages: Iterable[Mapping[str, Any]],
    truncated_at: int | None = None,
) -> SqlRows:
    """The rows to store, with the stage links computed from the application's job and stage
    rows; ``truncated_at``: the fetch stopped after that many executions."""
    links = link_stages(parsed.executions, jobs, stages)
    notes = list(parsed.notes)
    if truncated_at is not None:
        notes.append(f"only the first {truncated_at:,} executions were fetched")
    partial = bool(notes) or any(ex.notes for ex in parsed.executions)
    status = (PARTIAL if partial else OK) if parsed.executions else NONE
    out = SqlRows(status=status_row(status, parsed.pages, notes, None))
    out.status["executions"] = len(parsed.executions)
    for ex in parsed.executions:
        out.executions.append(_execution_row(ex))
        out.nodes.extend(_node_rows(ex))
        out.stages.extend(_stage_rows(ex, links))
    return out


def status_row(
    status: str, pages: int, notes: list[str] | None = None, error: str | None = None
) -> dict[str, Any]:
    """The one ``sql_fetch`` row of an application."""
    return {
        "status": status,
        "executions": 0,
        "pages": pages,
        "notes": notes or None,
        "error": error[:4000] if error else None,
    }
