"""Applications run with a `local-cluster[n,c,m]` master (the scaling corpus) are not local mode:
their executors hold cores, so the resources section shows allocated core-hours."""

from __future__ import annotations

import re

from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from sparkscope.models.application import Application, EnvironmentProperty


def test_local_cluster_runs_allocate_their_executors_cores(corpus_url: str) -> None:
    engine = create_engine(corpus_url)
    with Session(engine) as s:
        rows = s.execute(
            select(
                Application.app_id,
                Application.duration_ms,
                Application.num_executors,
                Application.allocated_core_hours,
                EnvironmentProperty.value,
            )
            .join(EnvironmentProperty, EnvironmentProperty.application_id == Application.id)
            .where(EnvironmentProperty.name == "spark.master")
        ).all()
    engine.dispose()
    assert len(rows) == 36
    for app_id, duration_ms, num_executors, allocated, master in rows:
        m = re.fullmatch(r"local-cluster\[(\d+),(\d+),\d+\]", master)
        assert m, master
        n, cores = int(m.group(1)), int(m.group(2))
        # The driver is not an executor here: the n executor JVMs are counted ...
        assert num_executors == n, app_id
        # ... and their cores held while they lived (at most the whole run; the driver's core
        # too), instead of 0 under the local-mode rule.
        hours = duration_ms / 3_600_000
        assert allocated is not None and 0.5 * n * cores * hours < allocated, app_id
        assert allocated <= (n * cores + 1) * hours * 1.01, app_id
