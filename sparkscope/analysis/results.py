"""Stored results: one JSON document per application (table ``analysis``), its finding rows
(``analysis_result``), the application's summary columns, and the configs results were computed
under (``heuristics_config``, with a digest per heuristic)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import orjson
from sqlalchemy import Table, bindparam, delete, select, text
from sqlalchemy.orm import Session

from heuristics.params import params_view
from heuristics.registry import Registry
from heuristics.result import HeuristicResult, Severity, rank_key
from sparkscope import bulk
from sparkscope.accounting import day_summary as summary
from sparkscope.db import dialect_insert, is_postgres, now_ms
from sparkscope.models.analysis import Analysis, AnalysisResult, HeuristicsConfig
from sparkscope.models.application import Application

#: Severity.NONE, read once: on Python 3.11 an enum member read through its class goes
#: through the enum metaclass's attribute hook (about ten times a plain attribute's cost).
NONE = Severity.NONE


def stored_documents(session: Session, application_ids: Sequence[int]) -> dict[int, str]:
    return {
        pk: doc
        for pk, doc in session.execute(
            select(Analysis.application_id, Analysis.results).where(
                Analysis.application_id.in_(list(application_ids))
            )
        )
    }


def store_documents(
    session: Session,
    scored: dict[int, list[dict[str, Any]]],
    stored: dict[int, str],
    fingerprint: str,
    core: dict[int, tuple[float, float]],
) -> None:
    """Write the results of a batch: each application's document (and its finding rows) where it
    differs from the stored one, and every application's fingerprint, severity and core-hours.

    Most documents are unchanged by a re-score (a threshold edit moves few applications across a
    boundary, and stored results leave the thresholds out), and reading a document back costs a
    fraction of rewriting it.
    """
    before = summary.read(session, list(scored))
    documents = {pk: orjson.dumps(results).decode() for pk, results in scored.items()}
    changed = [pk for pk, doc in documents.items() if stored.get(pk) != doc]
    if changed:
        session.execute(delete(AnalysisResult).where(AnalysisResult.application_id.in_(changed)))
        _write_documents(session, {pk: documents[pk] for pk in changed}, now_ms())
        bulk.write(
            session.connection(), _FINDINGS, [(pk, _finding_rows(scored[pk])) for pk in changed]
        )
    _update_applications(
        session,
        [
            (pk, max((r["severity"] for r in results), default=0), *core[pk], impact_of(results))
            for pk, results in scored.items()
        ],
        fingerprint,
    )
    summary.apply(session, before, summary.read(session, list(scored)))


def _finding_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``analysis_result`` rows of one application's results (less its id): those above
    NONE."""
    return [
        {
            "heuristic": r["name"],
            "severity": r["severity"],
            "value": r["value"],
            "title": r["title"],
            "impact_core_hours": (r["impact"] or {}).get("core_hours"),
            "impact_wall_seconds": (r["impact"] or {}).get("wall_seconds"),
        }
        for r in results
        if r["severity"] > NONE
    ]


def flagged(results: list[dict[str, Any]]) -> list[str]:
    """The heuristics whose result is above NONE (each one an ``analysis_result`` row)."""
    return [r["name"] for r in results if r["severity"] > NONE]


def insert_loaded(
    session: Session, scored: Sequence[tuple[int, list[dict[str, Any]], str]]
) -> None:
    """Store the results (application pk, results, document) of applications loaded in this
    transaction, whose earlier results the load removed: their documents and finding rows, one
    bulk statement each for all of them. The application rows' summary columns (worst severity,
    fingerprint, core-hours) were written by the load itself."""
    if not scored:
        return
    at = now_ms()
    conn = session.connection()
    bulk.write(
        conn, _DOCUMENTS, [(pk, [{"analyzed_at_ms": at, "results": doc}]) for pk, _, doc in scored]
    )
    bulk.write(conn, _FINDINGS, [(pk, _finding_rows(results)) for pk, results, _ in scored])


_DOCUMENTS = bulk.layout(cast(Table, Analysis.__table__))
_FINDINGS = bulk.layout(cast(Table, AnalysisResult.__table__))


def _write_documents(session: Session, documents: dict[int, str], at: int) -> None:
    """Insert or replace result documents. An update rather than a delete and insert keeps the
    row, so PostgreSQL can rewrite it in place without touching the index."""
    if is_postgres(session):
        # One statement for the batch: with ON CONFLICT, psycopg2 would get one per row.
        session.execute(
            text(
                "INSERT INTO analysis (application_id, analyzed_at_ms, results) "
                "SELECT v.id, :at, v.doc FROM unnest(CAST(:pks AS integer[]), "
                "CAST(:docs AS text[])) AS v(id, doc) "
                "ON CONFLICT (application_id) DO UPDATE "
                "SET results = excluded.results, analyzed_at_ms = excluded.analyzed_at_ms"
            ),
            {"at": at, "pks": list(documents), "docs": list(documents.values())},
        )
        return
    upsert = dialect_insert(session, cast(Table, Analysis.__table__))
    upsert = upsert.on_conflict_do_update(
        index_elements=["application_id"],
        set_={"results": upsert.excluded.results, "analyzed_at_ms": upsert.excluded.analyzed_at_ms},
    )
    session.execute(
        upsert,
        [
            {"application_id": pk, "analyzed_at_ms": at, "results": doc}
            for pk, doc in documents.items()
        ],
    )


def impact_of(results: Sequence[dict[str, Any]]) -> float:
    """An application's impact: the core-hours of its costliest finding above NONE (0 when none
    has a cost). The largest, not the sum: two findings often count the same lost time."""
    costs = ((r.get("impact") or {}).get("core_hours") for r in results if r["severity"] > NONE)
    return max((float(c) for c in costs if c is not None), default=0.0)


def _update_applications(
    session: Session,
    rows: list[tuple[int, int, float | None, float | None, float]],
    fingerprint: str,
) -> None:
    """Set (worst severity, allocated and wasted core-hours, impact) and the fingerprint per
    application."""
    if is_postgres(session):
        # One statement for the batch (psycopg2's executemany would send one per application),
        # touching only the rows that change.
        pks, worst, alloc, waste, impact = (list(col) for col in zip(*rows, strict=True))
        session.execute(
            text(
                "UPDATE application AS a SET worst_severity = v.worst, "
                "analysis_fingerprint = :fp, allocated_core_hours = v.alloc, "
                "wasted_core_hours = v.waste, impact_core_hours = v.impact "
                "FROM unnest(CAST(:pks AS integer[]), CAST(:worst AS integer[]), "
                "CAST(:alloc AS double precision[]), CAST(:waste AS double precision[]), "
                "CAST(:impact AS double precision[])) "
                "AS v(id, worst, alloc, waste, impact) WHERE a.id = v.id AND ("
                "a.analysis_fingerprint IS DISTINCT FROM :fp "
                "OR a.worst_severity IS DISTINCT FROM v.worst "
                "OR a.allocated_core_hours IS DISTINCT FROM v.alloc "
                "OR a.wasted_core_hours IS DISTINCT FROM v.waste "
                "OR a.impact_core_hours IS DISTINCT FROM v.impact)"
            ),
            {
                "fp": fingerprint,
                "pks": pks,
                "worst": worst,
                "alloc": alloc,
                "waste": waste,
                "impact": impact,
            },
        )
        return
    table = cast(Table, Application.__table__)
    session.execute(
        table.update()
        .where(table.c.id == bindparam("b_pk"))
        .values(
            worst_severity=bindparam("b_worst"),
            analysis_fingerprint=fingerprint,
            allocated_core_hours=bindparam("b_alloc"),
            wasted_core_hours=bindparam("b_waste"),
            impact_core_hours=bindparam("b_impact"),
        ),
        [
            {"b_pk": pk, "b_worst": worst, "b_alloc": alloc, "b_waste": waste, "b_impact": impact}
            for pk, worst, alloc, waste, impact in rows
        ],
    )


def record_config(session: Session, registry: Registry) -> None:
    """Keep the digests of a config results are computed under (a no-op once recorded).

    Callers of :func:`sparkscope.analysis.scoring.score_and_store` record it once per run, not per application; results
    stored under an unrecorded config are only never reused (every heuristic runs again).
    """
    stmt = dialect_insert(session, cast(Table, HeuristicsConfig.__table__)).values(
        fingerprint=registry.fingerprint,
        digests=orjson.dumps(registry.digests).decode(),
        config=orjson.dumps(registry.effective_config(), default=str).decode(),
        first_used_at_ms=now_ms(),
    )
    session.execute(stmt.on_conflict_do_nothing(index_elements=["fingerprint"]))


def previous_digests(session: Session, ids: list[int]) -> dict[int, dict[str, str]]:
    """Per application, the digests of the config its stored results were computed under."""
    fingerprints = {
        pk: fp
        for pk, fp in session.execute(
            select(Application.id, Application.analysis_fingerprint).where(Application.id.in_(ids))
        )
        if fp
    }
    if not fingerprints:
        return {}
    configs = {
        fp: orjson.loads(digests)
        for fp, digests in session.execute(
            select(HeuristicsConfig.fingerprint, HeuristicsConfig.digests).where(
                HeuristicsConfig.fingerprint.in_(set(fingerprints.values()))
            )
        )
    }
    return {pk: configs[fp] for pk, fp in fingerprints.items() if fp in configs}


def parse_document(document: str) -> list[dict[str, Any]] | None:
    """The results in a stored document, or None when it is not what store_documents writes."""
    try:
        results = orjson.loads(document)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(results, list) or not all(
        isinstance(r, dict) and isinstance(r.get("name"), str) for r in results
    ):
        return None
    return results


def stored_results(
    session: Session, application_id: int, registry: Registry
) -> list[HeuristicResult] | None:
    """The stored results of one application (NONE ones included), worst first; None when its
    stored document is unreadable.

    Only for results computed under ``registry`` (``application.analysis_fingerprint`` equal to
    its fingerprint): the thresholds each result shows are that registry's params.
    """
    document = session.scalar(
        select(Analysis.results).where(Analysis.application_id == application_id)
    )
    parsed = parse_document(document) if document is not None else []
    return None if parsed is None else results_from_dicts(parsed, registry)


def results_from_dicts(
    parsed: list[dict[str, Any]], registry: Registry
) -> list[HeuristicResult] | None:
    """Results as stored -> HeuristicResults with ``registry``'s thresholds, the one most worth
    fixing first (:func:`heuristics.result.rank_key`: severity, then pattern severity, then
    cost); None when one of them is not what the store writes."""
    results = []
    for data in parsed:
        try:
            params = params_view(registry.params(data["name"]))
        except KeyError:  # a heuristic this version no longer has
            params = None
        try:
            results.append(HeuristicResult.from_dict(data, params))
        except (KeyError, TypeError, ValueError):
            return None
    results.sort(key=rank_key)
    return results
