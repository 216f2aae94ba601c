"""Every table derived from the stored applications, read so that two databases can be compared:
what one uninterrupted run stores against what a killed run and its re-run store.

Rows are keyed by natural keys (an application by its server, app id and attempt; a server by
its place in the order the servers were first fetched, as a test's server may listen on another
port each time), never by surrogate ids (a rolled-back transaction uses up sequence values), and the
columns that only say *when* something was computed are left out. Everything else is compared
exactly, floats included; an encoded input is compared decoded (marshal's bytes also record
which strings the writing process happened to intern, which says nothing of the content).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import select

from sparkscope.analysis import codec
from sparkscope.db import make_engine
from sparkscope.models.analysis import Analysis, AnalysisInput, AnalysisResult
from sparkscope.models.application import Application
from sparkscope.models.fetch import HistoryServer
from sparkscope.models.pipeline import PipelinePending
from sparkscope.models.predictions import PredictionModel, RecurringForecast, RunPrediction
from sparkscope.models.summary import ApplicationName, DaySummary
from sparkscope.models.whatif import WhatIfCluster, WhatIfInput, WhatIfModel
from sparkscope.whatif import inputs as whatif_inputs

#: Every derived table: those an application's load writes and those the ledger's steps write.
DERIVED_TABLES = (
    Analysis,
    AnalysisResult,
    AnalysisInput,
    RunPrediction,
    RecurringForecast,
    PredictionModel,
    WhatIfInput,
    WhatIfModel,
    WhatIfCluster,
    DaySummary,
    ApplicationName,
    PipelinePending,
)
#: Columns that say when, not what.
WHEN_COLUMNS = {
    "analyzed_at_ms",
    "computed_at_ms",
    "fitted_at_ms",
    "fetched_at_ms",
    "queued_at_ms",
    "last_attempt_ms",
}
#: JSON held in text columns, compared parsed (the same document, whatever its spacing).
JSON_TEXT = {("analysis", "results"), ("whatif_model", "model"), ("whatif_cluster", "model")}
#: Encoded inputs, compared decoded.
DECODERS = {
    ("analysis_input", "data"): codec.decode,
    ("whatif_input", "data"): whatif_inputs.decode,
}


def _value(table: str, column: str, value: Any) -> Any:
    if value is None:
        return None
    if (table, column) in JSON_TEXT:
        return json.dumps(json.loads(value), sort_keys=True)
    if (table, column) in DECODERS:
        return repr(DECODERS[(table, column)](bytes(value)))
    if isinstance(value, bytes | memoryview):
        return "sha256:" + hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value


def _changes(value: Any, apps: dict[int, Any]) -> str:
    """What changed, the run it is against by its natural key (ids follow the load order)."""
    doc = json.loads(value) if isinstance(value, str) else dict(value)
    against = doc.get("against")
    if against and "application_id" in against:
        doc["against"] = {**against, "application_id": apps.get(against["application_id"])}
    return json.dumps(doc, sort_keys=True)


def derived_state(db_url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Table name -> its rows (sorted tuples of (column, value)), for every derived table."""
    engine = make_engine(db_url)
    out: dict[str, list[tuple[Any, ...]]] = {}
    try:
        with engine.connect() as c:
            servers = {
                sid: f"server#{i}"
                for i, sid in enumerate(c.scalars(select(HistoryServer.id).order_by("id")))
            }
            apps = {
                pk: (servers[sid], app_id, attempt)
                for pk, sid, app_id, attempt in c.execute(
                    select(
                        Application.id,
                        Application.server_id,
                        Application.app_id,
                        Application.attempt_id,
                    )
                )
            }
            for model in DERIVED_TABLES:
                table = model.__table__
                rows = []
                for row in c.execute(select(table)).mappings():
                    items = []
                    for column, value in row.items():
                        if column in WHEN_COLUMNS:
                            continue
                        if column == "application_id":
                            value = apps[value]
                        elif column == "server_id":
                            value = servers[value]
                        elif (table.name, column) == ("run_prediction", "changes") and value:
                            value = _changes(value, apps)
                        else:
                            value = _value(table.name, column, value)
                        items.append((column, value))
                    rows.append(tuple(items))
                out[table.name] = sorted(rows, key=repr)
    finally:
        engine.dispose()
    return out


def differences(got: dict[str, list[Any]], want: dict[str, list[Any]]) -> dict[str, Any]:
    """Per table that differs: how many rows each side has and the first rows that differ."""
    out: dict[str, Any] = {}
    for table in sorted(set(got) | set(want)):
        a, b = got.get(table, []), want.get(table, [])
        if a != b:
            only_a = [r for r in a if r not in b][:2]
            only_b = [r for r in b if r not in a][:2]
            out[table] = {"rows": (len(a), len(b)), "only_got": only_a, "only_want": only_b}
    return out
