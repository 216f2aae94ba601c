"""The what-if input packs the parsed run and duration quantiles straight into float64 bytes:
the same bytes, and the same errors, as converting each value with float() first."""

from __future__ import annotations

import re
from array import array
from typing import Any

import pytest

from sparkscope.whatif import inputs as wi
from tests.support.floats import FLOAT_SEQUENCES


def _as_before(values: Any) -> bytes:
    return array("d", tuple(map(float, values))).tobytes()


@pytest.mark.parametrize("values", FLOAT_SEQUENCES)
def test_packed_quantiles_convert_as_float(values: Any) -> None:
    try:
        expected = _as_before(values)
    except (TypeError, ValueError, OverflowError) as exc:
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            wi._pack(values)
    else:
        assert wi._pack(values) == expected


def test_empty_or_missing_quantiles_are_none() -> None:
    for metrics in ({}, {"executor_run_time_ms": [], "duration_ms": None}):
        assert wi._raw_dist([0.0, 1.0], metrics) == ((0.0, 1.0), None, None)
    assert wi._pack(None) is None
