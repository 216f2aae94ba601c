"""Plan changes as a cause of a regression: a recurring run's SQL plans against the plans of the
runs it is predicted from (the latest successful ones; the plans most of them had)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from sparkscope.advisor.predict.plans import changes, reference, shapes
from sparkscope.analysis.inputs import load_inputs

#: Plan changes listed as causes of one run at most (join strategy changes first).
MAX_CAUSES = 5


def plan_changes(session: Session, app_pk: int, earlier: Sequence[int]) -> list[str]:
    """What changed in the run's plans (``plan changed: BroadcastHashJoin → SortMergeJoin in
    query 0 '...'``), against the plans most of the ``earlier`` runs had; read-only."""
    if not earlier:
        return []
    data = load_inputs(session, [app_pk, *earlier], store=False)
    run = data.get(app_pk)
    if run is None or not run.sql_executions:
        return []
    ref = reference([shapes(data[pk].sql_executions) for pk in earlier if pk in data])
    if ref is None:
        return []
    found = changes(ref, shapes(run.sql_executions))
    return [f"plan changed: {c.text}" for c in found[:MAX_CAUSES]]
