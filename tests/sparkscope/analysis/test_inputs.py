"""sparkscope.analysis.inputs owns the heuristic inputs: fetched rows, stored rows and encoded rows give the
same AppData, and the input-task rule is the same wherever it is applied."""

from __future__ import annotations

import re
from array import array
from collections import defaultdict
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from heuristics import appdata
from sparkscope.analysis import assembly, inputs
from sparkscope.analysis.codec import APP_COLUMNS
from sparkscope.cli.main import cli
from sparkscope.db import make_engine, make_sessionmaker
from sparkscope.models.analysis import AnalysisInput
from sparkscope.models.application import Application, Task
from tests.fetcher.recorded import RECORDING
from tests.support.floats import FLOAT_SEQUENCES


def test_fetched_inputs_equal_the_inputs_built_from_the_tables(
    fresh_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetch encodes the inputs it built from the fetched rows (fetcher.job.app_data); decoded,
    they equal what the tables give for the same 21 applications."""
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_db_url)
    result = CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--no-analyze"])
    assert result.exit_code == 0, result.output
    engine = make_engine(fresh_db_url)
    with make_sessionmaker(engine)() as s:
        fetched = {
            pk: inputs.decode(blob)
            for pk, blob in s.execute(select(AnalysisInput.application_id, AnalysisInput.data))
        }
        assert len(fetched) == 21
        from_tables = inputs.from_tables(s, list(fetched))
        assert from_tables == fetched
        assert sum(len(a.tasks) for a in fetched.values()) > 0
        # the Spark version reaches the heuristics (Spark's defaults depend on it)
        assert {a.spark_version for a in fetched.values()} == {"4.0.1"}
    engine.dispose()


def _all_stored_tasks(session: Any) -> dict[int, list[dict[str, Any]]]:
    rows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    cols = [getattr(Task, c).label(c) for c in assembly.TASK_COLUMNS]
    for r in session.execute(select(Task.application_id.label("_app"), *cols)).mappings():
        values = dict(r)
        rows[values.pop("_app")].append(values)
    return rows


def test_the_sql_prefilter_selects_what_the_rule_selects(fresh_db_url: str, monkeypatch) -> None:
    """input_task_clause is only a pre-filter: on every stored task it agrees with
    INPUT_TASKS.selects, so both sources see the same tasks."""
    monkeypatch.setenv("SPARKSCOPE_DATABASE_URL", fresh_db_url)
    assert (
        CliRunner().invoke(cli, ["fetch", "--url", str(RECORDING), "--no-analyze"]).exit_code == 0
    )
    engine = make_engine(fresh_db_url)
    with make_sessionmaker(engine)() as s:
        stored = _all_stored_tasks(s)
        by_rule = {
            (pk, t["stage_id"], t["stage_attempt_id"], t["task_id"], t["attempt"])
            for pk, tasks in stored.items()
            for t in tasks
            if assembly.is_input_task(t)
        }
        by_sql = set(
            s.execute(
                select(
                    Task.application_id,
                    Task.stage_id,
                    Task.stage_attempt_id,
                    Task.task_id,
                    Task.attempt,
                ).where(inputs.input_task_clause())
            ).all()
        )
        total = s.scalar(select(func.count()).select_from(Task))
        assert by_sql == by_rule
        assert 0 < len(by_rule) < (total or 0)  # the rule keeps some and drops others
        ids = list(s.scalars(select(Application.id)))
        built = inputs.from_tables(s, ids)
        # assemble applies the rule itself: given every stored task, it keeps the same ones.
        for pk, app in built.items():
            kept = assembly.assemble(
                {c: getattr(app, c) for c in APP_COLUMNS},
                [
                    {"section": "spark", "name": k, "value": v}
                    for k, v in app.spark_properties.items()
                ],
                [{**e._asdict(), "host_port": e.host} for e in app.executors],
                [j._asdict() for j in app.jobs],
                [st._asdict() for st in app.stages],
                [],
                stored.get(pk, []),
            )
            assert kept.tasks == app.tasks, app.app_id
    engine.dispose()


@pytest.mark.parametrize(
    ("status", "spilled", "selected"),
    [
        ("FAILED", 0, True),
        ("failed", None, True),
        ("SUCCESS", 1, True),
        ("SUCCESS", 0, False),
        ("KILLED", None, False),
    ],
)
def test_input_task_rule(status: str, spilled: int | None, selected: bool) -> None:
    row = {"status": status, "memory_bytes_spilled": spilled}
    assert assembly.is_input_task(row) is selected
    assert appdata.INPUT_TASKS.selects(row) is selected


@pytest.mark.parametrize("values", FLOAT_SEQUENCES)
def test_distribution_metrics_convert_as_float_arrays(values: Any) -> None:
    # distribution_input packs lists with struct; each value must convert as array('d') does
    # it, a metric array('d') refuses with a TypeError must be left out, as it was, and any other
    # error array('d') raises (an int beyond a double) raised as it raises it.
    quantiles = [0.0, 0.5, 1.0]
    metrics = {"duration_ms": values, "input_bytes": [1.0, 2.0, 3.0]}
    try:
        expected = array("d", values)
    except TypeError:
        dist = assembly.distribution_input(quantiles, metrics)
        assert list(dist.metrics) == ["input_bytes"]
    except (ValueError, OverflowError) as exc:
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            assembly.distribution_input(quantiles, metrics)
        return
    else:
        dist = assembly.distribution_input(quantiles, metrics)
        assert dist.metrics["duration_ms"] == expected
        assert type(dist.metrics["duration_ms"]) is array
        assert list(dist.metrics) == ["duration_ms", "input_bytes"]
    assert dist.quantiles == (0.0, 0.5, 1.0)
