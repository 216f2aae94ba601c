"""A Spark setting written with a digit that is not 0-9 ('²', '٣') is no number: the features
ignore it instead of failing the application (str.isdigit takes '²', int does not)."""

from __future__ import annotations

import pytest

from sparkscope.advisor.predict.features import run_features
from sparkscope.whatif.inputs import facts_of


@pytest.mark.parametrize("odd", ["²", "①", "٣"])
def test_odd_digits_in_spark_settings_are_not_numbers(odd: str) -> None:
    props = {("spark", "spark.sql.shuffle.partitions"): odd, ("spark", "spark.executor.cores"): "4"}
    features = run_features({"input_bytes": 1, "num_tasks": 1}, props, [], [])
    assert features.to_json()  # computed, with the default partition count
    facts = facts_of(
        {
            "props": {"spark.dynamicAllocation.maxExecutors": odd},
            "executors": [(False, 4, 0, None)],
            "input_bytes": 0,
            "duration": 1000,
        }
    )
    assert facts.max_executors is None
