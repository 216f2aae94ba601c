"""Database schema: Spark's own hierarchy, keyed by Spark's natural keys.

history server -> application attempt -> environment properties, executors, jobs, stage attempts
(-> task quantile distributions, per-executor summaries, a bounded set of task rows), analysis results.
All Spark timestamps are epoch milliseconds (UTC) in ``*_ms`` columns; sizes are bytes.

One module per family of tables; import a model from its module. Importing any of them imports
this package, which loads every module below, so that the metadata (for Alembic) and the
relationships between modules are complete whichever model is imported first.
"""

from sparkscope.models import (  # noqa: F401  (registers every table)
    analysis,
    app_rows,
    application,
    eventlog,
    fetch,
    notify,
    pipeline,
    predictions,
    sql,
    summary,
    whatif,
)
