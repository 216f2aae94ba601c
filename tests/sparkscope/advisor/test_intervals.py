"""The union of intervals shared by the wait time and the what-if stage plan."""

from __future__ import annotations

import pytest

from sparkscope.advisor.intervals import union_length


@pytest.mark.parametrize(
    ("intervals", "expected"),
    [
        ([], 0),
        ([(0, 10)], 10),
        ([(20, 30), (0, 10)], 20),  # disjoint, unsorted
        ([(0, 10), (5, 15)], 15),  # overlapping
        ([(0, 20), (5, 10)], 20),  # nested
        ([(0, 10), (10, 20)], 20),  # touching
        ([(0, 10), (7, 7), (30, 25)], 10),  # empty and reversed cover nothing
        ([(30, 25), (0, 10)], 10),  # a reversed one first does not open a run
    ],
)
def test_union_length(intervals: list[tuple[int, int]], expected: int) -> None:
    assert union_length(intervals) == expected
