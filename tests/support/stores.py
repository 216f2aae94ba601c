"""What two databases store for the same applications, table by table: the check that an
application read from its event log is stored as when fetched through a History Server.

Compared per application (by app id and attempt): the application row and every row of its
child tables (``APP_CHILD_TABLES``) including the JSON each row keeps as fetched, and the
findings. Left out, because they cannot be the same, are only :data:`KNOWN_DIFFERENCES`; the
event-log-only tables (``stage_task_times``, ``stage_parent``) are reported apart.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import select

from sparkscope.analysis.codec import decode
from sparkscope.db import make_engine
from sparkscope.models.app_rows import APP_CHILD_TABLES
from sparkscope.models.application import Application
from sparkscope.models.eventlog import StageParent, StageTaskTimes
from sparkscope.models.predictions import RunPrediction
from sparkscope.whatif import inputs as whatif_inputs

#: Columns that differ by nature between the two sources, and why.
KNOWN_DIFFERENCES: dict[str, str] = {
    "application.id": "surrogate key of each database",
    "application.server_id": "surrogate key of each database",
    "application.fetched_at_ms": "when each was loaded",
    "application.last_updated_ms": "the log's modification time where each source read it "
    "(equal when the SHS serves the same files)",
    "application.raw": "the listing entry, which holds lastUpdated (above)",
    "analysis.analyzed_at_ms": "when each was scored",
    "run_prediction.server_id": "surrogate key of each database",
    "run_prediction.fetched_at_ms": "when each was loaded",
    "run_prediction.computed_at_ms": "when each was predicted",
}
EXTRA_TABLES = (StageTaskTimes, StageParent)
#: What the event-log source adds to a run's what-if input (compared in their own tables above);
#: the rest of the input is compared decoded.
WHATIF_EXTRAS = ("tasks", "parents")
#: Per-application tables derived after the load, compared too.
DERIVED_TABLES = (RunPrediction,)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def stored(db_url: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Per application: its row and its child rows per table (sorted), known columns left out."""
    engine = make_engine(db_url)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    with engine.connect() as c:
        keys: dict[int, tuple[str, str]] = {}
        for row in c.execute(select(Application)).mappings():
            key = (row["app_id"], row["attempt_id"])
            keys[row["id"]] = key
            out[key] = {
                "application": {
                    k: _clean(v)
                    for k, v in row.items()
                    if f"application.{k}" not in KNOWN_DIFFERENCES
                }
            }
        for table in (*APP_CHILD_TABLES, *DERIVED_TABLES):
            if table in EXTRA_TABLES:
                continue
            name = table.__tablename__
            cols = [
                c_
                for c_ in table.__table__.columns
                if c_.name != "application_id" and f"{name}.{c_.name}" not in KNOWN_DIFFERENCES
            ]
            for row in c.execute(select(table.application_id, *cols)):
                pk, *values = row
                if pk not in keys:
                    continue
                item = {col.name: _clean(v) for col, v in zip(cols, values, strict=True)}
                if name == "analysis_input":  # a cache: compared as the inputs it decodes to
                    item["data"] = repr(decode(item["data"]))
                if name == "whatif_input":
                    data = whatif_inputs.decode(bytes(item["data"]))
                    item["data"] = repr({k: v for k, v in data.items() if k not in WHATIF_EXTRAS})
                out[keys[pk]].setdefault(name, []).append(item)
        for rows in out.values():
            for items in rows.values():
                if isinstance(items, list):
                    items.sort(key=repr)
    engine.dispose()
    return out


def extras_count(db_url: str) -> dict[str, int]:
    """Rows of the event-log-only tables."""
    engine = make_engine(db_url)
    with engine.connect() as c:
        counts = {
            t.__tablename__: len(c.execute(select(t.application_id)).all()) for t in EXTRA_TABLES
        }
    engine.dispose()
    return counts


def differences(
    ours: dict[tuple[str, str], dict[str, Any]],
    theirs: dict[tuple[str, str], dict[str, Any]],
    limit: int = 20,
) -> list[str]:
    """Readable differences between two :func:`stored` results (empty: the same)."""
    out: list[str] = []
    for key in sorted(set(ours) | set(theirs)):
        if key not in ours or key not in theirs:
            out.append(
                f"{key}: only in {'the event-log store' if key in ours else 'the SHS store'}"
            )
            continue
        a, b = ours[key], theirs[key]
        for table in sorted(set(a) | set(b)):
            ra, rb = a.get(table, []), b.get(table, [])
            if ra == rb:
                continue
            if isinstance(ra, dict) and isinstance(rb, dict):
                cols = sorted(c for c in set(ra) | set(rb) if ra.get(c) != rb.get(c))
                out.append(f"{key} {table}: columns differ: {cols}")
            else:
                out.append(
                    f"{key} {table}: {len(ra)} rows vs {len(rb)}; first differing: "
                    f"{next((x for x in ra if x not in rb), None)!r:.300}"
                )
            if len(out) >= limit:
                return out
    return out
